"""Structured contractions of §7: microscaling (scaled) and structured-sparse contract."""
from ..optable import AttrSpec, OpDef, register
from .contraction import ACC_REQUIRED

register(__name__,
    OpDef("scaled_contract", "§7", "microscaling contract: lhs [M,G,C]/[M,G] x rhs [G,C,N]/[N,G]",
          operands=("lhs", "lhs_scale", "rhs", "rhs_scale"),
          attrs={"format": AttrSpec("keyword", required=True, choices=("e2m1", "e4m3")),
                 "group_size": AttrSpec("int", required=True), "acc": ACC_REQUIRED},
          example="%c = scaled_contract %a, %as, %b, %bs {acc = f32, format = e2m1, group_size = 32} : tensor<f32, [%M, %N]>"),
    OpDef("sparse_contract", "§7", "structured-sparse contract: compressed lhs [M, K/r] with logical-position metadata",
          operands=("lhs", "metadata", "rhs"),
          attrs={"pattern": AttrSpec("keyword", required=True, choices=("one_of_two", "two_of_four")),
                 "acc": ACC_REQUIRED},
          example="%c = sparse_contract %a, %meta, %b {acc = f32, pattern = two_of_four} : tensor<f32, [%M, %N]>"),
)
