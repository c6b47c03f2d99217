"""The MMA mapping's sm_90a instruction: `wgmma.mma_async.m64nNk16` reading both operands
from shared memory through matrix descriptors.

Warpgroups split the CTA tile into 64-row bands (two for 128 rows: 256 threads); a thread
keeps N/2 f32 accumulators, or N/4 registers of two f16 for an f16 accumulator (the f16
MMA) (`#mma<{versionMajor = 3}>` in `layout/mma.py`). The staged tiles are the canonical
layouts of the 64- or 128-byte swizzle (rows of BK = 32 or 64 elements): A K-major (8-row
groups 8 rows apart: SBO), B MN-major (blocks of BK N columns: LBO = BK rows apart, 8-row
groups: SBO; `imm-trans-b = 1`). A 16-wide K step moves A's start 32 bytes along its rows
and B's 16 rows down. The copies of a stage reach the async proxy through
`fence.proxy.async` before the barrier that publishes them; a ring slot is refilled only
after the MMAs that read it have been waited for (`pending` groups stay in flight).
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import F32, I32, I64
from .cta import sreg
from .mma_sync import f16_pair_bits
from .ptx_asm import fence_proxy_async, wgmma_commit, wgmma_fence, wgmma_m64, wgmma_wait
from .tile_matmul import TileEmitter

INSTRUCTION_M = 64
SWIZZLE_MODE = {128: 1, 64: 2}   # the descriptor's layout type for a swizzle of that many bytes


def descriptor(b: ir.IRBuilder, address: ir.Value, leading: int, stride: int, row_bytes: int) -> ir.Value:
    """A wgmma shared-memory matrix descriptor: start address, leading and stride byte
    offsets (16-byte units) and the swizzle mode."""
    start = b.zext(b.lshr(b.and_(address, ir.Constant(I32, 0x3FFFF)), ir.Constant(I32, 4)), I64)
    fixed = (leading >> 4) << 16 | (stride >> 4) << 32 | SWIZZLE_MODE[row_bytes] << 62
    return b.or_(start, ir.Constant(I64, fixed))


def _registers(plan) -> int:
    """Accumulator registers a thread holds: N/2 f32 (or s32), or N/4 pairs of f16."""
    return plan.block[1] // (4 if plan.contraction.acc_dtype == "f16" else 2)


class Wgmma:
    def accumulators(self, em, plan) -> ir.Value:
        return em.entry_alloca(ir.ArrayType(F32 if plan.contraction.acc_dtype == "f32" else I32, _registers(plan)))

    def reset(self, em, acc, contraction) -> None:
        if contraction.acc_dtype == "f32":
            value = ir.Constant(F32, contraction.init)
        elif contraction.acc_dtype == "i32":
            value = ir.Constant(I32, int(contraction.init))
        else:
            value = ir.Constant(I32, f16_pair_bits(contraction.init))
        for index in range(acc.type.pointee.count):
            em.b.store(value, self._slot(em.b, acc, index))

    @staticmethod
    def _slot(b, acc, index):
        return b.gep(acc, [ir.Constant(I32, 0), ir.Constant(I32, index)], inbounds=True)

    def before_barrier(self, b) -> None:
        fence_proxy_async(b)

    def compute(self, tiles: TileEmitter, stage: ir.Value) -> None:
        b = tiles.em.b
        c = tiles.plan.contraction
        _, bn, bk = tiles.plan.block
        group = b.udiv(sreg(tiles.em, "tid.x"), ir.Constant(I32, 128))
        row_bytes = tiles.plan.row_bytes
        group_bytes = 8 * row_bytes     # eight staged rows: the stride between core-matrix groups
        a_base = b.add(tiles.stage_base(stage, "a"), b.mul(group, ir.Constant(I32, INSTRUCTION_M * row_bytes)))
        b_base = tiles.stage_base(stage, "b")
        slots = [self._slot(b, tiles.acc, i) for i in range(_registers(tiles.plan))]
        acc = [b.load(s) for s in slots]
        wgmma_fence(b)
        for kk in range(bk // 16):
            a_desc = descriptor(b, b.add(a_base, ir.Constant(I32, 32 * kk)), 16, group_bytes, row_bytes)
            b_desc = descriptor(b, b.add(b_base, ir.Constant(I32, 16 * kk * row_bytes)), bk * row_bytes, group_bytes,
                                row_bytes)
            acc = wgmma_m64(b, bn, c.operand_dtype, c.acc_dtype, a_desc, b_desc, acc, transpose_b=True)
        wgmma_commit(b)
        acc = wgmma_wait(b, tiles.plan.pending, acc)
        for slot, value in zip(slots, acc):
            b.store(value, slot)

    def drain(self, b, tiles) -> None:
        """Wait for the MMAs still in flight before the epilogue reads the accumulators."""
        if tiles.plan.pending:
            slots = [self._slot(b, tiles.acc, i) for i in range(_registers(tiles.plan))]
            for slot, value in zip(slots, wgmma_wait(b, 0, [b.load(s) for s in slots])):
                b.store(value, slot)

    def epilogue(self, tiles: TileEmitter) -> None:
        em = tiles.em
        b = em.b
        i64 = tiles.tid.type
        tid = tiles.epilogue_thread()
        warp, lane = b.udiv(tid, ir.Constant(i64, 32)), b.urem(tid, ir.Constant(i64, 32))
        row0 = b.add(b.mul(warp, ir.Constant(i64, 16)), b.udiv(lane, ir.Constant(i64, 4)))
        col0 = b.mul(b.urem(lane, ir.Constant(i64, 4)), ir.Constant(i64, 2))
        # pair p: registers 2p, 2p + 1, one row (8 · (p mod 2)), two columns (8 · (p / 2))
        pairs = [self._pair(b, tiles, index) for index in range(0, tiles.plan.block[1] // 2, 2)]

        def coordinates(pair: ir.Value) -> tuple:
            return (b.add(row0, b.mul(b.urem(pair, ir.Constant(i64, 2)), ir.Constant(i64, 8))),
                    b.add(col0, b.mul(b.udiv(pair, ir.Constant(i64, 2)), ir.Constant(i64, 8))))
        tiles.store_pairs(pairs, coordinates)

    def _pair(self, b, tiles, index: int) -> tuple:
        """The accumulator elements `index` and `index + 1` (f32, s32), or the two halves of
        register index / 2 (f16: the same elements, packed)."""
        if tiles.plan.contraction.acc_dtype != "f16":
            return tuple(b.load(self._slot(b, tiles.acc, index + r)) for r in range(2))
        halves = b.bitcast(b.load(self._slot(b, tiles.acc, index // 2)), ir.VectorType(ir.HalfType(), 2))
        return tuple(b.extract_element(halves, ir.Constant(I32, r)) for r in range(2))
