"""The MMA mapping's sm_80 instruction: `mma.sync.aligned.m16n8k16` fed by `ldmatrix`.

Eight warps tile the 128 x 128 CTA tile as 2 (M) x 4 (N); a warp owns 64 x 32: 4 x 4
m16n8 accumulator fragments (`#mma<{version = 2}>` in `layout/mma.py`: register r of
fragment (i, j) in lane l holds row 16i + l/4 + 8(r/2), column 8j + 2(l%4) + r%2). Per
16-wide K step a warp loads its A fragments with `ldmatrix.x4` (rows of the K-major A tile)
and its B fragments with `ldmatrix.x4.trans` (B is staged N-contiguous), then issues 16
MMAs. f32 accumulators take `.f32.{f16,bf16}.{f16,bf16}.f32`; an f16 accumulator the f16
MMA (`.f16.f16.f16.f16`, two f16 pairs a fragment), so the sum is never kept in more or
less than the declared dtype's format at the fragment boundary."""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import F32, I32
from .cta import sreg
from .ptx_asm import mma_m16n8k16_text
from .asm_block import AsmBlock
from .tile_matmul import TileEmitter, fill_registers, swizzled

WARPS = (2, 4)
WARP_TILE = (64, 32)
M_FRAGMENTS, N_FRAGMENTS = 4, 4


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def f16_pair_bits(value: float) -> int:
    import numpy as np
    half = int(np.array(value, dtype=np.float16).view(np.uint16))
    return half | (half << 16)


class MmaSync:
    def accumulators(self, em, plan) -> ir.Value:
        """One slot per accumulator register, promoted to registers by SROA."""
        words = 4 if plan.contraction.acc_dtype == "f32" else 2
        element = F32 if plan.contraction.acc_dtype == "f32" else I32
        return em.entry_alloca(ir.ArrayType(element, M_FRAGMENTS * N_FRAGMENTS * words))

    def reset(self, em, acc, contraction) -> None:
        if contraction.acc_dtype == "f32":
            value = ir.Constant(F32, contraction.init)
        else:
            value = ir.Constant(I32, f16_pair_bits(contraction.init))
        fill_registers(em, acc, value)

    @staticmethod
    def _slot(b, acc, index):
        return b.gep(acc, [_i32(0), _i32(index)], inbounds=True)

    def before_barrier(self, b) -> None:
        """ldmatrix reads shared memory through the generic proxy: nothing to fence."""

    def drain(self, b, tiles) -> None:
        """mma.sync is synchronous: nothing in flight after the K loop."""

    def _lanes(self, em, tid=None):
        b = em.b
        tid = tid if tid is not None else sreg(em, "tid.x")
        warp, lane = b.udiv(tid, _i32(32)), b.urem(tid, _i32(32))
        return b.urem(warp, _i32(WARPS[0])), b.udiv(warp, _i32(WARPS[0])), lane

    def compute(self, tiles: TileEmitter, stage: ir.Value) -> None:
        """The stage's MMAs chained into the accumulators, the whole step one asm (`asm_block.py`)."""
        self.step(tiles, stage, self._lanes(tiles.em))

    def step(self, tiles: TileEmitter, stage: ir.Value, lanes: tuple, finish: str | None = None,
             operands=lambda step, register: ()) -> None:
        """The stage's K as one asm (`asm_block.AsmBlock`): `accumulating`, `fragment_lines`,
        `accumulated`."""
        step, slots = self.accumulating(tiles)
        self.fragment_lines(step, tiles, stage, lanes, finish, operands)
        self.accumulated(step, slots)

    def accumulating(self, tiles: TileEmitter, results: tuple | list = ()) -> tuple:
        """(an asm that updates the accumulator registers in place, with further `results`;
        the registers' slots)."""
        b = tiles.em.b
        words = 4 if tiles.plan.contraction.acc_dtype == "f32" else 2
        slots = [self._slot(b, tiles.acc, e) for e in range(M_FRAGMENTS * N_FRAGMENTS * words)]
        return AsmBlock(b, [b.load(slot) for slot in slots], results), slots

    def accumulated(self, step: AsmBlock, slots: list) -> list:
        """`step` built, the accumulators stored back; its further results."""
        values = step.emit()
        for slot, value in zip(slots, values):
            step.b.store(value, slot)
        return values[len(slots):]

    def fragment_lines(self, step: AsmBlock, tiles: TileEmitter, stage: ir.Value, lanes: tuple,
                       finish: str | None = None, operands=lambda step, register: ()) -> None:
        """The warp's fragments loaded, then fragment by fragment (i, j) its MMAs over the
        stage's K, each one's D the next one's C. Without `finish` they chain from the
        accumulator into it; with it from zero into a sum of the asm's own, which `finish`
        (PTX: {0} the new accumulator, {1} the sum, {2} the accumulator, {3}..
        `operands(step, register index)`) then combines into the accumulator (a fragment's
        sum is used at once: no second accumulator)."""
        c = tiles.plan.contraction
        words = 4 if c.acc_dtype == "f32" else 2
        steps = tiles.plan.block[2] // 16
        text = mma_m16n8k16_text(c.operand_dtype, c.acc_dtype)
        row_bytes = tiles.plan.row_bytes
        b_starts, a_starts = self.b_addresses(tiles, stage, lanes), self.a_addresses(tiles, stage, lanes)
        b_frags = [self.b_fragments(step, b_starts, kk, row_bytes) for kk in range(steps)]
        for i in range(M_FRAGMENTS):
            a_frags = [step.ldmatrix_x4(a_starts[kk], transpose=False, offset=16 * i * row_bytes) for kk in range(steps)]
            for j in range(N_FRAGMENTS):
                registers = range((i * N_FRAGMENTS + j) * words, (i * N_FRAGMENTS + j + 1) * words)
                results = [step.result(r) for r in registers]
                accumulators = [step.accumulator(r) for r in registers]
                chained = [[*a_frags[kk], *b_frags[kk][j]] for kk in range(steps)]
                if finish is None:
                    step.chain(text, chained, results, accumulators)
                    continue
                sums = step.registers("f32", words)
                step.chain(text, chained, sums, [step.zero()] * words)
                for r, result, total, accumulator in zip(registers, results, sums, accumulators):
                    step.line(finish.format(result, total, accumulator, *operands(step, r)))

    def b_addresses(self, tiles: TileEmitter, stage: ir.Value, lanes: tuple) -> list:
        """The shared addresses of the warp's B fragment pairs' `ldmatrix.x4.trans` at the
        stage's first 16-wide K step (row 16·kk + r swizzles as row r: K step kk is an
        immediate offset from them, `b_fragments`)."""
        b = tiles.em.b
        _, warp_n, lane = lanes
        b_base = tiles.stage_base(stage, "b")
        bk, row_bytes = tiles.plan.block[2], tiles.plan.row_bytes
        row = b.add(b.urem(lane, _i32(8)), b.mul(_i32(8), b.urem(b.udiv(lane, _i32(8)), _i32(2))))
        addresses = []
        for pair in range(N_FRAGMENTS // 2):
            # the warp's 32 columns start at column 32·warp_n: block (32·warp_n) / BK
            column = b.add(b.mul(warp_n, _i32(WARP_TILE[1])), _i32(16 * pair))
            block = b.mul(b.udiv(column, _i32(bk)), _i32(bk * row_bytes))
            chunk = b.add(b.udiv(b.urem(column, _i32(bk)), _i32(8)), b.udiv(lane, _i32(16)))
            addresses.append(b.add(b_base, b.add(block, swizzled(b, row, chunk, row_bytes))))
        return addresses

    def b_fragments(self, step: AsmBlock, addresses: list, kk: int, row_bytes: int) -> list:
        """The warp's N_FRAGMENTS B fragments (2 b32 registers of `step` each) of 16-wide K
        step `kk` (`b_addresses`)."""
        b_frags = []
        for address in addresses:
            words4 = step.ldmatrix_x4(address, transpose=True, offset=16 * kk * row_bytes)
            b_frags += [words4[:2], words4[2:]]
        return b_frags

    def a_addresses(self, tiles: TileEmitter, stage: ir.Value, lanes: tuple) -> list:
        """The shared address of the warp's first A fragment's `ldmatrix.x4` at each 16-wide
        K step of the stage (row 16·i + r swizzles as row r: fragment i is an immediate offset
        from it)."""
        b = tiles.em.b
        warp_m, _, lane = lanes
        row = b.add(b.mul(warp_m, _i32(WARP_TILE[0])), b.urem(lane, _i32(16)))
        base = tiles.stage_base(stage, "a")
        return [b.add(base, swizzled(b, row, b.add(_i32(2 * kk), b.udiv(lane, _i32(16))), tiles.plan.row_bytes))
                for kk in range(tiles.plan.block[2] // 16)]

    def epilogue(self, tiles: TileEmitter) -> None:
        em = tiles.em
        b = em.b
        c = tiles.plan.contraction
        i64 = tiles.tid.type
        warp_m, warp_n, lane = (b.zext(v, i64) for v in self._lanes(em, b.trunc(tiles.epilogue_thread(), I32)))
        row0 = b.add(b.mul(warp_m, ir.Constant(i64, WARP_TILE[0])), b.udiv(lane, ir.Constant(i64, 4)))
        col0 = b.add(b.mul(warp_n, ir.Constant(i64, WARP_TILE[1])), b.mul(b.urem(lane, ir.Constant(i64, 4)),
                                                                          ir.Constant(i64, 2)))
        # pair p = (fragment (i, j), half): registers 2·half, 2·half + 1 of fragment (i, j),
        # one row (16i + 8·half), two columns (8j)
        pairs = [tuple(self._element(b, tiles.acc, c.acc_dtype, i * N_FRAGMENTS + j, 2 * half + r) for r in range(2))
                 for i in range(M_FRAGMENTS) for j in range(N_FRAGMENTS) for half in range(2)]

        def coordinates(pair: ir.Value) -> tuple:
            fragment, half = b.udiv(pair, ir.Constant(i64, 2)), b.urem(pair, ir.Constant(i64, 2))
            i, j = b.udiv(fragment, ir.Constant(i64, N_FRAGMENTS)), b.urem(fragment, ir.Constant(i64, N_FRAGMENTS))
            return (b.add(row0, b.add(b.mul(i, ir.Constant(i64, 16)), b.mul(half, ir.Constant(i64, 8)))),
                    b.add(col0, b.mul(j, ir.Constant(i64, 8))))

        def offsets(pair: int) -> tuple:
            fragment, half = divmod(pair, 2)
            return 16 * (fragment // N_FRAGMENTS) + 8 * half, 8 * (fragment % N_FRAGMENTS)
        tiles.store_pairs(pairs, coordinates, offsets)

    def _element(self, b, acc, dtype, fragment, r):
        if dtype == "f32":
            return b.load(self._slot(b, acc, fragment * 4 + r))
        pair = b.bitcast(b.load(self._slot(b, acc, fragment * 2 + r // 2)), ir.VectorType(ir.HalfType(), 2))
        return b.extract_element(pair, _i32(r % 2))
