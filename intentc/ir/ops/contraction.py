"""Contractions: contract and its named forms, scaled and sparse contract (spec §3, §5.3, §7)."""
from ..optable import AttrSpec, OpDef, register

ACC_REQUIRED = AttrSpec("type", required=True, doc="explicit accumulator/result dtype (§3)")


def _named(name: str, summary: str, example: str) -> OpDef:
    return OpDef(name, "§3, §5.3", summary, operands=("lhs", "rhs"), groups={"init": "?"},
                 attrs={"acc": ACC_REQUIRED}, contraction=True, example=example)


register(
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
    OpDef("histogram", "§7", "count of each active value in [0, bins); the result type gives bins and count dtype",
          operands=("values",), groups={"valid": "?"},
          example="%h = histogram %v valid(%m) : tensor<i32, [256]>"),
    OpDef("quantize", "§1 (docs)", "encode f32 rows into Q8_K / Q4_K block records on u8 carriers",
          operands=("source",), attrs={"format": AttrSpec("keyword", required=True, choices=("q4_k", "q8_k"))},
          example="%q = quantize %x {format = q8_k} : tensor<u8, [%B, 292]>"),
    OpDef("dequantize", "§1 (docs)", "decode Q8_K / Q4_K block records to f32",
          operands=("source",), attrs={"format": AttrSpec("keyword", required=True, choices=("q4_k", "q8_k"))},
          example="%x = dequantize %q {format = q4_k} : tensor<f32, [%B, 256]>"),
    OpDef("quantized_dot", "§1 (docs)", "dot of Q4_K blocks with Q8_K blocks, llama.cpp's reference order",
          operands=("lhs", "rhs"),
          attrs={"lhs_format": AttrSpec("keyword", required=True, choices=("q4_k",)),
                 "rhs_format": AttrSpec("keyword", required=True, choices=("q8_k",))},
          example="%d = quantized_dot %a, %b {lhs_format = q4_k, rhs_format = q8_k} : f32"),
)

# The paired axes each named form stands for (lhs axes, rhs axes), with no batch axes.
NAMED_AXES = {"dot": ([0], [0]), "matvec": ([1], [0]), "vecmat": ([0], [0]), "matmul": ([1], [0])}


def contraction_axes(op) -> tuple[list[int], list[int], list[int], list[int]]:
    """(lhs_contract, rhs_contract, lhs_batch, rhs_batch) of `contract` or a named form."""
    if op.name in NAMED_AXES:
        lhs, rhs = NAMED_AXES[op.name]
        return list(lhs), list(rhs), [], []
    attrs = op.attributes
    return (list(attrs["lhs_contract"]), list(attrs["rhs_contract"]),
            list(attrs.get("lhs_batch", ())), list(attrs.get("rhs_batch", ())))
