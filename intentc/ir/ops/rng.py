"""Deterministic counter-based random numbers (spec §12)."""
from ..optable import OpDef, register
from .pointwise import POINTWISE

# Philox is unrolled per coordinate on the GPU: 8 registers a coordinate (docs/gpu.md).
PHILOX_REGISTERS = 8

register(__name__,
    OpDef("random_bits", "§12", "Philox4x32-10 word of a u64 seed and a logical counter; yields u32",
          operands=("seed", "counter"), cta_registers=PHILOX_REGISTERS,
          example="%r = random_bits %seed, %ctr : tensor<u32, [%N]>", **POINTWISE),
    OpDef("uniform", "§12", "f32(random_bits >> 8) * 2^-24, in [0, 1)",
          operands=("seed", "counter"), cta_registers=PHILOX_REGISTERS,
          example="%u = uniform %seed, %ctr : tensor<f32, [%N]>", **POINTWISE),
)
