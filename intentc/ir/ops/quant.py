"""Block quantization (docs/kir.md): Q8_K / Q4_K records on u8 carriers and their dot."""
from ..optable import AttrSpec, OpDef, register

register(__name__,
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
