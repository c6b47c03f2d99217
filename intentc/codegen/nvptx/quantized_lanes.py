"""Quantized rows a lane group (docs/gpu.md, "Quantized rows"): the Q4_K x Q8_K rows of
`quantized_rows.py` with `lanes` lanes a row (1, 2 or 4), 32 / lanes rows a warp, where
both views are contiguous and aligned (else the one-row-a-warp walk's guarded loads).

One row a warp spent most of its instructions summing a block's integers across 32 lanes
(21 shuffles a block): here a lane owns whole sub-block pairs (pair p: qs bytes
32p..32p+31, sub-blocks 2p and 2p+1), pairs lane % lanes, + lanes, ... of every block of its
row, so the integer sums of a block are a lane's own but for a butterfly over its `lanes`.

ggml's aux32[l] sums the members m of each sub-block with m % 8 == l: bytes l, 8+l, 16+l,
24+l of the sub-block's 32 (nibble bytes and Q8_K quants alike). A 4x4 byte transpose
(`prmt`) of words 0, 2, 4, 6 (l = 0..3) and of words 1, 3, 5, 7 (l = 4..7) puts each
l's four bytes in one word on both sides, and `dp4a` sums their products: exact integers,
as every sum before the floats. The float sequence is `quantized_rows.py`'s, on every lane
of the group, in the interpreter's order (separate f32 roundings, no FMA).

The row's blocks are a rolled loop that loads the weights of block t + AHEAD (16-byte
loads: the header and the lane's pairs) while accumulating block t; the Q8_K vector is
read where it is used (the same words in every row of a warp: broadcasts from L1).
"""
from __future__ import annotations

from itertools import pairwise

from llvmlite import ir

from ..llvm.types import F32, I32, I64
from .cta import sreg
from .q4k_words import half, scale_min
from .register_staging import i32, vector_run, view_address, wide
from .warp_rows import WARPS, RowWalk

LANES = 4                 # lanes a row (the plan's default)
LANE_GROUP_RESIDENT = 3   # CTAs an SM must fit (`.minnctapersm`)
AHEAD = 1                 # blocks whose weights are loaded ahead of the one accumulated
PAIRS = 4                 # sub-block pairs a Q4_K block: 32 qs bytes each
NIBBLE_MASK = 0x0F0F0F0F


class LaneGroupRows(RowWalk):
    """The lane-group walk of a `QuantizedRows` plan (`plan.lanes` lanes a row)."""

    def __init__(self, em, plan, fallback):
        super().__init__(em)
        self.plan, self.fallback = plan, fallback
        self.w, self.x, self.y = em.env[plan.w], em.env[plan.x], em.env[plan.y]
        self.lanes = plan.lanes

    def emit(self) -> None:
        em = self.em
        b = em.b
        self.sums = [em.entry_alloca(F32) for _ in range(8)]
        self.sumf = em.entry_alloca(F32)
        aligned = b.and_(wide(em, self.w, 16), wide(em, self.x, 4))
        with b.if_else(aligned) as (vectors, any_view):
            with vectors:
                self._walk()
            with any_view:
                self.fallback()

    def _walk(self) -> None:
        """Warp w of the grid takes rows G·w .. G·w + G - 1 (G = 32 / lanes), then G·warps
        on; lane L works on row G·w + L / lanes (rows past the last repeat the last row's
        work, uniform control flow for the shuffles, and store nothing)."""
        em = self.em
        b = em.b
        group = 32 // self.lanes
        warp = b.add(b.mul(sreg(em, "ctaid.x"), i32(WARPS)), b.udiv(sreg(em, "tid.x"), i32(32)))
        warps = b.mul(sreg(em, "nctaid.x"), i32(WARPS * group))
        rows = self.w.shape[0]

        def row_group(base):
            row = b.add(base, b.zext(b.udiv(self.lane, i32(self.lanes)), I64))
            inside = b.icmp_signed("<", row, rows)
            self._row(b.select(inside, row, b.sub(rows, ir.Constant(I64, 1))), inside)
        em.loop(b.zext(b.mul(warp, i32(group)), I64), rows, row_group, b.zext(warps, I64), name="rows")

    def _row(self, row: ir.Value, inside: ir.Value) -> None:
        em = self.em
        b = em.b
        for slot in (*self.sums, self.sumf):
            b.store(ir.Constant(F32, 0.0), slot)
        blocks = self.w.shape[1]
        words = 4 + 8 * (PAIRS // self.lanes)
        queue = [[em.entry_alloca(I32) for _ in range(words)] for _ in range(AHEAD + 1)]

        def trip(block):
            ahead = b.add(block, ir.Constant(I64, AHEAD))
            with b.if_then(b.icmp_signed("<", ahead, blocks)):
                for slot, word in zip(queue[AHEAD], self._weights(row, ahead)):
                    b.store(word, slot)
            with b.if_then(b.icmp_signed(">=", block, ir.Constant(I64, 0))):
                self._accumulate([b.load(slot) for slot in queue[0]], block)
            for older, newer in pairwise(queue):
                for slot, source in zip(older, newer):
                    b.store(b.load(source), slot)
        em.loop(ir.Constant(I64, -AHEAD), blocks, trip, name="block")
        total = b.load(self.sumf)
        for slot in self.sums:                  # sumf + sums[0..7] in lane order
            total = b.fadd(total, b.load(slot))
        first = b.icmp_unsigned("==", b.urem(self.lane, i32(self.lanes)), i32(0))
        with b.if_then(b.and_(inside, first)):
            b.store(total, view_address(em, self.y, (row,)))

    def _pairs(self) -> list:
        """The lane's sub-block pairs (i32): lane % lanes, + lanes, ..."""
        b = self.em.b
        first = b.urem(self.lane, i32(self.lanes))
        return [b.add(first, i32(k * self.lanes)) for k in range(PAIRS // self.lanes)]

    def _weights(self, row: ir.Value, block: ir.Value) -> list:
        """The block's 16 header bytes (d, dmin, the 12 scale bytes) and the lane's pairs'
        32 qs bytes each, as 16-byte loads."""
        em = self.em
        b = em.b
        words = vector_run(em, self.w, (row, block, ir.Constant(I64, 0)), 16)
        for pair in self._pairs():
            start = b.zext(b.add(i32(16), b.mul(pair, i32(32))), I64)
            words += vector_run(em, self.w, (row, block, start), 32)
        return words

    def _x_word(self, block: ir.Value, offset: ir.Value) -> ir.Value:
        return vector_run(self.em, self.x, (block, self.em.b.zext(offset, I64)), 4)[0]

    def _accumulate(self, words: list, block: ir.Value) -> None:
        """One block's contribution: the lane's integer sums over its pairs, summed over
        the group's lanes, then the reference's float sequence."""
        b = self.em.b
        header, scales = words[0], words[1:4]
        aux = [i32(0)] * 8
        sumi = i32(0)
        for k, pair in enumerate(self._pairs()):
            nibbles = words[4 + 8 * k: 12 + 8 * k]
            by_member = _transpose(b, nibbles[0::2]) + _transpose(b, nibbles[1::2])
            for high, sub in enumerate((b.mul(pair, i32(2)), b.add(b.mul(pair, i32(2)), i32(1)))):
                scale, minimum = scale_min(b, scales, sub)
                start = b.add(i32(4), b.mul(sub, i32(32)))
                quants = [self._x_word(block, b.add(start, i32(4 * i))) for i in range(8)]
                q_by_member = _transpose(b, quants[0::2]) + _transpose(b, quants[1::2])
                for member, (a, q) in enumerate(zip(by_member, q_by_member)):
                    levels = b.and_(b.lshr(a, i32(4)) if high else a, i32(NIBBLE_MASK))
                    aux[member] = b.add(aux[member], b.mul(scale, _dp4a(b, levels, q)))
                # bsums[2·sub] + bsums[2·sub + 1] (one 32-bit word), times the sub-block's min
                pair_sums = self._x_word(block, b.add(i32(4 + 256), b.mul(sub, i32(4))))
                low = b.ashr(b.shl(pair_sums, i32(16)), i32(16))
                sumi = b.add(sumi, b.mul(b.add(low, b.ashr(pair_sums, i32(16))), minimum))
        deltas = tuple(1 << k for k in range(self.lanes.bit_length() - 1))
        aux = [self.butterfly_sum(value, deltas, b.add) for value in aux]
        sumi = self.butterfly_sum(sumi, deltas, b.add)
        d8 = b.bitcast(self._x_word(block, i32(0)), F32)
        d, dmin = b.fmul(half(b, header, 0), d8), b.fmul(half(b, header, 1), d8)
        for slot, value in zip(self.sums, aux):
            b.store(b.fadd(b.load(slot), b.fmul(d, b.sitofp(value, F32))), slot)
        b.store(b.fsub(b.load(self.sumf), b.fmul(dmin, b.sitofp(sumi, F32))), self.sumf)


def _prmt(b: ir.IRBuilder, low: ir.Value, high: ir.Value, selector: int) -> ir.Value:
    """PTX `prmt.b32`: bytes of (high:low) picked by the selector's nibbles, first byte first."""
    return b.asm(ir.FunctionType(I32, [I32, I32]), f"prmt.b32 $0, $1, $2, {selector:#06x};", "=r,r,r",
                 [low, high], side_effect=False)


def _transpose(b: ir.IRBuilder, words: list) -> list:
    """The 4x4 byte transpose: word t of the result holds byte t of each word, in order."""
    a, c, e, g = words
    ac_low, ac_high = _prmt(b, a, c, 0x5140), _prmt(b, a, c, 0x7362)    # a0 c0 a1 c1, a2 c2 a3 c3
    eg_low, eg_high = _prmt(b, e, g, 0x5140), _prmt(b, e, g, 0x7362)
    return [_prmt(b, ac_low, eg_low, 0x5410), _prmt(b, ac_low, eg_low, 0x7632),
            _prmt(b, ac_high, eg_high, 0x5410), _prmt(b, ac_high, eg_high, 0x7632)]


def _dp4a(b: ir.IRBuilder, levels: ir.Value, quants: ir.Value) -> ir.Value:
    """The sum of the four byte products: unsigned 4-bit levels times signed 8-bit quants."""
    return b.asm(ir.FunctionType(I32, [I32, I32]), "dp4a.u32.s32 $0, $1, $2, 0;", "=r,r,r", [levels, quants],
                 side_effect=False)
