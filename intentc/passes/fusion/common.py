"""What the fusion rules share: the facts about one kernel they consult, and block edits."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TypeGuard

from ...ir.dtypes import is_float
from ...ir.nodes import Op
from ...ir.optable import ops_where
from ...ir.types import TensorType

# Contractions, whose zero-initial form §5.3 lets absorb a following add.
CONTRACTIONS = ops_where(lambda op: op.contraction)


@dataclass
class ItemFacts:
    """Definitions and use counts of one kernel or helper, taken before the rules run."""
    defs: dict[str, Op]
    uses: Counter


def float_tensor(type_: object) -> TypeGuard[TensorType]:
    return isinstance(type_, TensorType) and is_float(type_.dtype)


def producer_in_block(name: str, ops: list[Op | None], position: dict[str, int],
                      before: int) -> tuple[int, Op] | None:
    """The index and op of this block (earlier than `before`) defining `name`, if any."""
    index = position.get(name)
    if index is None or index >= before:
        return None
    op = ops[index]
    return None if op is None else (index, op)


def positions(ops: list[Op | None]) -> dict[str, int]:
    return {name: index for index, op in enumerate(ops) if op is not None for name in op.results}


def merged_comments(*ops: Op) -> tuple[str, ...]:
    return tuple(c for op in ops for c in op.comments)
