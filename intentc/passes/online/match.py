"""Finding a normalized summary (§5.6) in one block:

    %m  = reduce %s {axes = [0], kind = max} : F          maximum of the scores
    %mb = broadcast %m : tensor<F, [N]>
    %d  = sub %s, %mb : tensor<F, [N]>
    %w  = exp %d : tensor<F, [N]>                          exponential weights
    %l  = reduce %w {axes = [0], kind = sum} : F          their sum (mass)
    %o  = vecmat %w, %v {acc = F} : tensor<F, [D]>         weighted contraction (or dot,
                                                           or contract pairing axis 0 with 0)

`%s` is a rank-1 float tensor, every result has dtype F (no widening anywhere), `%mb`, `%d`
and `%w` have no uses outside the pattern, and `%m`, `%l`, `%o` are used (if at all) only
after the last op of the pattern, so one fold placed there can stand in for all three.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ...ir.dtypes import is_float
from ...ir.nodes import Keyword, Op
from ...ir.ops.contraction import contraction_axes
from ...ir.optable import ops_where
from ...ir.types import TensorType
from ..ir_walk import all_uses

_CONTRACTIONS = ops_where(lambda op: op.contraction)


@dataclass
class Summary:
    maximum: int         # index in the block of each pattern op
    broadcast: int
    shift: int
    weights: int
    mass: int
    moment: int

    @property
    def indices(self) -> tuple[int, ...]:
        return (self.maximum, self.broadcast, self.shift, self.weights, self.mass, self.moment)


class BlockUsers:
    """For each name, the block positions whose op (or nested regions) use it."""

    def __init__(self, block: list[Op]):
        self.at: dict[str, list[int]] = defaultdict(list)
        for index, op in enumerate(block):
            for name in set(all_uses(op)):
                self.at[name].append(index)

    def only(self, name: str, uses, wanted: int) -> list[int] | None:
        """The users of `name` when it has exactly `wanted` uses in all, all in this block."""
        found = self.at.get(name, [])
        return found if uses[name] == wanted and len(found) == wanted else None


def find_summaries(block: list[Op], uses) -> list[Summary]:
    users, found, claimed = BlockUsers(block), [], set[int]()
    for index, op in enumerate(block):
        summary = _match_at(block, index, op, users, uses)
        if summary is not None and not claimed & set(summary.indices):
            claimed.update(summary.indices)
            found.append(summary)
    return found


def _reduce_of(op: Op, kind: str) -> bool:
    value = op.attributes.get("kind")
    return (op.name == "reduce" and isinstance(value, Keyword) and value.name == kind
            and op.attributes.get("axes") == [0] and "acc" not in op.attributes)


def _match_at(block, index, op, users: BlockUsers, uses) -> Summary | None:
    if not _reduce_of(op, "max"):
        return None
    scores = op.operands[0]
    dtype = op.result_types[0].dtype
    maximum = op.results[0]
    broadcast = _single_user(block, users.at.get(maximum, []), "broadcast")
    if broadcast is None or users.only(block[broadcast].results[0], uses, 1) is None:
        return None
    (shift,) = users.at[block[broadcast].results[0]]
    if block[shift].name != "sub" or block[shift].operands != (scores, block[broadcast].results[0]):
        return None
    shift_users = users.only(block[shift].results[0], uses, 1)
    if shift_users is None or block[shift_users[0]].name != "exp":
        return None
    weights = shift_users[0]
    weight_users = users.only(block[weights].results[0], uses, 2)
    if weight_users is None:
        return None
    mass = next((i for i in weight_users if _reduce_of(block[i], "sum")), None)
    moment = next((i for i in weight_users if _weighted_contraction(block[i], block[weights].results[0])), None)
    if mass is None or moment is None:
        return None
    if block[mass].result_types[0].dtype != dtype or block[moment].attributes["acc"].dtype != dtype:
        return None
    summary = Summary(index, broadcast, shift, weights, mass, moment)
    if not _scores_ok(op) or not _uses_after(summary, block, users):
        return None
    return summary


def _single_user(block, positions: list[int], name: str) -> int | None:
    matches = [i for i in positions if block[i].name == name]
    return matches[0] if len(matches) == 1 else None


def _weighted_contraction(op: Op, weights: str) -> bool:
    """`op` sums `weights` (its lhs) times the rhs over the weights' only axis and the rhs's first."""
    if op.name not in _CONTRACTIONS or op.operands[0] != weights or op.group("init") is not None:
        return False
    return contraction_axes(op) == ([0], [0], [], [])


def _scores_ok(op: Op) -> bool:
    type_ = op.result_types[0]
    return isinstance(type_, TensorType) and type_.shape == () and is_float(type_.dtype) and type_.dtype in ("f32", "f64")


def _uses_after(summary: Summary, block: list[Op], users: BlockUsers) -> bool:
    """Every use of the maximum, mass and moment outside the pattern comes after it."""
    last, inside = max(summary.indices), set(summary.indices)
    for index in (summary.maximum, summary.mass, summary.moment):
        for user in users.at.get(block[index].results[0], []):
            if user not in inside and user <= last:
                return False
    return True
