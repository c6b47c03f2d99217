"""Q4_K and Q8_K block fields from the little-endian 32-bit words a thread loaded of a
block (docs/kir.md's quantization schema; ggml's `get_scale_min_k4`)."""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import F32
from .register_staging import i32


def signed_byte(b: ir.IRBuilder, word: ir.Value, index: int) -> ir.Value:
    return b.ashr(b.shl(word, i32(24 - 8 * index)), i32(24))


def half(b: ir.IRBuilder, word: ir.Value, index: int) -> ir.Value:
    bits = b.trunc(b.lshr(word, i32(16 * index)), ir.IntType(16))
    return b.fpext(b.bitcast(bits, ir.HalfType()), F32)


def _scale_byte(b: ir.IRBuilder, words: list, index: ir.Value) -> ir.Value:
    """Byte `index` (i32, 0..11) of the 12 packed scale bytes."""
    word = b.select(b.icmp_unsigned("<", index, i32(4)), words[0],
                    b.select(b.icmp_unsigned("<", index, i32(8)), words[1], words[2]))
    return b.and_(b.lshr(word, b.mul(b.urem(index, i32(4)), i32(8))), i32(255))


def scale_min(b: ir.IRBuilder, words: list, j: ir.Value) -> tuple:
    """ggml's get_scale_min_k4(j): (scale, min) of sub-block j (i32, 0..7)."""
    low = b.icmp_unsigned("<", j, i32(4))
    here, ahead = _scale_byte(b, words, j), _scale_byte(b, words, b.add(j, i32(4)))
    behind = _scale_byte(b, words, b.sub(j, i32(4)))
    scale = b.select(low, b.and_(here, i32(63)),
                     b.or_(b.and_(ahead, i32(15)), b.shl(b.lshr(behind, i32(6)), i32(4))))
    minimum = b.select(low, b.and_(ahead, i32(63)),
                       b.or_(b.lshr(ahead, i32(4)), b.shl(b.lshr(here, i32(6)), i32(4))))
    return scale, minimum

