"""§5.4: a float `mul` feeding only a `reduce {kind = sum}` → one `contract`.

Legal only when all of these hold, else the ops are left exactly as they are:
- the product is a float `mul` whose result has exactly one use: the `reduce`;
- the reduce is the builtin `sum` (identity +0, combine: ordinary same-dtype add); ordered
  loops, `scan`, `generic_reduce` and every other kind are never rewritten;
- the reduce's result dtype equals the product's dtype: the default widening of §3 (f16,
  bf16, f8 summed in f32) is a numeric cast, and the permission does not cross it;
- both ops are in the same block.
The contract pairs the reduced axes of the two factors and keeps every other axis as a
batch axis, in order, so members, result coordinates and dtype are those of the reduce.
"""
from __future__ import annotations

from ...ir.nodes import AttrValue, Op
from ...ir.types import TensorType
from .common import ItemFacts, float_tensor, merged_comments, positions, producer_in_block


def fuse_multiply_reduce(block: list[Op | None], facts: ItemFacts) -> int:
    where, fused = positions(block), 0
    for index, op in enumerate(block):
        if op is None or not _sum_reduce(op):
            continue
        found = producer_in_block(op.operands[0], block, where, index)
        product_type = _fusable_product_type(found[1], op, facts) if found is not None else None
        if found is None or product_type is None:
            continue
        source, product = found
        block[index] = _as_contract(product, op, product_type)
        block[source] = None
        fused += 1
    return fused


def _sum_reduce(op: Op) -> bool:
    return op.name == "reduce" and op.keyword_attr("kind") == "sum"


def _fusable_product_type(product: Op, reduce: Op, facts: ItemFacts) -> TensorType | None:
    """The product's type when the pair may fuse, else None."""
    if product.name != "mul" or product.attributes or facts.uses[product.results[0]] != 1:
        return None
    product_type, result_type = product.result_types[0], reduce.result_types[0]
    if not (float_tensor(product_type) and isinstance(result_type, TensorType)):
        return None
    return product_type if result_type.dtype == product_type.dtype and reduce.int_list_attr("axes") else None


def _as_contract(product: Op, reduce: Op, product_type: TensorType) -> Op:
    reduced = sorted(reduce.int_list_attr("axes"))
    kept = [axis for axis in range(product_type.rank) if axis not in reduced]
    attributes: dict[str, AttrValue] = {"acc": TensorType(dtype=product_type.dtype),
                                        "lhs_contract": list(reduced), "rhs_contract": list(reduced)}
    if kept:
        attributes.update(lhs_batch=list(kept), rhs_batch=list(kept))
    return Op(name="contract", results=reduce.results, operands=product.operands, attributes=attributes,
              result_types=reduce.result_types, comments=merged_comments(product, reduce),
              loc=product.loc or reduce.loc)
