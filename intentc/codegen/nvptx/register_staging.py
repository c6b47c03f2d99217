"""Operand tiles staged through registers, for contractions whose operands must be decoded
before the tensor cores (or the CUDA cores) can read them (docs/gpu.md, "Structured
contractions"): MX elements and scales (`tile_structured.py`), compressed sparse values
and their metadata (`tile_sparse.py`).

The dense mapping's tile walk, epilogue and shared-memory layout (`tile_matmul.py`) are
kept; the K loop differs: each K step every thread loads its raw operand bytes into
registers (`fetch`, one 16-byte vector load a run where the view is contiguous and
aligned, else element by element, zero past the edge), and the next step's loads are
issued before the step's MMAs, so their latency hides behind them; the step's bytes are
decoded and stored (`deposit`) into a ring of two slots in the dense swizzled layout, one
barrier a step. A subclass says what a step fetches, deposits and computes.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import F32, I8, I16, I32, I64
from .cta import barrier, sreg
from .ptx_asm import asm
from .asm_block import AsmBlock
from .tile_matmul import TileEmitter, _ceil, _const, known, local_array, swizzled

if TYPE_CHECKING:
    from .tile_structured import StructuredPlan

RUN_BYTES = 16            # the widest load a thread makes


def i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def store_shared_words(b: ir.IRBuilder, address: ir.Value, words: list) -> None:
    """Four (or one) b32 words to a 16-byte (4-byte) aligned shared address."""
    if len(words) == 1:
        asm(b, "st.shared.b32 [$0], $1;", "r,r,~{memory}", ir.VoidType(), [address, *words])
        return
    asm(b, "st.shared.v4.b32 [$0], {$1, $2, $3, $4};", "r,r,r,r,r,~{memory}", ir.VoidType(), [address, *words])


def shared_pointer(b: ir.IRBuilder, address: ir.Value, type_: ir.Type) -> ir.Value:
    return b.inttoptr(address, type_.as_pointer(3))


def byte_of(b: ir.IRBuilder, words: list, index: int) -> ir.Value:
    """Byte `index` of a little-endian run of i32 words, as an i32."""
    return b.and_(b.lshr(words[index // 4], i32(8 * (index % 4))), i32(255))



# `RegisterStaged.fragments`' finish for a plain sum: acc + the fragment's sum (`add.rn.f32`, as LLVM's fadd)
ADD_SUM = "add.rn.f32 {0}, {2}, {1};"

class RegisterStaged(TileEmitter, ABC):
    """The K loop of register-staged operands; subclasses define `steps`, `fetch(step)`
    (global -> `self.raw`, with `load_run`), `deposit(stage)` (-> shared, returning an i1 the CTA ors at the
    step's barrier, or None) and `compute(stage, step, flag)`."""
    plan: StructuredPlan

    def __init__(self, em, plan, variant, m: ir.Value, n: ir.Value):
        self.em, self.plan, self.variant = em, plan, variant
        self.c_view = em.env[plan.contraction.c]
        self.m, self.n = m, n

    def emit(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        bm, bn, _ = plan.block
        self.shared = self._shared_memory()
        self.tid = b.zext(sreg(em, "tid.x"), I64)
        self.c_pairs = self._pairs()
        self.prepare()
        tiles_m, tiles_n = _ceil(b, self.m, bm), _ceil(b, self.n, bn)
        self.acc = self.variant.accumulators(em, plan)
        start, stride = b.zext(sreg(em, "ctaid.x"), I64), b.zext(sreg(em, "nctaid.x"), I64)
        em.loop(start, b.mul(tiles_m, tiles_n), lambda tile: self._tile(tile, tiles_m, tiles_n), stride, name="tile")

    def prepare(self) -> None:
        """Per-kernel values (alignment flags, register slots) before the tile loop."""

    @abstractmethod
    def steps(self) -> ir.Value:
        """The K loop's trip count (i64)."""

    @abstractmethod
    def fetch(self, step: ir.Value) -> None:
        """Step `step`'s raw operand bytes into this thread's registers."""

    @abstractmethod
    def deposit(self, stage: ir.Value) -> ir.Value | None:
        """The registers decoded into ring slot `stage`; an i1 for the CTA to or, or None."""

    @abstractmethod
    def compute(self, stage: ir.Value, step: ir.Value, flag: ir.Value | None) -> None:
        """The slot's products into the accumulator (`flag`: the CTA's or of deposit's i1s)."""

    def extra_base(self, stage: ir.Value) -> ir.Value:
        """Shared address of the stage's bytes after the operand tiles (scales, selections)."""
        b = self.em.b
        base = b.add(self.shared, b.mul(stage, i32(self.plan.stage_bytes)))
        return b.add(base, i32(self.plan.stage_bytes - self.plan.extra_bytes))

    # ---- the K loop --------------------------------------------------------------------------
    def _k_loop(self) -> None:
        em = self.em
        steps = self.steps()
        # from step -1, which only fetches step 0: one copy of the fetch's code, not a second
        # one before the loop
        em.loop(_const(-1), steps, lambda step: self._step(step, steps), name="kstep")

    def _step(self, step: ir.Value, steps: ir.Value) -> None:
        em = self.em
        b = em.b
        started = b.icmp_signed(">=", step, _const(0))
        stage = b.urem(b.trunc(step, I32), i32(self.plan.stages))
        flag_slot = None
        with b.if_then(started):
            flag = self.deposit(stage)
            if flag is not None:
                flag_slot = self.keep([flag])[0]
        # the next step's loads go out before the barrier: their latency overlaps its wait
        with b.if_then(b.icmp_signed("<", b.add(step, _const(1)), steps)):
            self.fetch(b.add(step, _const(1)))
        with b.if_then(started):
            if flag_slot is None:
                barrier(em)
                flag = None
            else:   # bar.red.or: the barrier, and whether any thread's flag is set
                vote = em.declare("llvm.nvvm.barrier0.or", I32, [I32])
                flag = b.icmp_unsigned("!=", b.call(vote, [b.zext(b.load(flag_slot), I32)]), i32(0))
            self.compute(stage, step, flag)

    def keep(self, values: list) -> list:
        """Fresh entry allocas holding `values` (raw registers carried to the next step)."""
        slots = [self.em.entry_alloca(v.type) for v in values]
        for slot, value in zip(slots, values):
            self.em.b.store(value, slot)
        return slots

    # ---- staged elements ---------------------------------------------------------------------
    def staged_a(self, stage: ir.Value, row: ir.Value, k: ir.Value) -> ir.Value:
        """Staged A element (row, k) of the stage, widened to f32."""
        b = self.em.b
        plan = self.plan
        chunk = plan.chunk
        at = b.add(swizzled(b, row, b.udiv(k, i32(chunk)), plan.row_bytes),
                   b.mul(b.urem(k, i32(chunk)), i32(plan.element_bytes)))
        return self._staged_value(b.add(self.stage_base(stage, "a"), at))

    def staged_b(self, stage: ir.Value, k: ir.Value, col: ir.Value) -> ir.Value:
        """Staged B element (k, col) of the stage, widened to f32."""
        b = self.em.b
        plan = self.plan
        bk, chunk = plan.block[2], plan.chunk
        within = b.urem(col, i32(bk))
        at = b.add(b.mul(b.udiv(col, i32(bk)), i32(bk * plan.row_bytes)),
                   b.add(swizzled(b, k, b.udiv(within, i32(chunk)), plan.row_bytes),
                         b.mul(b.urem(within, i32(chunk)), i32(plan.element_bytes))))
        return self._staged_value(b.add(self.stage_base(stage, "b"), at))

    def _staged_value(self, address: ir.Value) -> ir.Value:
        b = self.em.b
        if self.plan.element_bytes == 4:
            return b.load(shared_pointer(b, address, F32))
        return b.fpext(b.bitcast(b.load(shared_pointer(b, address, I16)), ir.HalfType()), F32)

    def staged_byte(self, address: ir.Value) -> ir.Value:
        b = self.em.b
        return b.zext(b.load(shared_pointer(b, address, I8)), I32)

    # ---- mma.sync fragments ------------------------------------------------------------------
    def fragment_coordinates(self, lanes: tuple, index: ir.Value | int) -> tuple:
        """(row, column) in the tile of accumulator register `index` (mma.sync's m16n8
        fragments (i, j), register r: row 16i + lane/4 + 8(r/2), column 8j + 2(lane%4) + r%2)."""
        b = self.em.b
        warp_m, warp_n, lane = lanes
        index = i32(index) if isinstance(index, int) else index
        fragment, register = b.udiv(index, i32(4)), b.urem(index, i32(4))
        i, j = b.udiv(fragment, i32(4)), b.urem(fragment, i32(4))
        row = b.add(b.add(b.mul(warp_m, i32(64)), b.udiv(lane, i32(4))),
                    b.add(b.mul(i, i32(16)), b.mul(b.udiv(register, i32(2)), i32(8))))
        col = b.add(b.add(b.mul(warp_n, i32(32)), b.mul(b.urem(lane, i32(4)), i32(2))),
                    b.add(b.mul(j, i32(8)), b.urem(register, i32(2))))
        return row, col

    def fragments(self, stage, lanes, finish: str, operands=lambda step, index: ()) -> None:
        """Each m16n8 fragment's MMAs over the stage's K from zero, each register's sum then
        combined into its accumulator in the same asm by PTX `finish` (`MmaSync.step`)."""
        self.variant.step(self, stage, lanes, finish, operands)

    def add_registers(self, count: int, source: ir.Value, target: ir.Value | None = None, lanes: int = 4) -> None:
        """target[e] += source[e] for the first `count` registers (`target`: the accumulators),
        `lanes` a vector `fadd` (the same adds, fewer instructions to build; 1: one each): for
        the CUDA cores' registers, which SROA keeps as vectors of four (their K step's FMAs)."""
        b = self.em.b
        kind = ir.VectorType(F32, lanes) if lanes > 1 else F32

        def run(array, first):
            slot = self.acc_slot(first, array)
            return b.bitcast(slot, kind.as_pointer(slot.type.addrspace)) if lanes > 1 else slot
        for first in range(0, count, lanes):
            into = run(target or self.acc, first)
            b.store(b.fadd(b.load(into, align=4), b.load(run(source, first), align=4)), into, align=4)

    def add_local(self, count: int, source: ir.Value) -> None:
        """acc[e] += source[e] (`add.rn.f32`) for the first `count` accumulator registers of
        the tensor cores, from a local array (`per_register`'s) in one asm (`asm_block.py`:
        sixteen `ld.local.v4`, then the adds), so that the registers stay scalars for LLVM
        as the K step's asm uses them (vector adds made SROA keep vectors of four, taken
        apart and rebuilt around every asm)."""
        b = self.em.b
        slots = [self.acc_slot(e) for e in range(count)]
        block = AsmBlock(b, [b.load(slot) for slot in slots])
        at = block.operand(b.ptrtoint(source, I64))
        for first in range(0, count, 4):
            loaded = block.registers("f32", 4)
            block.line(f"ld.local.v4.f32 {{{', '.join(loaded)}}}, [{at}+{4 * first}];")
            for e, value in enumerate(loaded, start=first):
                block.line(ADD_SUM.format(block.result(e), value, block.accumulator(e)))
        for slot, value in zip(slots, block.emit()):
            b.store(value, slot)

    def acc_slot(self, index, accumulators=None) -> ir.Value:
        index = i32(index) if isinstance(index, int) else index
        return self.em.b.gep(accumulators or self.acc, [i32(0), index], inbounds=True)

    def per_register(self, count: int, visit, name: str) -> ir.Value:
        """A local f32 array of `count`, element e set by visit(e) (i32; None: left 0), in a
        rolled loop: for the rare exact paths, whose code would otherwise repeat a register."""
        em = self.em
        b = em.b
        values = local_array(em, ir.ArrayType(F32, count))

        def element(index64):
            index = b.trunc(index64, I32)
            slot = self.acc_slot(index, values)
            b.store(ir.Constant(F32, 0.0), slot)
            visit(index, slot)
        em.loop(_const(0), _const(count), element, name=name)
        return values


# ---- global memory into registers ------------------------------------------------------------
def wide(em, view, run_bytes: int) -> ir.Value:
    """The view is contiguous along its last axis and every run of `run_bytes` a thread
    loads at a multiple of `run_bytes` along it is aligned to `run_bytes` (start, strides)."""
    b = em.b
    size = _bytes(view)
    # element 0 16-byte aligned (`aligned16`) and constant strides: a constant (`load_run`)
    start = _const(0) if view.aligned16 and run_bytes <= 16 else \
        b.add(b.ptrtoint(view.ptr, I64), b.mul(view.offset, _const(size)))
    misaligned = start
    for stride in view.strides[:-1]:
        misaligned = b.or_(misaligned, b.mul(stride, _const(size)))
    aligned = b.icmp_unsigned("==", b.and_(misaligned, _const(run_bytes - 1)), _const(0))
    return b.and_(aligned, b.icmp_signed("==", view.strides[-1], _const(1)))

def load_run(em, view, coordinates: tuple, inside: ir.Value, count: ir.Value, elements: int,
             wide: ir.Value) -> list:
    """`elements` consecutive elements along the view's last axis from `coordinates`, as
    little-endian i32 words; 0 where `inside` fails and past the first `count` elements.
    Vector loads of up to 16 bytes where `wide` holds and the whole run is inside."""
    b = em.b
    size = _bytes(view)
    count_words = max(1, elements * size // 4)
    before = b.block
    whole = b.and_(wide, b.icmp_signed(">=", count, _const(elements)))
    with b.if_then(inside):
        if known(whole):        # (the specialization's facts: no element path)
            loaded = vector_run(em, view, coordinates, elements * size)
        else:
            loaded = _either_run(em, view, coordinates, count, elements, whole)
        inside_block = b.block
    words = []
    for word in loaded:
        merged = b.phi(I32)
        merged.add_incoming(i32(0), before)
        merged.add_incoming(word, inside_block)
        words.append(merged)
    assert len(words) == count_words
    return words

def _either_run(em, view, coordinates: tuple, count: ir.Value, elements: int, whole: ir.Value) -> list:
    """`load_run`'s words: vector loads where `whole`, else element by element."""
    b = em.b
    with b.if_else(whole) as (fast, slow):
        with fast:
            fast_words = vector_run(em, view, coordinates, elements * _bytes(view))
            fast_block = b.block
        with slow:
            slow_words = _element_run(em, view, coordinates, count, elements)
            slow_block = b.block
    loaded = []
    for word_fast, word_slow in zip(fast_words, slow_words):
        merged = b.phi(I32)
        merged.add_incoming(word_fast, fast_block)
        merged.add_incoming(word_slow, slow_block)
        loaded.append(merged)
    return loaded


def vector_run(em, view, coordinates: tuple, run_bytes: int) -> list:
    b = em.b
    words = []
    for offset in range(0, run_bytes, RUN_BYTES):
        width = min(RUN_BYTES, run_bytes - offset) // 4
        *lead, last = coordinates
        here = view_address(em, view, (*lead, b.add(last, _const(offset // _bytes(view)))))
        vector = ir.VectorType(I32, width)
        pointer = b.addrspacecast(b.bitcast(here, vector.as_pointer()), vector.as_pointer(1))
        loaded = b.load(pointer, align=4 * width)
        words += [b.extract_element(loaded, i32(i)) for i in range(width)]
    return words

def _element_run(em, view, coordinates: tuple, count: ir.Value, elements: int) -> list:
    """The run element by element, in a rolled loop (the rare path of unaligned or strided
    views: one copy of its code, not one an element), each element or-ed into its word."""
    b = em.b
    size = _bytes(view)
    integer = ir.IntType(8 * size)
    slots = [em.entry_alloca(I32) for _ in range(max(1, elements * size // 4))]
    for slot in slots:
        b.store(i32(0), slot)
    *lead, last = coordinates

    def element(j):
        here = b.bitcast(view_address(em, view, (*lead, b.add(last, j))), integer.as_pointer())
        value = b.zext(load_or_zero(em, here, b.icmp_signed("<", j, count)), I32)
        offset = b.trunc(b.mul(j, _const(size)), I32)
        placed = b.shl(value, b.mul(b.urem(offset, i32(4)), i32(8)))
        for number, slot in enumerate(slots):
            mine = b.icmp_unsigned("==", b.udiv(offset, i32(4)), i32(number))
            b.store(b.or_(b.load(slot), b.select(mine, placed, i32(0))), slot)
    em.loop(_const(0), _const(elements), element, name="element")
    return [b.load(slot) for slot in slots]


def load_or_zero(em, pointer: ir.Value, inside: ir.Value) -> ir.Value:
    b = em.b
    before = b.block
    with b.if_then(inside):
        loaded = b.load(pointer)
        then = b.block
    merged = b.phi(loaded.type)
    merged.add_incoming(ir.Constant(loaded.type, 0), before)
    merged.add_incoming(loaded, then)
    return merged

def view_address(em, view, coordinates: tuple) -> ir.Value:
    b = em.b
    offset = view.offset
    for coordinate, stride in zip(coordinates, view.strides):
        offset = b.add(offset, b.mul(coordinate, stride))
    return b.gep(view.ptr, [offset])


def _bytes(view) -> int:
    return {"u8": 1, "i8": 1, "f16": 2, "bf16": 2, "f32": 4}[view.dtype]
