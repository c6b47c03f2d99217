"""The scalar K step of f32 tiled contractions: CUDA cores with register tiling, as
cuBLAS's SGEMM does (no TF32: §5.3/§5.4 allow no undeclared input-precision reduction).
Structured contractions (`tile_sparse.py`) and the plan instruction `fma.f32` use it; dense
tiles default to its vector form, `simt_fragments.py`.

The staging is the tensor-core mapping's (`tile_matmul.py`: a cp.async ring, 16-byte copies
of four f32, 64-byte swizzled rows). 256 threads as 16 x 16 each own a 4 x 4 block in each
quadrant of the 128 x 128 tile: rows 4·ty.. and 64 + 4·ty.., columns 4·tx.. and 64 + 4·tx..
(the accumulator's `#blocked<{sizePerThread = [4, 4], threadsPerWarp = [2, 16],
warpsPerCTA = [8, 1]}>`). Per K element a thread reads 8 A values (threads of a half-warp
read the same ones: broadcasts) and two 16-byte vectors of B, then makes 64 FMAs
(`fma.rn.f32`: the contraction's fused multiply-add semantics, §5.3, may change rounding).
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import F32, I32, I64
from .tile_matmul import TileEmitter, swizzled

SIDE = 16                 # threads along each tile axis
PER_THREAD = 4            # rows (and columns) of each of a thread's four blocks
HALF = 64                 # the second block starts this many rows (columns) on


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _shared_pointer(b: ir.IRBuilder, address: ir.Value, type_: ir.Type) -> ir.Value:
    return b.inttoptr(address, type_.as_pointer(3))


class Simt:
    def __init__(self, rolled: bool = False):
        self.rolled = rolled    # the K step's chunks in a rolled loop (`compute`)

    def accumulators(self, em, plan) -> ir.Value:
        return em.entry_alloca(ir.ArrayType(F32, (2 * PER_THREAD) ** 2))

    def reset(self, em, acc, contraction) -> None:
        # a store each, not `fill_registers`' memset: SROA's phis from the memset come in
        # another order, and ptxas then made 77 more moves in sparse 1:2 (2440 -> 2528 SASS)
        for index in range(acc.type.pointee.count):
            em.b.store(ir.Constant(F32, contraction.init), self._slot(em.b, acc, index))

    @staticmethod
    def _slot(b, acc, index):
        return b.gep(acc, [_i32(0), _i32(index)], inbounds=True)

    def before_barrier(self, b) -> None:
        """Ordinary shared loads read the copies: the barrier alone orders them."""

    def drain(self, b, tiles) -> None:
        """FMAs are synchronous: nothing in flight after the K loop."""

    @staticmethod
    def _offsets(tid: ir.Value, b: ir.IRBuilder) -> tuple:
        """(rows, columns): the tile coordinates of a thread's 8 rows and 8 columns."""
        ty, tx = b.udiv(tid, tid.type(SIDE)), b.urem(tid, tid.type(SIDE))
        rows = [_coordinate(b, ty, tid.type(i)) for i in range(2 * PER_THREAD)]
        columns = [_coordinate(b, tx, tid.type(j)) for j in range(2 * PER_THREAD)]
        return rows, columns

    def compute(self, tiles: TileEmitter, stage: ir.Value) -> None:
        """The stage's K elements into the accumulators, a 16-byte chunk of K at a time (each
        row's A chunk one `ld.shared.v4`); `rolled`: the chunks in a rolled loop, one copy of
        a chunk's 4 x 64 FMAs instead of BK / 4 (the accumulators' values and order are the
        same; ptxas unrolls the loop or not)."""
        em = tiles.em
        b = em.b
        plan = tiles.plan
        bk, row_bytes = plan.block[2], plan.row_bytes
        rows, columns = self._offsets(b.trunc(tiles.tid, I32), b)
        a_base, b_base = tiles.stage_base(stage, "a"), tiles.stage_base(stage, "b")
        # each half's B block and the 16-byte chunk of its row that holds the thread's columns
        b_blocks = [(b.add(b_base, b.mul(b.udiv(column, _i32(bk)), _i32(bk * row_bytes))),
                     b.udiv(b.urem(column, _i32(bk)), _i32(plan.chunk)))
                    for column in (columns[0], columns[PER_THREAD])]
        chunks = bk // plan.chunk

        def chunk(index: ir.Value) -> None:
            self._chunk(tiles, index, [b.add(a_base, swizzled(b, row, index, row_bytes)) for row in rows], b_blocks)
        if self.rolled:
            em.loop(ir.Constant(I64, 0), ir.Constant(I64, chunks), lambda index: chunk(b.trunc(index, I32)), name="chunk")
        else:
            for index in range(chunks):
                chunk(_i32(index))

    def _chunk(self, tiles: TileEmitter, chunk: ir.Value, a_rows: list, b_blocks: list) -> None:
        """K elements 4 · chunk .. 4 · chunk + 3: each row's four A values from one vector
        load at its address in `a_rows`, then per K element two B vectors and 64 FMAs, as
        16 four-lane `llvm.fma`s (a row's A value times a B vector into the row's four
        accumulators there: the same FMAs, a quarter of the instructions to build)."""
        b = tiles.em.b
        plan = tiles.plan
        width = plan.chunk
        vector = ir.VectorType(F32, PER_THREAD)
        fma = tiles.em.declare("llvm.fma.v4f32", vector, [vector] * 3)
        # accumulator vector (row i, half h): registers 8i + 4h .. 8i + 4h + 3
        slots = [b.bitcast(self._slot(b, tiles.acc, index), vector.as_pointer())
                 for index in range(0, (2 * PER_THREAD) ** 2, PER_THREAD)]
        acc = [b.load(slot, align=4) for slot in slots]
        a_vectors = [b.load(_shared_pointer(b, address, vector), align=16) for address in a_rows]
        for within in range(width):
            k = b.add(b.mul(chunk, _i32(width)), _i32(within))
            b_vectors = [b.load(_shared_pointer(b, b.add(block, swizzled(b, k, column_chunk, plan.row_bytes)), vector),
                                align=16) for block, column_chunk in b_blocks]
            a_values = [lane_splat(b, a_vector, within) for a_vector in a_vectors]
            acc = [b.call(fma, [a_values[index // 2], b_vectors[index % 2], value]) for index, value in enumerate(acc)]
        for slot, value in zip(slots, acc):
            b.store(value, slot, align=4)

    def epilogue(self, tiles: TileEmitter) -> None:
        b = tiles.em.b
        tid = tiles.epilogue_thread()
        ty, tx = b.udiv(tid, tid.type(SIDE)), b.urem(tid, tid.type(SIDE))
        width = 2 * PER_THREAD
        # pair p: accumulator row i = p / 4 (of the thread's 8), columns 2 · (p mod 4), + 1
        pairs = [tuple(b.load(self._slot(b, tiles.acc, i * width + j + r)) for r in range(2))
                 for i in range(width) for j in range(0, width, 2)]

        def coordinates(pair: ir.Value) -> tuple:
            return (_coordinate(b, ty, b.udiv(pair, pair.type(width // 2))),
                    _coordinate(b, tx, b.mul(b.urem(pair, pair.type(width // 2)), pair.type(2))))

        def offsets(pair: int) -> tuple:
            row, column = divmod(pair, width // 2)
            return _block_offset(row), _block_offset(2 * column)
        tiles.store_pairs(pairs, coordinates, offsets)


def lane_splat(b: ir.IRBuilder, vector: ir.Value, lane: int) -> ir.Value:
    """Lane `lane` of `vector` in every lane: one shuffle (an extract, an insert and a
    shuffle before: the same value, a third of the instructions to build)."""
    count = vector.type.count
    return b.shuffle_vector(vector, ir.Constant(vector.type, None), ir.Constant(ir.VectorType(I32, count), [lane] * count))


def _block_offset(index: int) -> int:
    """`_coordinate(thread, index) - _coordinate(thread, 0)`, for a constant index."""
    return index // PER_THREAD * HALF + index % PER_THREAD


def _coordinate(b: ir.IRBuilder, thread: ir.Value, index: ir.Value) -> ir.Value:
    """Tile coordinate of row (column) `index` of the 8 that thread row (column) `thread`
    owns: PER_THREAD consecutive ones in each half of the tile."""
    block = b.mul(b.udiv(index, index.type(PER_THREAD)), index.type(HALF))
    return b.add(b.mul(thread, index.type(PER_THREAD)), b.add(block, b.urem(index, index.type(PER_THREAD))))
