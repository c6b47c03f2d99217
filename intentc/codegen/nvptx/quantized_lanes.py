"""Quantized rows a lane group (docs/gpu.md, "Quantized rows"): the Q4_K x Q8_K rows of
`quantized_rows.py` with `lanes` lanes a row (1, 2 or 4), 32 / lanes rows a warp.

One row a warp spent most of its instructions summing a block's integers across 32 lanes
(21 shuffles a block): here a lane owns whole sub-block pairs (pair p: qs bytes
32p..32p+31, sub-blocks 2p and 2p+1), pairs lane % lanes, + lanes, ... of every block of its
row, so the integer sums of a block are a lane's own but for a reduce-scatter over its
`lanes` (lane q of a group ends with members q·kept .. of aux32, kept = 8 / lanes, and keeps
their float `sums`; all lanes keep `sumf`; the row's end gathers sums[0..7] in order).

ggml's aux32[l] sums the members m of each sub-block with m % 8 == l: bytes l, 8+l, 16+l,
24+l of the sub-block's 32 (nibble bytes and Q8_K quants alike). A 4x4 byte transpose
(`prmt`) of words 0, 2, 4, 6 (l = 0..3) and of words 1, 3, 5, 7 (l = 4..7) puts each
l's four bytes in one word on both sides, and `dp4a` sums their products: exact integers,
as every sum before the floats. The floats are the reference's, in the interpreter's order
(d = d4·d8, dmin = dmin4·d8, sums[l] += d·aux32[l], sumf -= dmin·sumi a block, then sumf +
sums[0..7] in lane order; separate f32 roundings, no FMA across them, §5.5): each sums[l] in
the lane that keeps it, sumf in every lane of the group.

The Q8_K side is the same for every row: where the plan stages it (`staged_blocks`), each
CTA writes it once to shared memory already transposed; else each lane loads and
transposes its words every block. The row's blocks are a rolled loop that loads the
weights of block t + AHEAD (16-byte loads: the header and the lane's pairs, where the view
allows; else byte by byte) while accumulating block t.
"""
from __future__ import annotations

from itertools import pairwise

from llvmlite import ir

from ..llvm.types import F32, I32, I64
from .cta import barrier, shared_array, sreg
from .q4k_words import half, pair_scales_mins, prmt
from .register_staging import i32, view_address, wide
from .warp_rows import WARPS, RowWalk

LANES = 4                 # lanes a row (the plan's default)
# CTAs an SM must fit (`.minnctapersm`): 64 registers with the Q8_K vector staged (no spills;
# R = 32768 is 512 CTAs of 64 rows, one wave on 132 SMs), 80 where each lane transposes it
RESIDENT_STAGED, RESIDENT_UNSTAGED = 4, 3
AHEAD = 1                 # blocks whose weights are loaded ahead of the one accumulated
SCATTER = True            # each lane of a group keeps 8 / lanes of aux32's sums (a reduce-scatter), not all 8
PAIRS = 4                 # sub-block pairs a Q4_K block: 32 qs bytes each
NIBBLE_MASK = 0x0F0F0F0F
STAGED_BYTES = 24 * 1024  # the most shared memory a CTA stages the Q8_K vector in
# a staged Q8_K block, in 32-bit words: word 8s + l holds sub-block s's quants l, 8+l, 16+l,
# 24+l (the transposed order of the Q4_K side), word 64 + s bsums[2s] + bsums[2s+1], word 72
# the f32 d, then 3 words of padding (16-byte aligned blocks for the vector loads)
STAGED_WORDS = 76
STAGED_SUMS, STAGED_D = 64, 72


def lane_groups_scatter() -> bool:
    return SCATTER


def lane_group_resident(staged: bool) -> int:
    return RESIDENT_STAGED if staged else RESIDENT_UNSTAGED


def staged_blocks(blocks, known: dict | None) -> int:
    """The Q8_K blocks a CTA stages in shared memory: all of them where their count is known
    at compile time and fits STAGED_BYTES, else 0 (the vector is read from global memory)."""
    count = blocks if isinstance(blocks, int) else (known or {}).get(blocks)
    return count if count and count * STAGED_WORDS * 4 <= STAGED_BYTES else 0


class LaneGroupRows(RowWalk):
    """The lane-group walk of a `QuantizedRows` plan (`plan.lanes` lanes a row)."""

    def __init__(self, em, plan):
        super().__init__(em)
        self.plan = plan
        self.w, self.x, self.y = em.env[plan.w], em.env[plan.x], em.env[plan.y]
        self.lanes = plan.lanes
        self.pair_count = PAIRS // plan.lanes

    def emit(self) -> None:
        """A CTA with rows (the grid holds more CTAs than some row counts need) stages the
        Q8_K vector where the plan says so, then walks its rows."""
        em = self.em
        b = em.b
        self.kept = 8 // self.lanes if self.plan.scatter else 8      # the members of aux32 whose `sums` a lane keeps
        self.sums = [em.entry_alloca(F32) for _ in range(self.kept)]
        self.sumf = em.entry_alloca(F32)
        group = 32 // self.lanes
        rows = self.w.shape[0]
        first_row = b.zext(b.mul(sreg(em, "ctaid.x"), i32(WARPS * group)), I64)
        with b.if_then(b.icmp_signed("<", first_row, rows)):
            self.staged = self._stage_activations() if self.plan.staged_blocks else None
            self.aligned = wide(em, self.w, 16) if self.staged else b.and_(wide(em, self.w, 16), wide(em, self.x, 4))
            self._walk(group, rows)

    def _walk(self, group: int, rows: ir.Value) -> None:
        em = self.em
        b = em.b
        warp = b.add(b.mul(sreg(em, "ctaid.x"), i32(WARPS)), b.udiv(sreg(em, "tid.x"), i32(32)))
        warps = b.mul(sreg(em, "nctaid.x"), i32(WARPS * group))

        def row_group(base):
            """Warp w of the grid takes rows G·w .. G·w + G - 1 (G = 32 / lanes), then
            G·warps on; lane L works on row G·w + L / lanes (rows past the last repeat
            the last row's work, uniform control flow for the shuffles, and store nothing)."""
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
        queue = [[em.entry_alloca(I32) for _ in range(4 + 8 * self.pair_count)] for _ in range(AHEAD + 1)]

        def trip(block):
            ahead = b.add(block, ir.Constant(I64, AHEAD))
            with b.if_then(b.icmp_signed("<", ahead, blocks)):
                for slot, word in zip(queue[AHEAD], self._weights(row, ahead)):
                    b.store(word, slot)
            with b.if_then(b.icmp_signed(">=", block, ir.Constant(I64, 0))):
                self._accumulate([b.load(slot) for slot in queue[0]], self._activations(block))
            for older, newer in pairwise(queue):
                for slot, source in zip(older, newer):
                    b.store(b.load(source), slot)
        em.loop(ir.Constant(I64, -AHEAD), blocks, trip, name="block")
        total = b.load(self.sumf)
        for member in range(8):                 # sumf + sums[0..7] in lane order
            total = b.fadd(total, self._sum_of(member))
        first = b.icmp_unsigned("==", b.urem(self.lane, i32(self.lanes)), i32(0))
        with b.if_then(b.and_(inside, first)):
            b.store(total, view_address(em, self.y, (row,)))

    def _pair(self, k: ir.Value) -> ir.Value:
        """The lane's k-th sub-block pair (i32): lane % lanes + k·lanes."""
        b = self.em.b
        return b.add(b.urem(self.lane, i32(self.lanes)), b.mul(k, i32(self.lanes)))

    def _weights(self, row: ir.Value, block: ir.Value) -> list:
        """The block's 16 header bytes (d, dmin, the 12 scale bytes), then the lane's pairs'
        32 qs bytes each: word i at byte 4i (i < 4), else 16 + 32·pair((i-4)/8) + 4·((i-4)%8)."""
        b = self.em.b

        def offset(i):
            rest = b.sub(i, i32(4))
            qs = b.add(b.add(i32(16), b.mul(self._pair(b.udiv(rest, i32(8))), i32(32))),
                       b.mul(b.urem(rest, i32(8)), i32(4)))
            return b.select(b.icmp_unsigned("<", i, i32(4)), b.mul(i, i32(4)), qs)
        runs = [(i32(0), [(0, 16)])] + [(offset(i32(4 + 8 * k)), [(0, 16), (16, 16)]) for k in range(self.pair_count)]
        return self._words(self.w, (row, block), runs, offset)

    def _activations(self, block: ir.Value) -> dict:
        """What the lane's pairs use of the block's Q8_K record: for pair k and its sub-blocks
        s = 2·pair, 2·pair + 1 in turn (group 2k + high), `members`: 8 words, member l's
        quants l, 8+l, 16+l, 24+l in one; `sums`: bsums[2s] + bsums[2s + 1]; and `d` (f32)."""
        if self.staged is not None:
            return self._staged_activations(block)
        b = self.em.b
        words = self._global_activations(block)
        members, sums = [], []
        for group in range(2 * self.pair_count):
            quants, pair_sums = words[9 * group: 9 * group + 8], words[9 * group + 8]
            members.append(_transpose(b, quants[0::2]) + _transpose(b, quants[1::2]))
            sums.append(b.add(b.ashr(b.shl(pair_sums, i32(16)), i32(16)), b.ashr(pair_sums, i32(16))))
        return {"members": members, "sums": sums, "d": b.bitcast(words[-1], F32)}

    def _stage_activations(self) -> ir.Value:
        """The whole Q8_K vector in the CTA's shared memory (STAGED_WORDS a block), its
        words gathered byte by byte from any view by all threads, then a barrier: once a
        CTA, where each warp transposed every block's quants for every row otherwise."""
        em = self.em
        b = em.b
        count = self.plan.staged_blocks * STAGED_WORDS
        array = shared_array(em, "i32", count, 16).ptr

        def word(index):
            block = b.udiv(index, ir.Constant(I64, STAGED_WORDS))
            k = b.trunc(b.urem(index, ir.Constant(I64, STAGED_WORDS)), I32)
            quant, pair_sum = b.icmp_unsigned("<", k, i32(STAGED_SUMS)), b.icmp_unsigned("<", k, i32(STAGED_D))
            quant_at = b.add(b.add(i32(4), b.mul(b.udiv(k, i32(8)), i32(32))), b.urem(k, i32(8)))
            sums_at = b.add(i32(4 + 256), b.mul(b.sub(k, i32(STAGED_SUMS)), i32(4)))
            start = b.zext(b.select(quant, quant_at, b.select(pair_sum, sums_at, i32(0))), I64)
            step = b.zext(b.select(quant, i32(8), i32(1)), I64)
            value = i32(0)
            for c in range(4):
                here = view_address(em, self.x, (block, b.add(start, b.mul(step, ir.Constant(I64, c)))))
                value = b.or_(value, b.shl(b.zext(b.load(here), I32), i32(8 * c)))
            summed = b.add(b.ashr(b.shl(value, i32(16)), i32(16)), b.ashr(value, i32(16)))
            b.store(b.select(b.and_(pair_sum, b.not_(quant)), summed, value), b.gep(array, [index]))
        em.loop(b.zext(sreg(em, "tid.x"), I64), ir.Constant(I64, count), word, ir.Constant(I64, self.plan.threads),
                name="stage")
        barrier(em)
        return array

    def _staged_activations(self, block: ir.Value) -> dict:
        em = self.em
        b = em.b
        base = b.gep(self.staged, [b.mul(block, ir.Constant(I64, STAGED_WORDS))])
        members, sums = [], []
        for k in range(self.pair_count):
            first = b.zext(b.mul(self._pair(i32(k)), i32(2)), I64)       # the pair's first sub-block
            quants = _vector_words(b, b.gep(base, [b.mul(first, ir.Constant(I64, 8))]), [(0, 16), (16, 16), (32, 16), (48, 16)])
            members += [quants[0:8], quants[8:16]]
            sums += _vector_words(b, b.gep(base, [b.add(first, ir.Constant(I64, STAGED_SUMS))]), [(0, 8)])
        d = _vector_words(b, b.gep(base, [ir.Constant(I64, STAGED_D)]), [(0, 4)])[0]
        return {"members": members, "sums": sums, "d": b.bitcast(d, F32)}

    def _global_activations(self, block: ir.Value) -> list:
        """The Q8_K words of `_activations` from global memory: for group 2k + high the 8
        quant words of its sub-block and its bsums word; last the f32 d."""
        b = self.em.b

        def sub_block(i):
            return b.add(b.mul(self._pair(b.udiv(i, i32(18))), i32(2)), b.urem(b.udiv(i, i32(9)), i32(2)))

        def offset(i):
            within, sub = b.urem(i, i32(9)), sub_block(i)
            quant = b.add(b.add(i32(4), b.mul(sub, i32(32))), b.mul(within, i32(4)))
            word = b.select(b.icmp_unsigned("<", within, i32(8)), quant, b.add(i32(4 + 256), b.mul(sub, i32(4))))
            return b.select(b.icmp_unsigned("<", i, i32(18 * self.pair_count)), word, i32(0))
        runs = []
        for group in range(2 * self.pair_count):
            sub = sub_block(i32(9 * group))
            runs += [(b.add(i32(4), b.mul(sub, i32(32))), [(4 * r, 4) for r in range(8)]),
                     (b.add(i32(4 + 256), b.mul(sub, i32(4))), [(0, 4)])]
        return self._words(self.x, (block,), [*runs, (i32(0), [(0, 4)])], offset)

    def _words(self, view, lead: tuple, runs: list, offset) -> list:
        """The words of `runs` (a byte offset along the view's last axis after the `lead`
        coordinates, with (byte delta, bytes) loads from it): vector loads where both views
        are aligned and unit-stride (a uniform branch), else word i from the bytes at
        `offset(i)` in a rolled loop (strided views)."""
        em = self.em
        b = em.b
        count = sum(size for _, loads in runs for _, size in loads) // 4
        words = [em.entry_alloca(I32) for _ in range(count)]
        spilled = em.entry_alloca(ir.ArrayType(I32, count))
        with b.if_else(self.aligned) as (vectors, any_view):
            with vectors:
                loaded = [word for start, loads in runs for word in _aligned_loads(em, view, lead, start, loads)]
                for slot, word in zip(words, loaded):
                    b.store(word, slot)
            with any_view:
                def word(i):
                    index = b.trunc(i, I32)
                    start = b.zext(offset(index), I64)
                    value = i32(0)
                    for k in range(4):
                        here = view_address(em, view, (*lead, b.add(start, ir.Constant(I64, k))))
                        value = b.or_(value, b.shl(b.zext(b.load(here), I32), i32(8 * k)))
                    b.store(value, b.gep(spilled, [i32(0), index]))
                em.loop(ir.Constant(I64, 0), ir.Constant(I64, count), word, name="word")
                for k, slot in enumerate(words):
                    b.store(b.load(b.gep(spilled, [i32(0), i32(k)])), slot)
        return [b.load(slot) for slot in words]

    def _accumulate(self, words: list, activations: dict) -> None:
        """One block's contribution: the lane's integer sums over its pairs, summed over
        the group's lanes, then the reference's float sequence."""
        b = self.em.b
        header, scales = words[0], words[1:4]
        aux = [i32(0)] * 8
        sumi = i32(0)
        for k in range(self.pair_count):
            pair = self._pair(i32(k))
            nibbles = words[4 + 8 * k: 12 + 8 * k]
            by_member = _transpose(b, nibbles[0::2]) + _transpose(b, nibbles[1::2])
            for high, (scale, minimum) in enumerate(pair_scales_mins(b, scales, pair)):
                quants = activations["members"][2 * k + high]
                for member, (a, q) in enumerate(zip(by_member, quants)):
                    levels = b.and_(b.lshr(a, i32(4)) if high else a, i32(NIBBLE_MASK))
                    aux[member] = b.add(aux[member], b.mul(scale, _dp4a(b, levels, q)))
                sumi = b.add(sumi, b.mul(activations["sums"][2 * k + high], minimum))
        deltas = tuple(1 << k for k in range(self.lanes.bit_length() - 1))
        aux = self._scatter(aux, deltas) if self.plan.scatter else [self.butterfly_sum(value, deltas, b.add)
                                                                     for value in aux]
        sumi = self.butterfly_sum(sumi, deltas, b.add)
        d8 = activations["d"]
        d, dmin = b.fmul(half(b, header, 0), d8), b.fmul(half(b, header, 1), d8)
        for slot, value in zip(self.sums, aux):
            b.store(b.fadd(b.load(slot), b.fmul(d, b.sitofp(value, F32))), slot)
        b.store(b.fsub(b.load(self.sumf), b.fmul(dmin, b.sitofp(sumi, F32))), self.sumf)

    def _scatter(self, values: list, deltas: tuple) -> list:
        """The group's sums of aux32's 8 members, lane q of the group keeping members
        q·kept .. q·kept + kept - 1: at each step (the widest first) a lane keeps the half
        its lane bit names and adds what its partner sends of it (exact integers)."""
        b = self.em.b
        shfl = self.em.declare("llvm.nvvm.shfl.sync.bfly.i32", I32, [I32, I32, I32, I32])
        for delta in reversed(deltas):
            upper = b.icmp_unsigned("!=", b.and_(self.lane, i32(delta)), i32(0))
            half = len(values) // 2
            kept = []
            for low, high in zip(values[:half], values[half:]):
                sent = b.call(shfl, [i32(-1), b.select(upper, low, high), i32(delta), i32(31)])
                kept.append(b.add(b.select(upper, high, low), sent))
            values = kept
        return values

    def _sum_of(self, member: int) -> ir.Value:
        """sums[member] of the row, in every lane of its group (scattered: from the lane that
        keeps it)."""
        b = self.em.b
        slot = b.load(self.sums[member % self.kept])
        if self.kept == 8:
            return slot
        shfl = self.em.declare("llvm.nvvm.shfl.sync.idx.i32", I32, [I32, I32, I32, I32])
        keeper = b.add(b.mul(b.udiv(self.lane, i32(self.lanes)), i32(self.lanes)), i32(member // self.kept))
        return b.bitcast(b.call(shfl, [i32(-1), b.bitcast(slot, I32), keeper, i32(31)]), F32)


def _aligned_loads(em, view, lead: tuple, start: ir.Value, loads: list) -> list:
    """Little-endian words of `(byte delta, bytes)` loads from byte `start` along a unit-stride
    axis: constant deltas from one global address (immediate offsets in PTX)."""
    b = em.b
    address = view_address(em, view, (*lead, b.zext(start, I64)))
    return _vector_words(b, b.addrspacecast(address, address.type.pointee.as_pointer(1)), loads)


def _vector_words(b: ir.IRBuilder, base: ir.Value, loads: list) -> list:
    """The i32 words of `(byte delta, bytes)` vector loads from `base` (a pointer into any
    address space), each aligned to its size."""
    space = base.type.addrspace
    byte = b.bitcast(base, ir.IntType(8).as_pointer(space))
    words = []
    for delta, size in loads:
        vector = ir.VectorType(I32, size // 4)
        loaded = b.load(b.bitcast(b.gep(byte, [ir.Constant(I64, delta)]), vector.as_pointer(space)), align=size)
        words += [b.extract_element(loaded, i32(i)) for i in range(size // 4)]
    return words


def _transpose(b: ir.IRBuilder, words: list) -> list:
    """The 4x4 byte transpose: word t of the result holds byte t of each word, in order."""
    a, c, e, g = words
    ac_low, ac_high = prmt(b, a, c, 0x5140), prmt(b, a, c, 0x7362)    # a0 c0 a1 c1, a2 c2 a3 c3
    eg_low, eg_high = prmt(b, e, g, 0x5140), prmt(b, e, g, 0x7362)
    return [prmt(b, ac_low, eg_low, 0x5410), prmt(b, ac_low, eg_low, 0x7632),
            prmt(b, ac_high, eg_high, 0x5410), prmt(b, ac_high, eg_high, 0x7632)]


def _dp4a(b: ir.IRBuilder, levels: ir.Value, quants: ir.Value) -> ir.Value:
    """The sum of the four byte products: unsigned 4-bit levels times signed 8-bit quants."""
    return b.asm(ir.FunctionType(I32, [I32, I32]), "dp4a.u32.s32 $0, $1, $2, 0;", "=r,r,r", [levels, quants],
                 side_effect=False)
