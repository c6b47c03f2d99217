"""The quantization schema of docs/kir.md: Q8_K / Q4_K block records on u8 carriers."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.nodes import Op
from ..typesys import fmt, tensor_text
from . import Args, rule
from .common import Results, expect_result, tensor_of

if TYPE_CHECKING:
    from ..walk import Verifier

_BLOCK_BYTES = {"q8_k": 292, "q4_k": 144}
_QK = 256


@rule("quantize", "dequantize")
def quantization(ctx: Verifier, op: Op, args: Args) -> Results:
    source = tensor_of(ctx, op, args[0], "source")
    if source is None:
        return None
    block = _BLOCK_BYTES[op.keyword_attr("format")]
    encode = op.name == "quantize"
    source_dtype, source_inner, result_dtype, result_inner = \
        ("f32", _QK, "u8", block) if encode else ("u8", block, "f32", _QK)
    if source.rank != 2 or source.dtype != source_dtype or not ctx.same_extent(source.shape[1], source_inner):
        ctx.error("E630", op, f"`{op.name}` takes `{tensor_text(source_dtype, ('B', source_inner))}`, got "
                  f"`{fmt(source)}`", f"reshape to rows of {source_inner}")
        return None
    expect_result(ctx, op, result_dtype, (source.shape[0], result_inner), "E630",
                  f"{op.keyword_attr('format')} blocks are {block} bytes per {_QK} values")
    return None


@rule("quantized_dot")
def quantized_dot(ctx: Verifier, op: Op, args: Args) -> Results:
    lhs, rhs = tensor_of(ctx, op, args[0], "lhs"), tensor_of(ctx, op, args[1], "rhs")
    if lhs is None or rhs is None:
        return None
    for type_, inner, name in ((lhs, _BLOCK_BYTES["q4_k"], "q4_k lhs"), (rhs, _BLOCK_BYTES["q8_k"], "q8_k rhs")):
        if type_.rank != 2 or type_.dtype != "u8" or not ctx.same_extent(type_.shape[1], inner):
            ctx.error("E630", op, f"`quantized_dot` {name} must be tensor<u8, [B, {inner}]>, got `{fmt(type_)}`",
                      "pass whole block records on u8 carriers")
            return None
    if not ctx.same_extent(lhs.shape[0], rhs.shape[0]):
        ctx.error("E630", op, "`quantized_dot` operands have different block counts",
                  "both sides hold the same number B of blocks")
        return None
    expect_result(ctx, op, "f32", (), "E630", "quantized_dot yields an f32 scalar")
    return None
