"""The f32 tiled contraction's K step with vector fragments (the SGEMM habit: every
shared-memory read a 16-byte `ld.shared.v4`), on the CUDA cores as `simt_matmul.py`; the
MMA plan option `fma.f32.v4` (docs/gpu.md: it awaits its GPU round).

A stays in the ring's swizzled rows of BK elements (`tile_matmul.py`); a thread reads each of
its 8 rows four K elements at a time (one v4 a row: the two rows a warp reads at once sit
in different banks, the swizzle's doing). B is staged as plain rows of BN columns (`SimtTiles`,
not the blocks ldmatrix needs): a half-warp's 16 v4 reads of a K row are 256 contiguous bytes,
two wavefronts. Per four K elements a thread makes 8 + 8 vector reads for 256 `fma.rn.f32`.
(ptxas already merges the scalar form's A reads into the same LDS.128s; what changes is B:
in the block layout a half-warp's reads fall on the same 64 bytes of banks, four wavefronts.)
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import F32, I32, I64
from .simt_matmul import HALF, PER_THREAD, SIDE, Simt, _coordinate
from .ptx_asm import cp_async
from .tile_matmul import COPY_BYTES, Operand, TileEmitter, swizzled


class SimtTiles(TileEmitter):
    """The tile emitter with B staged as plain rows of BN columns: the CUDA cores read it
    with vector loads, nothing needs the block layout. A K tile wholly inside an operand's
    view (most of them) is copied without the bounds arithmetic: each 16-byte copy is its
    source at K tile 0 moved by K, full (the K step's copies were an eighth of its
    instructions, mostly 64-bit clamps of zero-fill sizes)."""

    def wide_copies(self, operand: Operand, mine: list, k0: ir.Value, base: ir.Value, width: int) -> None:
        b = self.em.b
        bm, bn, bk = self.plan.block
        rows, last = (self.m, b.add(self.m0, ir.Constant(I64, bm))) if operand is self.a else \
            (self.n, b.add(self.n0, ir.Constant(I64, bn)))
        inside = b.and_(b.icmp_signed("<=", last, rows),
                        b.icmp_signed("<=", b.add(k0, ir.Constant(I64, bk)), self.k_extent(operand)))
        along = operand.column_axis if operand is self.a else operand.row_axis
        with b.if_else(inside) as (interior, edge):
            with interior:
                step = b.mul(k0, operand.view.strides[along])
                for _, destination, source, _, _ in mine:
                    cp_async(b, b.add(base, destination), b.gep(source, [step]), ir.Constant(I32, width), width)
            with edge:
                super().wide_copies(operand, mine, k0, base, width)

    def b_destination(self, row: ir.Value, chunk: ir.Value) -> ir.Value:
        b = self.em.b
        row_bytes = ir.Constant(I64, self.plan.block[1] * self.plan.element_bytes)
        return b.trunc(b.add(b.mul(row, row_bytes), b.mul(chunk, ir.Constant(I64, COPY_BYTES))), I32)


class SimtFragments(Simt):
    """Each thread owns 4 x 4 blocks of the tile, one at each 64 x 64 quadrant (BM/64 x BN/64
    of them: 8 x 8 outputs for a 128 x 128 tile, 8 x 16 for 128 x 256): the layout
    `#blocked<{sizePerThread = [4, 4], threadsPerWarp = [2, 16], warpsPerCTA = [8, 1]}>`."""

    @staticmethod
    def _shape(plan) -> tuple:
        """(rows, columns) a thread owns."""
        return tuple(PER_THREAD * (extent // HALF) for extent in plan.block[:2])

    def accumulators(self, em, plan) -> ir.Value:
        rows, columns = self._shape(plan)
        return em.entry_alloca(ir.ArrayType(F32, rows * columns))

    def compute(self, tiles: TileEmitter, stage: ir.Value) -> None:
        b = tiles.em.b
        plan = tiles.plan
        bk, chunk = plan.block[2], plan.chunk
        ty, tx = _thread(b, b.trunc(tiles.tid, I32))
        height, width = self._shape(plan)
        rows = [_coordinate(b, ty, ir.Constant(I32, i)) for i in range(height)]
        a_base, b_base = tiles.stage_base(stage, "a"), tiles.stage_base(stage, "b")
        fma = tiles.em.declare("llvm.fma.f32", F32, [F32, F32, F32])
        slots = [self._slot(b, tiles.acc, index) for index in range(height * width)]
        acc = [b.load(slot) for slot in slots]
        b_chunks = [b.zext(b.udiv(_coordinate(b, tx, ir.Constant(I32, j)), ir.Constant(I32, chunk)), I64)
                    for j in range(0, width, PER_THREAD)]
        for step in range(bk // chunk):
            a_rows = [_vector(b, b.add(a_base, swizzled(b, row, ir.Constant(I32, step), plan.row_bytes)))
                      for row in rows]
            for within in range(chunk):
                k = ir.Constant(I64, step * chunk + within)
                b_values = [_element(b, _vector(b, b.add(b_base, tiles.b_destination(k, column))), j)
                            for column in b_chunks for j in range(PER_THREAD)]
                a_values = [_element(b, vector, within) for vector in a_rows]
                acc = [b.call(fma, [a, value, acc[i * width + j]])
                       for i, a in enumerate(a_values) for j, value in enumerate(b_values)]
        for slot, value in zip(slots, acc):
            b.store(value, slot)

    def epilogue(self, tiles: TileEmitter) -> None:
        b = tiles.em.b
        ty, tx = _thread(b, tiles.epilogue_thread())
        height, width = self._shape(tiles.plan)
        # pair p: accumulator row p / (width / 2), columns 2 · (p mod (width / 2)), + 1
        pairs = [tuple(b.load(self._slot(b, tiles.acc, i * width + j + r)) for r in range(2))
                 for i in range(height) for j in range(0, width, 2)]

        def coordinates(pair: ir.Value) -> tuple:
            half = pair.type(width // 2)
            return (_coordinate(b, ty, b.udiv(pair, half)),
                    _coordinate(b, tx, b.mul(b.urem(pair, half), pair.type(2))))
        tiles.store_pairs(pairs, coordinates)


def _thread(b: ir.IRBuilder, tid: ir.Value) -> tuple:
    """(ty, tx): the thread's row and column of the 16 x 16 threads."""
    return b.udiv(tid, tid.type(SIDE)), b.urem(tid, tid.type(SIDE))


def _vector(b: ir.IRBuilder, address: ir.Value) -> ir.Value:
    """The four f32 at 16-byte aligned shared `address` (i32): one ld.shared.v4."""
    vector = ir.VectorType(F32, PER_THREAD)
    return b.load(b.inttoptr(address, vector.as_pointer(3)), align=COPY_BYTES)


def _element(b: ir.IRBuilder, vector: ir.Value, index: int) -> ir.Value:
    return b.extract_element(vector, ir.Constant(I32, index))
