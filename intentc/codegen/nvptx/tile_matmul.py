"""The MMA mapping (docs/gpu.md, "MMA mapping"): a recognized tiled contraction
(`tile_contraction.py`) runs one output tile per CTA on the tensor cores.

The plan is data (`MmaPlan`, recorded in launch.json): a BM x BN x BK CTA tile, a
`stages`-deep ring of shared-memory operand tiles filled by `cp.async` (16-byte chunks
whose out-of-range bytes are zero-filled: the IR's masked reads with fill 0), and the
instruction that consumes them (`mma_sync.py` for sm_80/sm_90, `wgmma.py` for sm_90a).
Both stage their operands in the same swizzled layout (`layout/mma.py`): A as BM rows of
BK = 32 elements (64 bytes), B as BN/32 blocks of BK rows of 32 elements; the 16-byte chunk
c of row r sits at chunk c ^ ((r >> 1) & 3), the hardware's 64-byte swizzle, so ldmatrix
and the copies are free of bank conflicts and wgmma reads the tiles through descriptors.

Operands whose contiguous axis is not the one staged (a transposed view), whose rows are
not 16-byte aligned, or whose strides are not known to be 1 are copied element by element
by the same threads into the same layout (a uniform run-time choice): slower, same bits.
The K loop accumulates in registers in the instruction's fragment layout; the epilogue
casts the fragments and writes them to C with C's strides, masked by C's bounds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from llvmlite import ir

from ..llvm.types import F32, I8, I16, I32, I64
from ..llvm.values import ViewRef
from .asm_block import AsmBlock
from .cta import barrier, sreg
from .ptx_asm import asm, cp_async, cp_async_commit, cp_async_wait, opaque, shared_address, store_shared
from .tile_contraction import TileContraction

COPY_BYTES = 16           # a cp.async copy
LOCAL = 5                 # NVPTX's local address space
LOCAL_ALIGN = 16          # bytes a per-thread local array is aligned to
SHARED_LIMIT = 48 * 1024  # static shared memory a CTA may declare


@dataclass(frozen=True)
class MmaPlan:
    # argument words the kernel takes past its own (TmaPlan: the tensor maps' address)
    extra_argument_words: ClassVar[int] = 0
    contraction: TileContraction
    instruction: str          # "mma.sync.m16n8k16" | "wgmma.m64n128k16"
    block: tuple              # (BM, BN, BK)
    warps: tuple              # warps along (M, N) (wgmma: warpgroups along M)
    stages: int
    pending: int = 0          # MMA groups left in flight across a K step (wgmma; mma.sync is synchronous)
    group_m: int = 8          # tiles of M visited together, for L2 reuse of B
    resident: int = 2         # CTAs an SM must fit (`.minnctapersm`: ptxas caps registers to match)
    codegen_prepare: bool = True  # LLVM's CodeGenPrepare in code generation (docs/gpu.md, "Compile pipeline")
    instcombine: bool = True      # InstCombine in the LLVM pipeline (the same)
    codegen: int = 2              # LLVM's code generation level (the same)
    straight_line: bool = True    # SLSR and NaryReassociate in code generation (the same)

    @property
    def threads(self) -> int:
        return 32 * self.warps[0] * self.warps[1] * (4 if self.instruction.startswith("wgmma") else 1)

    @property
    def stage_bytes(self) -> int:
        bm, bn, bk = self.block
        return self.element_bytes * bk * (bm + bn)

    @property
    def element_bytes(self) -> int:
        """Bytes of a staged operand element (8-bit floats are staged widened to f16)."""
        return {"f32": 4, "i8": 1}.get(self.contraction.operand_dtype, 2)

    @property
    def chunk(self) -> int:
        """Elements a 16-byte copy moves."""
        return COPY_BYTES // self.element_bytes

    @property
    def row_bytes(self) -> int:
        """A staged row: BK elements of A, or BK columns of a B block (64 or 128 bytes: the
        hardware swizzle of that width)."""
        return self.element_bytes * self.block[2]

    @property
    def dynamic_shared_bytes(self) -> int:
        """The ring's bytes when it needs dynamic shared memory (past the static 48 KiB), else 0."""
        size = self.stages * self.stage_bytes
        return size if size > SHARED_LIMIT else 0

    @property
    def ctas_per_sm(self) -> int | None:
        """The grid's CTAs an SM, where the plan fixes it (a persistent kernel), else None."""
        return None

    @property
    def lookahead(self) -> int:
        """K tiles in flight ahead of the one computed: a ring slot is refilled once the MMAs
        that read it (the `pending` groups before the current one) are done everywhere."""
        return self.stages - 1 - self.pending

    def to_json(self) -> dict:
        bm, bn, bk = self.block
        c = self.contraction
        return {"instruction": self.instruction, "block": [bm, bn, bk], "warps": list(self.warps),
                "stages": self.stages, "pending": self.pending, "group_m": self.group_m, "resident": self.resident, "operands": c.operand_dtype, "acc": c.acc_dtype,
                "codegen_prepare": self.codegen_prepare, "instcombine": self.instcombine, "codegen": self.codegen,
                "straight_line": self.straight_line, "epilogue": list(c.casts), "shared_bytes": self.stages * self.stage_bytes,
                "staging": f"cp.async 16/8/4-byte pieces, zero-filled tails; {self.row_bytes}-byte swizzled rows"}


def local_array(em, type_: ir.ArrayType) -> ir.Value:
    """A per-thread array indexed at run time (it stays in local memory), through a local
    (addrspace 5) pointer: `ld.local`/`st.local` whether or not the code generator infers
    address spaces (at -O0 it does not). Aligned for whole-vector copies (`st.local.v4`)."""
    slot = em.entry_alloca(type_)
    slot.align = LOCAL_ALIGN
    return em.entry.addrspacecast(slot, type_.as_pointer(LOCAL))


def fill_registers(em, registers: ir.Value, value: ir.Constant) -> None:
    """Every element of a register array (an entry alloca) set to `value`: one `llvm.memset`
    where its bits are all zero (+0.0), which SROA splits into the elements' zeros (the 64
    stores a tile were 3-5 % of the MMA kernels' instructions), else a store each."""
    b = em.b
    if value.constant in (0, 0.0) and str(value.constant) != "-0.0":
        memset = em.declare("llvm.memset.p0.i64", ir.VoidType(), [ir.PointerType(), I8, I64, ir.IntType(1)])
        size = registers.type.pointee.count * (value.type.width if isinstance(value.type, ir.IntType) else 32) // 8
        b.call(memset, [registers, ir.Constant(I8, 0), ir.Constant(I64, size), ir.Constant(ir.IntType(1), 0)])
        return
    for index in range(registers.type.pointee.count):
        b.store(value, b.gep(registers, [ir.Constant(I32, 0), ir.Constant(I32, index)], inbounds=True))


def _ceil(b: ir.IRBuilder, value: ir.Value, divisor: int) -> ir.Value:
    return b.sdiv(b.add(value, ir.Constant(I64, divisor - 1)), ir.Constant(I64, divisor))


def _const(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def swizzled(b: ir.IRBuilder, row: ir.Value, chunk: ir.Value, row_bytes: int) -> ir.Value:
    """Byte offset of 16-byte `chunk` of staged `row` (i32) in rows of `row_bytes` (64 or
    128): the chunk's index XOR bits 7.. of the row's offset, as the hardware swizzles."""
    phase = b.and_(b.lshr(row, ir.Constant(I32, 128 // row_bytes - 1)), ir.Constant(I32, row_bytes // 16 - 1))
    return b.add(b.mul(row, ir.Constant(I32, row_bytes)), b.shl(b.xor(chunk, phase), ir.Constant(I32, 4)))


@dataclass
class Operand:
    """A view staged as rows (the non-contiguous axis) of 16-byte chunks (the contiguous one)."""
    view: ViewRef
    row_axis: int
    column_axis: int
    # (bytes, i1): copy pieces of this many bytes fit (unit column stride, rows and start
    # aligned to them), widest first; none of them: element by element
    pieces: tuple = ()

    def extent(self, axis_kind: str) -> ir.Value:
        return self.view.shape[self.row_axis if axis_kind == "row" else self.column_axis]


PIECES = (16, 8, 4)       # cp.async sizes, widest first
# pieces of one 16-byte copy emitted one by one: the 8-byte ones (rows of 7800 bytes, K = 3900
# f16, take them on every K tile); the four 4-byte ones (rows 4-byte aligned only, rarer)
# are a rolled loop a copy, which keeps the kernel's code (and compile time) smaller
UNROLLED_PIECES = 2


def _pieces(b: ir.IRBuilder, operand: Operand, element_bytes: int) -> tuple:
    """A view whose element 0 the specialization proves 16-byte aligned (`aligned16`, checked
    at launch) and whose strides are constants fits its pieces by construction: the i1s are
    constants, and `known` leaves the narrower paths unbuilt."""
    view = operand.view
    start = _const(0) if view.aligned16 else b.add(b.ptrtoint(view.ptr, I64), b.mul(view.offset, _const(element_bytes)))
    unit = b.icmp_signed("==", view.strides[operand.column_axis], _const(1))
    row_bytes = b.mul(view.strides[operand.row_axis], _const(element_bytes))
    fits = []
    for width in (w for w in PIECES if w >= element_bytes):
        aligned = b.icmp_unsigned("==", b.and_(b.or_(start, row_bytes), _const(width - 1)), _const(0))
        fits.append((width, b.and_(unit, aligned)))
    return tuple(fits)


def known(condition: ir.Value) -> bool | None:
    """The value of an i1 the builder folded to a constant (a fact of the specialization),
    else None: a branch on it needs only the path it takes."""
    if isinstance(condition, ir.Constant) and isinstance(condition.constant, (bool, int)):
        return bool(condition.constant)
    return None


def _clamp(b: ir.IRBuilder, count: ir.Value, chunk: int) -> ir.Value:
    """`count` clamped to [0, chunk] (elements or bytes of a copy inside the view)."""
    count = b.select(b.icmp_signed("<", count, _const(0)), _const(0), count)
    return b.select(b.icmp_signed(">", count, _const(chunk)), _const(chunk), count)


def _element(b: ir.IRBuilder, view, axes: tuple, coordinates: tuple) -> ir.Value:
    offset = view.offset
    for axis, coordinate in zip(axes, coordinates):
        offset = b.add(offset, b.mul(coordinate, view.strides[axis]))
    return b.gep(view.ptr, [offset])


class TileEmitter:
    """Emits the MMA mapping's kernel body; `compute` (the instruction's variant) consumes a
    stage and keeps the accumulator fragments, `fragments` says where each register lies."""

    def __init__(self, em, plan: MmaPlan, variant):
        self.em, self.plan, self.variant = em, plan, variant
        c = plan.contraction
        views = em.env
        self.a = Operand(views[c.a], c.a_axes[0], c.a_axes[1])
        self.b_op = Operand(views[c.b], c.b_axes[0], c.b_axes[1])
        self.c_view = views[c.c]
        self.m, self.k = self.a.extent("row"), self.a.extent("column")
        self.n = self.b_op.extent("column")

    # ---- the kernel --------------------------------------------------------------------------
    def emit(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, bk = plan.block
        self.shared = self._shared_memory()
        self.tid = b.zext(sreg(em, "tid.x"), I64)
        self.a.pieces = _pieces(b, self.a, plan.element_bytes)
        self.b_op.pieces = _pieces(b, self.b_op, plan.element_bytes)
        self.c_pairs = self._pairs()
        tiles_m, tiles_n = _ceil(b, self.m, bm), _ceil(b, self.n, bn)
        self.k_tiles = _ceil(b, self.k, bk)
        self.acc = self.variant.accumulators(em, plan)
        start = b.zext(sreg(em, "ctaid.x"), I64)
        stride = b.zext(sreg(em, "nctaid.x"), I64)
        em.loop(start, b.mul(tiles_m, tiles_n), lambda tile: self._tile(tile, tiles_m, tiles_n), stride, name="tile")

    def _shared_memory(self) -> ir.Value:
        """The ring: static shared memory up to 48 KiB, else the launch's dynamic shared memory."""
        dynamic = self.plan.dynamic_shared_bytes
        size = 0 if dynamic else self.plan.stages * self.plan.stage_bytes
        array = ir.GlobalVariable(self.em.module, ir.ArrayType(ir.IntType(8), size), "intentc_mma_stages",
                                  addrspace=3)
        array.align = 1024
        if not dynamic:
            array.linkage = "internal"
            array.initializer = ir.Constant(array.value_type, None)
        zero = ir.Constant(I32, 0)
        return shared_address(self.em.b, self.em.b.gep(array, [zero, zero], inbounds=True))

    def stage_base(self, stage: ir.Value, operand: str) -> ir.Value:
        """Shared address of `operand`'s tile ("a" | "b") in ring slot `stage` (i32)."""
        b = self.em.b
        bm, _, bk = self.plan.block
        base = b.add(self.shared, b.mul(stage, ir.Constant(I32, self.plan.stage_bytes)))
        return base if operand == "a" else b.add(base, ir.Constant(I32, self.plan.element_bytes * bm * bk))

    def place(self, tile: ir.Value, tiles_m: ir.Value, tiles_n: ir.Value) -> None:
        """The output tile's first row and column (`m0`, `n0`): tiles are visited in groups of
        `group_m` along M, so the CTAs running at once share B's columns in L2."""
        b = self.em.b
        bm, bn, _ = self.plan.block
        group = _const(self.plan.group_m)
        per_group = b.mul(group, tiles_n)
        first_m = b.mul(b.sdiv(tile, per_group), group)
        rows_in_group = b.select(b.icmp_signed("<", b.sub(tiles_m, first_m), group), b.sub(tiles_m, first_m), group)
        within = b.srem(tile, per_group)
        self.m0 = b.mul(b.add(first_m, b.srem(within, rows_in_group)), _const(bm))
        self.n0 = b.mul(b.sdiv(within, rows_in_group), _const(bn))

    def _tile(self, tile: ir.Value, tiles_m: ir.Value, tiles_n: ir.Value) -> None:
        em, plan = self.em, self.plan
        b = em.b
        self.place(tile, tiles_m, tiles_n)
        barrier(em)                     # the previous tile's last reads of the ring are done
        self.variant.reset(em, self.acc, plan.contraction)
        self._k_loop()
        self.variant.drain(b, self)
        self.variant.epilogue(self)

    def _k_loop(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        copies = self._copies(self.tid)
        # from K tile -lookahead: the first `lookahead` trips only load (the prologue), so
        # the loads' code is emitted once
        em.loop(_const(-plan.lookahead), self.k_tiles, lambda kt: self._k_step(kt, copies), name="ktile")
        cp_async_wait(b, 0)

    def _k_step(self, kt: ir.Value, copies: list) -> None:
        em, plan = self.em, self.plan
        b = em.b
        stages = ir.Constant(I32, plan.stages)
        started = b.icmp_signed(">=", kt, _const(0))
        with b.if_then(started):
            cp_async_wait(b, plan.lookahead - 1)
            self.variant.before_barrier(b)
            barrier(em)
        ahead = b.add(kt, _const(plan.lookahead))
        with b.if_then(b.icmp_signed("<", ahead, self.k_tiles)):
            self._load(copies, ahead, b.urem(b.trunc(ahead, I32), stages))
        cp_async_commit(b)
        with b.if_then(started):
            self.variant.compute(self, b.urem(b.trunc(kt, I32), stages))

    # ---- staging -----------------------------------------------------------------------------
    def k_extent(self, operand: Operand) -> ir.Value:
        """The operand's extent along K (its columns for A, its rows for B)."""
        return self.k

    def k_per_tile(self, operand: Operand) -> int:
        """How far a K tile moves along the operand's K axis (compressed operands move less)."""
        return self.plan.block[2]

    def _geometry(self, tid: ir.Value) -> list:
        """(operand, row, column, destination) of each 16-byte copy thread `tid` makes of K
        tile 0 (copy `index` of an operand is its chunk tid + index · threads): A's rows of BK
        elements; B's BK rows of BN columns, staged in blocks of BK columns. Coordinates are
        the view's (i64); the destination is a byte offset in the operand's stage tile (i32)."""
        b = self.em.b
        bm, bn, bk = self.plan.block
        threads, row_bytes, chunk_size = self.plan.threads, self.plan.row_bytes, self.plan.chunk
        copies = []
        for index in range(bm * bk // chunk_size // threads):
            chunk = b.add(tid, _const(index * threads))
            row, column = b.udiv(chunk, _const(bk // chunk_size)), b.urem(chunk, _const(bk // chunk_size))
            destination = swizzled(b, b.trunc(row, I32), b.trunc(column, I32), row_bytes)
            copies.append((self.a, b.add(self.m0, row), b.mul(column, _const(chunk_size)), destination))
        for index in range(bn * bk // chunk_size // threads):
            chunk = b.add(tid, _const(index * threads))
            row, column = b.udiv(chunk, _const(bn // chunk_size)), b.urem(chunk, _const(bn // chunk_size))
            destination = self.b_destination(row, column)
            copies.append((self.b_op, row, b.add(self.n0, b.mul(column, _const(chunk_size))), destination))
        return copies

    def b_destination(self, row: ir.Value, chunk: ir.Value) -> ir.Value:
        """Byte offset (i32) of 16-byte `chunk` of B's K row `row` (both i64) in a stage's B
        tile: blocks of BK columns, each BK swizzled rows (the layout ldmatrix and wgmma read)."""
        b = self.em.b
        bk, row_bytes = self.plan.block[2], self.plan.row_bytes
        per_block = _const(bk // self.plan.chunk)
        block, within = b.udiv(chunk, per_block), b.urem(chunk, per_block)
        return b.add(b.mul(b.trunc(block, I32), ir.Constant(I32, bk * row_bytes)),
                     swizzled(b, b.trunc(row, I32), b.trunc(within, I32), row_bytes))

    def _room(self, operand: Operand, row: ir.Value, column: ir.Value) -> tuple:
        """(room, width) of a copy at K tile 0: A: elements of the row left past the chunk (0
        for a row past M), width None; B: rows left past the chunk's row, and the chunk's
        columns within N."""
        b = self.em.b
        if operand is self.a:
            return b.select(b.icmp_signed("<", row, self.m), b.sub(self.k_extent(operand), column), _const(0)), None
        return b.sub(self.k_extent(operand), row), _clamp(b, b.sub(self.n, column), self.plan.chunk)

    def _valid(self, room: ir.Value, width: ir.Value | None, k0: ir.Value) -> ir.Value:
        """Elements of a copy inside the view at K offset `k0`."""
        b = self.em.b
        left = b.sub(room, k0)
        if width is None:
            return _clamp(b, left, self.plan.chunk)
        return b.select(b.icmp_signed(">", left, _const(0)), width, _const(0))

    def _copies(self, tid: ir.Value) -> list:
        """What a thread keeps through the K loop for each of its copies: (operand,
        destination, the 16-byte path's source address at K tile 0, room, width: see
        `_room`). Only these stay in registers; the narrower paths recompute the rest."""
        b = self.em.b
        copies = []
        for operand, row, column, destination in self._geometry(tid):
            source = _element(b, operand.view, (operand.row_axis, operand.column_axis), (row, column))
            copies.append((operand, destination, source, *self._room(operand, row, column)))
        return copies

    def _load(self, copies: list, kt: ir.Value, stage: ir.Value) -> None:
        """K tile `kt` of A and B into ring slot `stage`, every thread its copies: cp.async
        pieces of the widest size the operand allows (a uniform branch a size), else element
        by element."""
        b = self.em.b
        for operand, name in ((self.a, "a"), (self.b_op, "b")):
            k0 = b.mul(kt, _const(self.k_per_tile(operand)))
            base = self.stage_base(stage, name)
            mine = [copy for copy in copies if copy[0] is operand]
            (width, fits), narrower = operand.pieces[0], operand.pieces[1:]
            if known(fits):
                self.wide_copies(operand, mine, k0, base, width)
                continue
            with b.if_else(fits) as (wide, other):
                with wide:
                    self.wide_copies(operand, mine, k0, base, width)
                with other:
                    self._narrow_copies(operand, mine, k0, base, narrower)

    def wide_copies(self, operand: Operand, mine: list, k0: ir.Value, base: ir.Value, width: int) -> None:
        """The operand's copies `mine` (see `_copies`) at K offset `k0` as pieces of the
        widest `width` its view allows, each zero-filled past the view's bounds."""
        self._kept_copies(operand, mine, k0, base, width)

    def _kept_copies(self, operand: Operand, mine: list, k0: ir.Value, base: ir.Value, width: int) -> None:
        """`mine` at K offset `k0` as unrolled cp.async pieces of `width` bytes from the
        addresses kept through the K loop."""
        b = self.em.b
        for _, destination, source, room, columns in mine:
            self._pieces(operand, source, k0, self._valid(room, columns, k0), b.add(base, destination), width)

    def _narrow_copies(self, operand: Operand, mine: list, k0: ir.Value, base: ir.Value, pieces: tuple) -> None:
        """The operand's copies of a view whose rows are not 16-byte aligned: 8- or 4-byte
        cp.async pieces where the view allows them (odd-sized row lengths, e.g. K = 3900 of
        f16, take them on every K tile, so they keep the 16-byte path's addresses and
        straight-line code), else element by element."""
        b = self.em.b
        if not pieces:
            self._element_copies(operand, len(mine), k0, base)
            return
        (width, fits), narrower = pieces[0], pieces[1:]
        with b.if_else(fits) as (wide, other):
            with wide:
                self._kept_copies(operand, mine, k0, base, width)
            with other:
                self._narrow_copies(operand, mine, k0, base, narrower)

    def _element_copies(self, operand: Operand, count: int, k0: ir.Value, base: ir.Value) -> None:
        """The operand's copies of a misaligned or strided view, element by element in a
        rolled loop (one copy of their code, not one a copy: they are rare) that recomputes
        each copy's geometry: copy `index` is the operand's first copy of thread tid + index
        · threads."""
        b = self.em.b

        def copy(index: ir.Value) -> None:
            thread = b.add(opaque(b, self.tid), b.mul(index, _const(self.plan.threads)))
            _, row, column, destination = next(g for g in self._geometry(thread) if g[0] is operand)
            room, columns = self._room(operand, row, column)
            valid = self._valid(room, columns, k0)
            row, column = (row, b.add(column, k0)) if operand is self.a else (b.add(row, k0), column)
            self._copy_elements(operand, (operand.row_axis, operand.column_axis), row, column, valid,
                                b.add(base, destination))
        self.em.loop(_const(0), opaque(b, _const(count)), copy, name="copy")

    def _pieces(self, operand: Operand, source, k0, valid, target, width: int) -> None:
        """A copy at K offset `k0` (K moves A's source BK elements along its row, B's BK rows
        down) as COPY_BYTES / `width` cp.async pieces of `width` bytes, zero-filled past
        `valid` elements: unrolled up to UNROLLED_PIECES, else a rolled loop."""
        b = self.em.b
        along = operand.column_axis if operand is self.a else operand.row_axis
        moved = b.gep(source, [b.mul(k0, operand.view.strides[along])])
        base = b.gep(operand.view.ptr, [operand.view.offset])
        valid_bytes = b.mul(valid, _const(self.plan.element_bytes))

        def piece(number: ir.Value) -> None:
            inside = _clamp(b, b.sub(valid_bytes, b.mul(number, _const(width))), width)
            start = b.select(b.icmp_signed(">", inside, _const(0)),
                             b.gep(moved, [b.mul(number, _const(width // self.plan.element_bytes))]), base)
            cp_async(b, b.add(target, b.trunc(b.mul(number, _const(width)), I32)), start, b.trunc(inside, I32), width)
        pieces = COPY_BYTES // width
        if pieces > UNROLLED_PIECES:
            self.em.loop(_const(0), opaque(b, _const(pieces)), piece, name="piece")
            return
        for number in range(pieces):
            piece(_const(number))

    def _copy_elements(self, operand, axes, row, column, valid, destination) -> None:
        b = self.em.b
        # A rolled loop (its trip count hidden from the unroller): unrolled, the element
        # copies of a thread's chunks kept every address live at once and spilled.
        def element(lane):
            value = self._element_or_zero(operand, axes, row, b.add(column, lane), b.icmp_signed("<", lane, valid))
            offset = b.trunc(b.mul(lane, _const(self.plan.element_bytes)), I32)
            store_shared(b, b.add(destination, offset), value)
        self.em.loop(_const(0), opaque(b, _const(self.plan.chunk)), element, name="lane")

    def _element_or_zero(self, operand, axes, row, column, inside) -> ir.Value:
        b = self.em.b
        before = b.block
        with b.if_then(inside):
            loaded = b.load(_element(b, operand.view, axes, (row, column)))
            if loaded.type == F32:
                loaded = b.bitcast(loaded, I32)
            then_block = b.block
        merged = b.phi(loaded.type)
        merged.add_incoming(ir.Constant(loaded.type, 0), before)
        merged.add_incoming(loaded, then_block)
        return merged

    # ---- epilogue ----------------------------------------------------------------------------
    def epilogue_thread(self) -> ir.Value:
        """tid.x for the epilogue's coordinates, opaque to LLVM: its per-element offsets would
        otherwise be hoisted out of the tile loop and stay in registers through the K loop."""
        return opaque(self.em.b, self.tid)

    def store_pairs(self, pairs: list, coordinates, offsets=None) -> None:
        """The epilogue: pair p of `pairs` (two accumulator elements of one row, see
        `store_pair`) at tile row and column `coordinates(p)` (i64, even column; p an i64
        value). A tile wholly inside C (most of them) stores each pair with one unconditional
        two-element store; an edge tile goes through a local array and one rolled loop of
        masked stores: one copy of the bounds checks, not one a pair (they were a third of
        the tiled matmul's compile time). `offsets(p)` (Python ints, where the variant
        knows them): pair p's place relative to pair 0's, which lets the whole tile store
        from one pointer a row (`_store_rows`)."""
        b = self.em.b
        bm, bn, _ = self.plan.block
        whole = b.and_(self.c_pairs, b.and_(b.icmp_signed("<=", b.add(self.m0, _const(bm)), self.m),
                                            b.icmp_signed("<=", b.add(self.n0, _const(bn)), self.n)))
        with b.if_else(whole) as (inside, edge):
            with inside:
                if offsets is not None:
                    self._store_rows(pairs, coordinates, offsets)
                for number, values in enumerate(pairs if offsets is None else ()):
                    row, column = coordinates(_const(number))
                    words = [self._stored(value) for value in values]
                    self._store_vector(words, b.add(self.m0, row), b.add(self.n0, column))
            with edge:
                self._store_edge(pairs, coordinates)

    def _store_rows(self, pairs: list, coordinates, offsets) -> None:
        """A whole tile's pairs as one asm (`asm_block.py`): one element pointer a row of the
        thread's, each pair a two-element store at a constant column past it (C's columns are
        contiguous here: `c_pairs`), instead of each pair's full address arithmetic; an f32
        pair narrowed to f16 or bf16 by the IR's one cast converts in the asm too
        (`cvt.rn.f16x2.f32`, as LLVM selects a pair of `fptrunc`s)."""
        b = self.em.b
        c = self.plan.contraction
        row, column = coordinates(_const(0))
        origin = _element(b, self.c_view, c.c_axes, (b.add(self.m0, row), b.add(self.n0, column)))
        row_stride = self.c_view.strides[c.c_axes[0]]
        size = _BYTES[c.out_dtype]
        block = AsmBlock(b)
        rows: dict = {}
        for number, values in enumerate(pairs):
            down, right = offsets(number)
            if down not in rows:
                rows[down] = block.operand(b.ptrtoint(b.gep(origin, [b.mul(_const(down), row_stride)]), I64))
            at = f"[{rows[down]}+{right * size}]"
            if c.acc_dtype == "f32" and c.out_dtype in ("f16", "bf16") and tuple(c.casts) == (c.out_dtype,):
                word = block.registers("b32", 1)[0]
                low, high = (block.operand(value) for value in values)
                block.line(f"cvt.rn.{c.out_dtype}x2.f32 {word}, {high}, {low}; st.b32 {at}, {word};")
            else:
                low, high = (block.operand(self._stored(value)) for value in values)
                block.line(f"st.v2.b{8 * size} {at}, {{{low}, {high}}};")
        block.emit()

    def _store_edge(self, pairs: list, coordinates) -> None:
        """An edge tile: its pairs into a local array (one asm of four-element stores), then
        one rolled loop of masked pair stores."""
        em = self.em
        b = em.b
        held = local_array(em, ir.ArrayType(pairs[0][0].type, 2 * len(pairs)))
        # (an f16 accumulator's halves as their bits: the asm's 16-bit registers)
        values = [b.bitcast(value, I16) if isinstance(value.type, ir.HalfType) else value
                  for pair in pairs for value in pair]
        bits = 32 if values[0].type == F32 else values[0].type.width
        block = AsmBlock(b)
        at = block.operand(b.ptrtoint(held, I64))
        for first in range(0, len(values), 4):
            words = [block.operand(value) for value in values[first:first + 4]]
            block.line(f"st.local.v4.b{bits} [{at}+{first * bits // 8}], {{{', '.join(words)}}};")
        block.emit()

        def pair(number: ir.Value) -> None:
            values = tuple(b.load(b.gep(held, [ir.Constant(I32, 0), b.add(b.mul(b.trunc(number, I32), ir.Constant(I32, 2)),
                                                                            ir.Constant(I32, lane))], inbounds=True))
                           for lane in range(2))
            self.store_pair(values, *coordinates(number))
        em.loop(_const(0), _const(len(pairs)), pair, name="pair")

    def _store_vector(self, words: list, m: ir.Value, n: ir.Value) -> None:
        """Two converted elements at C[m, n], C[m, n + 1] with one store (C pairs allowed, both inside)."""
        c = self.plan.contraction
        self._store_words(words, _element(self.em.b, self.c_view, c.c_axes, (m, n)))

    def _store_words(self, words: list, element: ir.Value) -> None:
        """Two converted elements at `element` and the one after it, with one store."""
        b = self.em.b
        vector = ir.VectorType(words[0].type, 2)
        pair = b.insert_element(b.insert_element(ir.Constant(vector, None), words[0], ir.Constant(I32, 0)),
                                words[1], ir.Constant(I32, 1))
        b.store(pair, b.bitcast(element, vector.as_pointer()), align=2 * _BYTES[self.plan.contraction.out_dtype])

    def store_pair(self, values: tuple, row: ir.Value, column: ir.Value) -> None:
        """Two accumulator elements of one row (f32, or half for an f16 accumulator), at tile
        columns `column` (even) and `column` + 1, through the IR's casts into C, masked by C's
        bounds: one two-element store where C's columns are contiguous and the pair is
        aligned and inside, else one store each."""
        b = self.em.b
        c = self.plan.contraction
        m, n = b.add(self.m0, row), b.add(self.n0, column)
        words = [self._stored(value) for value in values]
        row_inside = b.icmp_signed("<", m, self.m)
        pair_inside = b.and_(row_inside, b.icmp_signed("<", b.add(n, _const(1)), self.n))
        with b.if_else(b.and_(pair_inside, self.c_pairs)) as (paired, single):
            with paired:
                self._store_vector(words, m, n)
            with single:
                for lane, word in enumerate(words):
                    column_lane = b.add(n, _const(lane))
                    with b.if_then(b.and_(row_inside, b.icmp_signed("<", column_lane, self.n))):
                        b.store(word, _element(b, self.c_view, c.c_axes, (m, column_lane)))

    def _stored(self, value: ir.Value) -> ir.Value:
        c = self.plan.contraction
        converted = cast_chain(self.em.b, value, c.acc_dtype, c.casts)
        return self.em.b.bitcast(converted, I16) if c.out_dtype == "f16" else converted

    def _pairs(self) -> ir.Value:
        """C's columns are contiguous and every even column is aligned for a two-element store."""
        b = self.em.b
        c = self.plan.contraction
        view, size = self.c_view, _BYTES[c.out_dtype]
        start = b.add(b.ptrtoint(view.ptr, I64), b.mul(view.offset, _const(size)))
        aligned = b.icmp_unsigned("==", b.and_(start, _const(2 * size - 1)), _const(0))
        unit = b.icmp_signed("==", view.strides[c.c_axes[1]], _const(1))
        even_rows = b.icmp_signed("==", b.and_(view.strides[c.c_axes[0]], _const(1)), _const(0))
        return b.and_(aligned, b.and_(unit, even_rows))


_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4}


def _widen(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """An f16 (half) or bf16 (its i16 bits) value as the f32 that holds it exactly."""
    if dtype == "f32":
        return value
    if dtype == "f16":
        return b.fpext(value, F32)
    return b.bitcast(b.shl(b.zext(value, I32), ir.Constant(I32, 16)), F32)


def _narrow(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """f32 -> dtype, correctly rounded (`cvt.rn`: RNE, overflow to infinity, no FTZ)."""
    if dtype == "f32":
        return value
    if dtype == "f16":
        return b.fptrunc(value, ir.HalfType())
    return asm(b, "cvt.rn.bf16.f32 $0, $1;", "=h,f", I16, [value])


def cast_chain(b: ir.IRBuilder, value: ir.Value, dtype: str, casts: tuple) -> ir.Value:
    """The epilogue's casts between f32, f16 and bf16, each one correctly rounded, through
    f32, which holds every f16 and bf16 value exactly; f16 values are `half`, bf16 its bits."""
    for target in casts:
        if target != dtype:
            value, dtype = _narrow(b, _widen(b, value, dtype), target), target
    return value


# operand dtype -> accumulators: the tensor cores' (f16, bf16; 8-bit floats widened exactly
# to f16 on sm_90a, wgmma_tma.py) and the CUDA cores' (f32)
TILED_OPERANDS = {"f16": {"f32", "f16"}, "bf16": {"f32"}, "f32": {"f32"}, "f8e4m3fn": {"f32", "f16"},
                  "f8e5m2": {"f32", "f16"}, "i8": {"i32"}}
# The f32 K step whose shared-memory reads are all ld.shared.v4 (`simt_fragments.py`), the
# default since session 7's H200 round (0.82x cuBLAS SGEMM at 4096^3 with K steps of 32, the
# scalar step "fma.f32" of `simt_matmul.py` 0.73x: bench/gpu_sgemm.py)
SIMT_VECTOR = "fma.f32.v4"
# Operands only the sm_90a copy-engine form runs (8-bit floats widened to f16, i8 with B
# transposed for the integer wgmma): elsewhere, and for views without maps, the generic mapping
COPY_ENGINE_ONLY = ("f8e4m3fn", "f8e5m2", "i8")


def plan_mma(kernel, arch: str) -> MmaPlan | None:
    """The tiled-contraction plan for `kernel` on `arch`, or None when it is not a tiled
    contraction of these dtypes (f64 contractions, and 8-bit operands before sm_90a, keep
    the generic mapping)."""
    from .tile_contraction import NoMatch, match_tile_contraction
    try:
        contraction = match_tile_contraction(kernel)
    except NoMatch:
        return None
    if contraction.acc_dtype not in TILED_OPERANDS.get(contraction.operand_dtype, ()):
        return None
    if contraction.operand_dtype == "f32":     # no TF32: CUDA cores, FMA, register tiles
        return MmaPlan(contraction, SIMT_VECTOR, (128, 128, 32), (8, 1), stages=3, resident=1)
    if arch == "sm_90a":
        from .wgmma_tma import tma_plan
        if contraction.operand_dtype in COPY_ENGINE_ONLY:    # views without maps: the generic mapping
            return tma_plan(kernel, contraction, None)
        return tma_plan(kernel, contraction,
                        MmaPlan(contraction, "wgmma.m64n128k16", (128, 128, 32), (2, 1), stages=4))
    if contraction.operand_dtype in COPY_ENGINE_ONLY:
        return None
    # without SLSR and NaryReassociate: the same cubin, less CPU to PTX (docs/gpu.md, "Compile pipeline")
    return MmaPlan(contraction, "mma.sync.m16n8k16", (128, 128, 32), (2, 4), stages=3, resident=1, straight_line=False)


def emit_tile_contraction(em, plan: MmaPlan) -> None:
    from .mma_sync import MmaSync
    from .simt_fragments import SimtFragments, SimtTiles
    from .simt_matmul import Simt
    from .wgmma import Wgmma
    from .wgmma_tma import TmaEmitter, TmaPlan
    if isinstance(plan, TmaPlan):
        TmaEmitter(em, plan, Wgmma()).emit()
        return
    if plan.instruction == SIMT_VECTOR:
        SimtTiles(em, plan, SimtFragments()).emit()
        return
    variant = Wgmma() if plan.instruction.startswith("wgmma") else Simt() if plan.instruction == "fma.f32" \
        else MmaSync()
    TileEmitter(em, plan, variant).emit()
