"""Constants and conversions (spec §3, §5.2)."""
from ..optable import AttrSpec, OpDef, register
from .pointwise import POINTWISE

register(
    OpDef("constant", "§3", "a typed literal, instantiated in the result dtype",
          attrs={"value": AttrSpec("number", required=True, doc="bool, int, float, inf, nan or an enum member")},
          example="%c = constant {value = 1.5} : f32", **POINTWISE),
    OpDef("cast", "§5.2", "numeric conversion: int wrap, RNE to float, truncation to int",
          operands=("source",), example="%r = cast %x : tensor<f32, [%N]>", **POINTWISE),
    OpDef("saturating_cast", "§5.2", "numeric conversion that clamps to the result range",
          operands=("source",), example="%r = saturating_cast %x : tensor<f8e4m3fn, [%N]>", **POINTWISE),
    OpDef("bitcast", "§5.2", "reinterpret bits; total bit width must match",
          operands=("source",), elementwise=True, example="%r = bitcast %x : tensor<u32, [%N]>"),
)
