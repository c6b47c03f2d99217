"""Contractions: contract and its named forms, outer, histogram (spec §3, §5.3, §7)."""
from dataclasses import dataclass

from ..optable import AttrSpec, OpDef, register

ACC_REQUIRED = AttrSpec("type", required=True, doc="explicit accumulator/result dtype (§3)")


def _named(name: str, summary: str, example: str) -> OpDef:
    return OpDef(name, "§3, §5.3", summary, operands=("lhs", "rhs"), groups={"init": "?"},
                 attrs={"acc": ACC_REQUIRED}, contraction=True, example=example)


register(__name__,
    OpDef("contract", "§3, §5.3", "general contraction over paired axes with an explicit accumulator",
          operands=("lhs", "rhs"), groups={"init": "?"},
          attrs={"lhs_contract": AttrSpec("ints", required=True), "rhs_contract": AttrSpec("ints", required=True),
                 "lhs_batch": AttrSpec("ints"), "rhs_batch": AttrSpec("ints"), "acc": ACC_REQUIRED},
          contraction=True, example="%c = contract %a, %b {acc = f32, lhs_contract = [1], rhs_contract = [0]} : tensor<f32, [%M, %N]>"),
    _named("dot", "[K] x [K] -> scalar", "%d = dot %a, %b {acc = f32} : f32"),
    _named("matvec", "[M, K] x [K] -> [M]", "%y = matvec %a, %x {acc = f32} : tensor<f32, [%M]>"),
    _named("vecmat", "[K] x [K, N] -> [N]", "%y = vecmat %x, %b {acc = f32} : tensor<f32, [%N]>"),
    _named("matmul", "[M, K] x [K, N] -> [M, N]", "%c = matmul %a, %b init(%acc) {acc = f32} : tensor<f32, [16, 16]>"),
    OpDef("outer", "§3", "[M] x [N] -> [M, N] by ordinary same-dtype multiplication",
          operands=("lhs", "rhs"), example="%o = outer %a, %b : tensor<f32, [%M, %N]>"),
    OpDef("histogram", "§7", "count of each active value in [0, bins); the result type gives bins and count dtype",
          operands=("values",), groups={"valid": "?"},
          example="%h = histogram %v valid(%m) : tensor<i32, [256]>"),
)

@dataclass(frozen=True)
class NamedForm:
    """A named contraction: the operand ranks and the one axis of each that is contracted."""
    lhs_rank: int
    rhs_rank: int
    lhs_axis: int
    rhs_axis: int


NAMED_FORMS = {"dot": NamedForm(1, 1, 0, 0), "matvec": NamedForm(2, 1, 1, 0), "vecmat": NamedForm(1, 2, 0, 0),
               "matmul": NamedForm(2, 2, 1, 0)}


def contraction_axes(op) -> tuple[list[int], list[int], list[int], list[int]]:
    """(lhs_contract, rhs_contract, lhs_batch, rhs_batch) of `contract` or a named form."""
    form = NAMED_FORMS.get(op.name)
    if form is not None:
        return [form.lhs_axis], [form.rhs_axis], [], []
    attrs = op.attributes
    return (list(attrs["lhs_contract"]), list(attrs["rhs_contract"]),
            list(attrs.get("lhs_batch", ())), list(attrs.get("rhs_batch", ())))
