"""Q4_K block fields from the little-endian 32-bit words a thread loaded of a block
(docs/kir.md's quantization schema; ggml's `get_scale_min_k4`), and PTX's byte permute."""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import F32, I32
from .register_staging import i32


def half(b: ir.IRBuilder, word: ir.Value, index: int) -> ir.Value:
    bits = b.trunc(b.lshr(word, i32(16 * index)), ir.IntType(16))
    return b.fpext(b.bitcast(bits, ir.HalfType()), F32)


def pair_scales_mins(b: ir.IRBuilder, words: list, pair: ir.Value) -> tuple:
    """get_scale_min_k4 of sub-blocks 2·pair and 2·pair + 1 (pair: i32, 0..3) from the 12
    scale bytes S (3 words) at once: ((scale, min) of 2·pair, (scale, min) of 2·pair + 1).
    Two `prmt` gather bytes i, i + 1 (i = 2·(pair % 2)) of S[0..3] and S[4..7], and of
    S[8..11] twice; pairs 0, 1 take 6 bits of the first word, pairs 2, 3 combine the low or
    high nibble of S[8 + i] with the top 2 bits of S[i] or S[4 + i], four bytes at a time."""
    odd = b.icmp_unsigned("!=", b.and_(pair, i32(1)), i32(0))
    low_high = prmt(b, words[0], words[1], b.select(odd, i32(0x7632), i32(0x5410)))   # S[i], S[i+1], S[4+i], S[5+i]
    tops = prmt(b, words[2], words[2], b.select(odd, i32(0x3232), i32(0x1010)))       # S[8+i], S[9+i] twice
    six_bits = b.and_(low_high, i32(0x3F3F3F3F))
    nibbles = b.or_(b.and_(tops, i32(0x00000F0F)), b.and_(b.lshr(tops, i32(4)), i32(0x0F0F0000)))
    combined = b.or_(nibbles, b.and_(b.lshr(low_high, i32(2)), i32(0x30303030)))
    packed = b.select(b.icmp_unsigned("<", pair, i32(2)), six_bits, combined)
    scale_first, scale_second, min_first, min_second = (
        b.and_(b.lshr(packed, i32(8 * k)), i32(255)) for k in range(4))
    return (scale_first, min_first), (scale_second, min_second)


def prmt(b: ir.IRBuilder, low: ir.Value, high: ir.Value, selector: ir.Value | int) -> ir.Value:
    """PTX `prmt.b32`: bytes of (high:low) picked by the selector's nibbles, first byte first
    (an int selector: an immediate)."""
    if isinstance(selector, int):
        return b.asm(ir.FunctionType(I32, [I32, I32]), f"prmt.b32 $0, $1, $2, {selector:#06x};", "=r,r,r",
                     [low, high], side_effect=False)
    return b.asm(ir.FunctionType(I32, [I32, I32, I32]), "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r",
                 [low, high, selector], side_effect=False)
