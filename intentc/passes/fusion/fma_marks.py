"""§5.5: mark `add`/`sub` ops that may become one FMA with a float `mul` operand.

`%s = add %p, %c {fma = lhs}` says: operand `lhs` is a same-dtype float product that a
backend may fuse with this add into one fused multiply-add (a*b+c, c+a*b, a*b-c, c-a*b).
Nothing else changes: the `mul` stays, and every other use of the product still reads the
separately rounded product, so the mark never needs a single-use product. Only the marked
op's own rounding changes, and only where a backend chooses to fuse.

The product must be a plain `mul` in the same block with the add's dtype. Operations with
their own rounding boundaries (the per-record R32 sequence inside `quantize`,
`dequantize` and `quantized_dot`) are whole ops here: their results are already rounded
values, never `mul` products, so no mark ever reaches inside them.
"""
from __future__ import annotations

from ...ir.nodes import Keyword, Op
from ...ir.optable import ops_where
from .common import float_tensor, positions, producer_in_block

SIDES = ("lhs", "rhs")
# The ops that may fuse with a product: those with an `fma` attribute (add, sub).
_FUSABLE = ops_where(lambda op: "fma" in op.attrs)


def mark_fma(block: list[Op | None]) -> int:
    where, marked = positions(block), 0
    for index, op in enumerate(block):
        if op is None or op.name not in _FUSABLE or "fma" in op.attributes:
            continue
        if not float_tensor(op.result_types[0]):
            continue
        for side, operand in zip(SIDES, op.operands):
            found = producer_in_block(operand, block, where, index)
            if found is not None and found[1].name == "mul" and not found[1].attributes:
                block[index] = op.model_copy(update={"attributes": {**op.attributes, "fma": Keyword(name=side)}})
                marked += 1
                break
    return marked
