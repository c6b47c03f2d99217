"""§5.3: `contract(A, B) + C` or `C + contract(A, B)` → `contract A, B init(C)`.

Legal only when all of these hold, else the ops are left exactly as they are:
- the contraction (`contract`, `dot`, `matvec`, `vecmat`, `matmul`) has no `init` (a
  non-zero initial value is never re-associated again);
- its result has exactly one use, and that use is the `add` (any other consumer, a second
  add, a `cast` or a shape op in between blocks the fusion);
- C has the contraction's result type, so dtype and element correspondence are the add's
  own (no cast, no projection in between);
- both ops are in the same block.
The fused op takes the add's result name and place; the contraction's operands, paired axes
and accumulator are unchanged.
"""
from __future__ import annotations

from ...ir.nodes import Op, OperandGroup
from .common import CONTRACTIONS, ItemFacts, merged_comments, positions, producer_in_block


def fuse_contract_add(block: list[Op | None], facts: ItemFacts) -> int:
    """Rewrite the block in place; returns how many adds were absorbed."""
    where, fused = positions(block), 0
    for index, op in enumerate(block):
        if op is None or op.name != "add" or op.attributes:
            continue
        for side in (0, 1):
            product, other = op.operands[side], op.operands[1 - side]
            found = producer_in_block(product, block, where, index)
            if found is None or not _absorbable(found[1], op, other, facts):
                continue
            source, contraction = found
            block[index] = contraction.model_copy(update={
                "results": op.results, "result_types": op.result_types,
                "groups": (*contraction.groups, OperandGroup(key="init", values=(other,))),
                "comments": merged_comments(contraction, op), "loc": contraction.loc or op.loc})
            block[source] = None
            fused += 1
            break
    return fused


def _absorbable(contraction: Op, add: Op, other: str, facts: ItemFacts) -> bool:
    return (contraction.name in CONTRACTIONS and contraction.group("init") is None
            and facts.uses[contraction.results[0]] == 1 and other != contraction.results[0]
            and contraction.result_types == add.result_types)
