"""Decoders for the microscaling encodings of spec §7, usable on their own."""
from ..optable import OpDef, register

register(
    OpDef("decode_e2m1", "§7", "decode the low nibble of each u8 as an e2m1 value to f32",
          operands=("source",), elementwise=True, example="%v = decode_e2m1 %nib : tensor<f32, [%N]>"),
    OpDef("decode_e8m0", "§7", "decode a u8 e8m0 scale to f32 (code 255 is NaN)",
          operands=("source",), elementwise=True, example="%s = decode_e8m0 %code : tensor<f32, [%N]>"),
)
