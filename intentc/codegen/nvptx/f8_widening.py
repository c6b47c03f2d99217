"""Exact widening of 8-bit floats to f16 for the f16 wgmma (`wgmma_tma.py`'s converters;
docs/gpu.md, "8-bit operands"). Every e4m3 and e5m2 value is an f16, so each widening below
is exact; they differ in which of the SM's pipes they use:

- "cvt": `cvt.rn.f16x2.e4m3x2` / `.e5m2x2`, one conversion instruction a pair (the
  conversion pipe: if it runs at the CUDA guide's rate for most type conversions, 16 a
  clock an SM against 64 integer operations — not yet measured for this one).
- "bits": integer operations. An e5m2 is the high byte of the f16 with the same value, so
  a byte permute (`prmt`) widens two pairs at once. An e4m3 `s eeee mmm` becomes the f16
  `s 0eeee mmm0000000` (its value times 2^-8: the exponent bias is 15, not 7; e4m3
  subnormals land on f16 subnormals with the same digits), multiplied by 2^8 in f16x2
  (exact, no flush: `mul.rn.f16x2`); the only magnitude that is not a number, `1111 111`,
  first gets an exponent of all ones (an f16 NaN) by an addition that carries into bit 14
  only there.
- "mixed": "cvt" and "bits" for alternate words, so both pipes share the work.
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import I32
from .ptx_asm import asm
from .tma_asm import F8_PAIRS, byte_permute, f16_pair_of_f8_pair

WIDENINGS = ("cvt", "bits", "mixed")
LOW_PAIR, HIGH_PAIR = 0x1404, 0x3424    # prmt: bytes 0, 1 (2, 3) of a word as the high bytes of two halves


def f16_pairs_of_f8_words(b: ir.IRBuilder, words: list, dtype: str, widening: str) -> list:
    """Four 8-bit floats a b32 word (the lowest byte first) as two b32 of f16 pairs a word
    (the low half first), in order, exactly; "mixed" takes "cvt" and "bits" for alternate
    words. Every word's pairs are picked out before any is widened."""
    methods = ("cvt", "bits") if widening == "mixed" else (widening,)
    chosen = [methods[index % len(methods)] for index in range(len(words))]
    picked = [_pairs_of_word(b, word, method) for word, method in zip(words, chosen)]
    return [_widened(b, pair, dtype, method) for pairs, method in zip(picked, chosen) for pair in pairs]


def _pairs_of_word(b: ir.IRBuilder, word: ir.Value, method: str) -> list:
    """A word's two pairs of 8-bit floats: as i16 ("cvt"), or in the high bytes of the
    halves of a b32 ("bits")."""
    if method == "cvt":
        return [b.trunc(b.lshr(word, ir.Constant(I32, shift)), ir.IntType(16)) for shift in (0, 16)]
    zero = ir.Constant(I32, 0)
    return [byte_permute(b, word, zero, selector) for selector in (LOW_PAIR, HIGH_PAIR)]


def _widened(b: ir.IRBuilder, pair: ir.Value, dtype: str, method: str) -> ir.Value:
    """A pair as picked by `_pairs_of_word`, as a b32 of two f16."""
    assert dtype in F8_PAIRS, dtype
    if method == "cvt":
        return f16_pair_of_f8_pair(b, pair, dtype)
    return pair if dtype == "f8e5m2" else _f16_pair_of_e4m3_high_bytes(b, pair)


# e4m3 in the high byte of each half of a b32, shifted right once: its 7 magnitude bits at 13..7
E4M3_MAGNITUDES = 0x3F803F80
NAN_CARRY = 0x00800080      # carries into bit 14 from magnitude 1111 111 (e4m3's NaN) only
NAN_EXPONENTS = 0x40004000
SIGNS = 0x80008000
SCALE_UP = 0x5C005C00       # 2^8 in both halves (f16)


def _f16_pair_of_e4m3_high_bytes(b: ir.IRBuilder, pair: ir.Value) -> ir.Value:
    """Two e4m3 in the high bytes of a b32's halves as two f16 (see the module's doc)."""
    return asm(b, f"{{ .reg .b32 k; mov.b32 k, {SCALE_UP:#x}; mul.rn.f16x2 $0, $1, k; }}", "=r,r", I32,
               [e4m3_pair_scaled_down(b, pair)])


def e4m3_pair_scaled_down(b: ir.IRBuilder, pair: ir.Value) -> ir.Value:
    """Two e4m3 in the high bytes of a b32's halves as the two f16 of 2^-8 times their values
    (NaN stays NaN)."""
    def const(value):
        return ir.Constant(I32, value)
    magnitude = b.and_(b.lshr(pair, const(1)), const(E4M3_MAGNITUDES))
    not_a_number = b.and_(b.add(magnitude, const(NAN_CARRY)), const(NAN_EXPONENTS))
    return b.or_(b.or_(magnitude, not_a_number), b.and_(pair, const(SIGNS)))


# ---- A widened in the consumers' registers (`TmaPlan.registers_a`) ---------------------------
# The register form of the f16 wgmma (m64nNk16) gives lane l of a warp, for row g = l / 4 of
# its 16 and t = l mod 4, the K slots 2t, 2t + 1 and 2t + 8, 2t + 9 of each k16 step (rows g
# and g + 8: four b32 of f16 pairs). Raw K element 16t + 4s + q of a K tile of 64 goes to
# step s, slot 2t + q (q < 2) or 2t + 6 + q: a lane's 16 raw bytes of a row are then its
# slots of all four steps, one 16-byte load. B's raw K rows are written to the same slots
# (`permuted_k_row`): the products pair up as before and only their order within the tile's
# sum changes (the MMA's summation order is the hardware's anyway, §6).
A_STEPS = 4     # k16 steps of a K tile of 64


def permuted_k_row(b: ir.IRBuilder, k: ir.Value) -> ir.Value:
    """The K row (0..63, i32) of B's staged tile that holds raw K row `k`."""
    def const(value):
        return ir.Constant(I32, value)
    t, step, q = b.lshr(k, const(4)), b.and_(b.lshr(k, const(2)), const(3)), b.and_(k, const(3))
    slot = b.add(b.add(b.shl(t, const(1)), b.and_(q, const(1))), b.shl(b.lshr(q, const(1)), const(3)))
    return b.add(b.shl(step, const(4)), slot)


def a_fragments(b: ir.IRBuilder, rows: list, dtype: str, widening: str) -> list:
    """The register A operand of each k16 step (four b32) from a lane's 16 raw bytes of rows
    g and g + 8 (`rows`: four b32 each, the k-th holding step k's slots)."""
    steps = []
    for step in range(A_STEPS):
        low_g, high_g, low_g8, high_g8 = f16_pairs_of_f8_words(b, [row[step] for row in rows], dtype, widening)
        steps.append([low_g, low_g8, high_g, high_g8])
    return steps
