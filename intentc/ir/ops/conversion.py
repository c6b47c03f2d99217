"""Constants, conversions and the microscaling decoders (spec §3, §5.2, §7)."""
from ..optable import AttrSpec, OpDef, register
from .pointwise import POINTWISE

register(__name__,
    OpDef("constant", "§3", "a typed literal, instantiated in the result dtype",
          attrs={"value": AttrSpec("number", required=True, doc="bool, int, float, inf, nan or an enum member")},
          example="%c = constant {value = 1.5} : f32", **POINTWISE),
    OpDef("cast", "§5.2", "numeric conversion: int wrap, RNE to float, truncation to int",
          operands=("source",), identity_at_same_type=True, fresh_nan=True, example="%r = cast %x : tensor<f32, [%N]>", **POINTWISE),
    OpDef("saturating_cast", "§5.2", "numeric conversion that clamps to the result range",
          operands=("source",), identity_at_same_type=True, fresh_nan=True,
          example="%r = saturating_cast %x : tensor<f8e4m3fn, [%N]>", **POINTWISE),
    OpDef("bitcast", "§5.2", "reinterpret bits; total bit width must match",
          operands=("source",), identity_at_same_type=True,
          example="%r = bitcast %x : tensor<u32, [%N]>", **POINTWISE),
)

# Decoders of the microscaling encodings of §7, usable on their own.
register(__name__,
    OpDef("decode_e2m1", "§7", "decode the low nibble of each u8 as an e2m1 value to f32",
          operands=("source",), elementwise=True, example="%v = decode_e2m1 %nib : tensor<f32, [%N]>"),
    OpDef("decode_e8m0", "§7", "decode a u8 e8m0 scale to f32 (code 255 is NaN)",
          operands=("source",), elementwise=True, example="%s = decode_e8m0 %code : tensor<f32, [%N]>"),
)
