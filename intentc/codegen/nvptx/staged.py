"""Lowering one stage of a staged program (`stages.py`): the NVPTX hooks with the top level
run chunk by chunk, each chunk on one CTA, and the grid-wide ops' partials, combinations and
resolved values through scratch memory.

In a `partials` or `final` stage, CTA b runs chunks b, b + nctaid, ...; in each, thread t
owns K coordinates (the slots) for every op, so element-wise chains stay thread-local (as
in the CTA mapping's register form, `cta.py`): chunk·T·K + t·K + j with a scan (one
block scan a chunk), else chunk·T·K + j·T + t (each slot one coalesced access a warp).
A chunk wholly inside the domain runs without per-slot guards; the last one with them. The scratch
pointer is the argument word after the kernel's own (word `abi_words`); grid-wide op
`row` keeps its word for chunk c at scratch[row·chunks + c].
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ...ir.nodes import Kernel, Op
from ...ir.types import TensorType
from ...ir.ops.reduction import COMBINE
from ...passes.ir_walk import value_types
from ..llvm.conversion import convert
from ..llvm.pointwise import binary
from ..llvm.reduction import arg_reduce_combine, combine_builtin, generic_reduce_combine, identity_const, scan_neutral
from ..llvm.types import I1, I32, I64, register_type
from ..llvm.values import Body, ElementAt, Group, Lazy, Registers, Scalar, Shape, Tensor
from .cta import CtaPlan, block_combine, from_word, slot_coordinate, sreg, to_word, unravel
from .cta_scan import block_scan
from .hooks import NvptxHooks
from .mapping import Mapping
from .cta_reduce import block_combine_tuple
from .stages import CONTRACTIONS, THREADS, TUPLE_REDUCTIONS, GridWide, Stage, StagePlan, accumulator_of, kind_of



def chunk_plan(plan: StagePlan) -> CtaPlan:
    """The chunk layout as the CTA mapping's plan (its slot rule and block helpers): K slots a
    thread in groups of V consecutive coordinates."""
    return CtaPlan(None, frozenset(), THREADS, plan.slots, plan.chunk, plan.vector)  # type: ignore[arg-type]


class StagedHooks(NvptxHooks):
    def __init__(self, mapping: Mapping, plan: StagePlan, stage: Stage, kernel: Kernel, abi_words: int):
        super().__init__(mapping)
        self.stages, self.stage, self.abi_words = plan, stage, abi_words
        self.extra_argument_words = 1 if plan.grid_wide else 0     # the scratch pointer
        self.ops = {op.results[0]: op for op in kernel.body if op.results}
        self.types = value_types(kernel)
        self.top = False               # lowering the top level inside the chunk loop
        self.current_op: Op | None = None
        self.layout = chunk_plan(plan)
        self.slots = plan.slots
        self.guarded = True            # the chunk may reach past the domain
        self.scratch = self.total = self.chunks = self.chunk = self.chunk_start = None

    # ---- the stage's shape ------------------------------------------------------------------------
    def lower_top_level(self, em, ops, lower) -> None:
        b = em.b
        if self.stages.grid_wide:
            word = em.argument_word(self.abi_words)
            self.scratch = em.prologue.inttoptr(word, I64.as_pointer())
        self.total = em.element_count([em.extent(e) for e in self.stages.domain])
        chunk_size = ir.Constant(I64, self.stages.chunk)
        full = b.udiv(b.add(self.total, ir.Constant(I64, self.stages.chunk - 1)), chunk_size)
        # at least one chunk: an empty domain still resolves its reductions and makes its scalar writes
        self.chunks = b.select(b.icmp_unsigned("<", full, ir.Constant(I64, 1)), ir.Constant(I64, 1), full)
        if self.stage.role == "combine":
            for grid_wide in self._serving():
                self._combine(em, grid_wide)
            return

        def lowered(guarded: bool) -> Callable[[], None]:
            def run() -> None:
                self.top, self.guarded = True, guarded
                try:
                    with em.scope():
                        lower(em, ops)
                finally:
                    self.top = False
            return run

        def chunk(c):
            # a chunk wholly inside the domain (all but the last) runs without per-slot guards
            self.chunk, self.chunk_start = c, b.mul(c, chunk_size)
            if not self.stages.split:
                lowered(True)()
                return
            inside = b.icmp_unsigned("<=", b.add(self.chunk_start, chunk_size), self.total)
            em.if_then(inside, lowered(False), lowered(True))
        em.loop(b.zext(sreg(em, "ctaid.x"), I64), self.chunks, chunk, b.zext(sreg(em, "nctaid.x"), I64),
                name="chunk")

    def _serving(self) -> list[GridWide]:
        return [g for g in self.stages.grid_wide if g.depth == self.stage.depth]

    def _word(self, em, grid_wide: GridWide, chunk: ir.Value, component: int = 0) -> ir.Value:
        index = em.b.add(em.b.mul(ir.Constant(I64, grid_wide.row + component), self.chunks), chunk)
        return em.b.gep(self.scratch, [index], inbounds=True)

    def _store_words(self, em, grid_wide: GridWide, chunk: ir.Value, values: list[ir.Value]) -> None:
        """A partial's components into their words of `chunk`, by thread 0."""
        def store() -> None:
            for component, value in enumerate(values):
                em.b.store(to_word(em, value), self._word(em, grid_wide, chunk, component))
        self._on_thread_zero(em, store)

    def _on_thread_zero(self, em, body: Callable[[], None]) -> None:
        with em.b.if_then(em.b.icmp_unsigned("==", sreg(em, "tid.x"), ir.Constant(I32, 0))):
            body()

    # ---- which ops this stage lowers --------------------------------------------------------------
    def substitute(self, em, op: Op) -> object | None:
        self.current_op = op
        if op.name == "write" and self.stage.role != "final":
            return ()                    # every write is the final stage's
        grid_wide = self.stages.by_name(op.results[0]) if op.results else None
        if grid_wide is None or (grid_wide.depth == self.stage.depth and self.stage.role == "partials"):
            return None
        dtype = self._dtype(op.results[0])
        if grid_wide.depth > self.stage.depth:     # not computed yet; nothing this stage runs needs it
            undefined = [Scalar(self._dtype(name), (), ir.Constant(register_type(self._dtype(name)), ir.Undefined))
                         for name in op.results]
            if grid_wide.op in TUPLE_REDUCTIONS:
                return undefined
            if grid_wide.op != "scan":
                return undefined[0]
            return Lazy(dtype, em.shape_of(op.result_types[0]), lambda e, idx: undefined[0].value)
        if grid_wide.op in TUPLE_REDUCTIONS:
            return self._resolved_tuple(em, op, grid_wide)
        if grid_wide.op != "scan":                 # combined into the chunk-0 word
            return Scalar(dtype, (), self._joined_init(em, op, self._load(em, grid_wide, ir.Constant(I64, 0), dtype),
                                                       dtype))
        return None                                # a resolved scan: `scan` below

    def _resolved_tuple(self, em, op: Op, grid_wide: GridWide) -> list[Scalar]:
        """A tuple reduction's results from its chunk-0 words: arg_reduce's value and position;
        generic_reduce's components where a member was present, else its identities (§6: only
        an empty domain gives them)."""
        first = ir.Constant(I64, 0)
        dtypes = [self._dtype(name) for name in op.results]
        values = [self._load(em, grid_wide, first, dtype, component) for component, dtype in enumerate(dtypes)]
        if op.name == "arg_reduce":
            return [Scalar(dtype, (), value) for dtype, value in zip(dtypes, values)]
        seen = from_word(em, em.b.load(self._word(em, grid_wide, first, len(dtypes))), I1)
        identities = [em.env[name].at(em, []) for name in op.group("init") or ()]
        return [Scalar(dtype, (), em.b.select(seen, value, identity))
                for dtype, value, identity in zip(dtypes, values, identities)]

    @staticmethod
    def _joined_init(em, op: Op, total: ir.Value, acc: str) -> ir.Value:
        """A contraction's sum with its `init` as one more member (any order, §5.3), as the
        contraction's own lowering joins it."""
        init = op.group("init") if op.name in CONTRACTIONS else ()
        if not init:
            return total
        start = em.env[init[0]]
        return combine_builtin(em, op, "sum", total, convert(em, op, start.at(em, []), start.dtype, acc), acc)

    # ---- the chunk's coordinates ------------------------------------------------------------------
    def for_each(self, em, shape: Shape, body: Body, group: Group | None = None, lane_safe: bool = False) -> None:
        if not self.top:
            em.serial_for_each(shape, body)
            return
        b = em.b
        if not shape:                  # a scalar write: once, by thread 0 of chunk 0
            first = b.icmp_unsigned("==", self.chunk, ir.Constant(I64, 0))
            with b.if_then(b.and_(first, b.icmp_unsigned("==", sreg(em, "tid.x"), ir.Constant(I32, 0)))):
                body([])
            return
        self.top = False
        try:
            firsts: dict[int, ir.Value] = {}
            for slot in range(self.slots):
                self.current_slot = slot
                self._in_domain(em, self._coordinate(em, slot, firsts), lambda at: body(unravel(em, at, shape)),
                                lane_safe)
        finally:
            self.top = True

    def _in_domain(self, em, linear: ir.Value, body: Callable[[ir.Value], None], lane_safe: bool = False) -> None:
        """body(linear) where coordinate `linear` lies in the domain (always, in a full chunk),
        which the body's accesses then know (`Emitter.knowing_below`: no bounds check of it).
        A `lane_safe` body of an element-wise program (a read's tabulation) runs straight, its
        accesses predicated on the guard (`Emitter.masked_lanes`), as the register form's are:
        no branch a slot."""
        with em.knowing_below(linear, self.total):
            if not self.guarded:
                body(linear)
                return
            inside = em.b.icmp_unsigned("<", linear, self.total)
            with em.masked_lanes(inside) if lane_safe and not self.stages.grid_wide else em.b.if_then(inside):
                body(linear)

    def _coordinate(self, em, slot: int, firsts: dict[int, ir.Value] | None = None) -> ir.Value:
        vector = self.layout.vector
        firsts = {} if firsts is None else firsts
        if vector == 1:
            return em.b.add(self.chunk_start, slot_coordinate(em, self.layout, slot))
        # the group's first coordinate (one value for its V slots) is a multiple of V:
        # `| (slot mod V)` adds, and shows that they share it (Philox blocks, rng.philox_block)
        group = slot - slot % vector
        if group not in firsts:
            firsts[group] = em.b.add(self.chunk_start, slot_coordinate(em, self.layout, group))
        # (llvmlite's own `or`, kept for k = 0 too: the lowering builder would fold `x | 0`)
        return ir.IRBuilder.or_(em.b, firsts[group], ir.Constant(I64, slot % vector))

    def tabulate(self, em, dtype: str, shape: Shape, element: ElementAt, group: Group | None = None) -> Tensor:
        if not (self.top and shape):
            return super().tabulate(em, dtype, shape, element, group)
        registers = Registers(dtype, tuple(shape), em.entry_alloca(ir.ArrayType(register_type(dtype), self.slots)))
        self.for_each(em, shape, lambda idx: em.b.store(element(idx), registers.slot(em, self.current_slot)),
                      lane_safe=True)
        return registers

    def keep_lazy(self, em, before_parallel: bool = False) -> bool:
        # The final stage keeps reads and reused values in registers; earlier stages compute
        # only what their partials need, so nothing is materialized there.
        if self.top:
            return self.stage.role != "final"
        return before_parallel

    def lazy_read(self, em, resource: object, op: Op | None = None) -> bool:
        return not self.top or self.stage.role != "final"

    def read_at_each_use(self, em, resource: object) -> bool:
        return False

    # ---- grid-wide ops ----------------------------------------------------------------------------
    def combine_partials(self, em, op: Op, kind: str, value: ir.Value, dtype: str, combine) -> ir.Value:
        if not self.top:
            return value
        total = block_combine(em, self.layout, value, identity_const(kind, dtype), combine)
        self._store_words(em, self._grid_wide(op), self.chunk, [total])
        return total

    def combine_tuple(self, em, op: Op, values: list[ir.Value], identities: list[ir.Value], combine) -> list[ir.Value]:
        if not self.top:
            return values
        totals = block_combine_tuple(em, self.layout, values, identities, combine, rolled=bool(op.regions))
        self._store_words(em, self._grid_wide(op), self.chunk, totals)
        return totals

    def scan(self, em, shape: Shape, elements, combine_all, dtypes: list[str], exclusive: bool, reverse: bool,
             first_exclusive: list[ir.Value], neutral_all: list[ir.Value] | None) -> list[Tensor] | None:
        """A grid-wide builtin scan (one component with a neutral element, forward): the
        chunk's total in the partials stage, the chunk's block scan after its carry in the
        final stage."""
        if not self.top or reverse or neutral_all is None or len(dtypes) != 1:
            return None
        assert self.current_op is not None
        grid_wide = self._grid_wide(self.current_op)
        (acc,), (neutral,) = dtypes, neutral_all

        def element(idx):
            return elements(idx)[0]

        def combine(a, c):
            return combine_all([a], [c])[0]
        prefixes, running = [], neutral
        for slot in range(self.slots):
            self.current_slot = slot
            running = combine(running, self._element_or(em, element, shape, slot, neutral, acc))
            prefixes.append(running)
        if grid_wide.depth == self.stage.depth:        # partials: the chunk's total, in source order
            _, total = _block_scan(em, self.layout, running, neutral, neutral, combine)
            self._store_words(em, grid_wide, self.chunk, [total])
            undefined = ir.Constant(register_type(acc), ir.Undefined)
            return [Lazy(acc, tuple(shape), lambda e, idx: undefined)]
        carry = from_word(em, em.b.load(self._word(em, grid_wide, self.chunk)), register_type(acc))
        before, _ = _block_scan(em, self.layout, running, carry, neutral, combine)
        registers = Registers(acc, tuple(shape), em.entry_alloca(ir.ArrayType(register_type(acc), self.slots)))
        b = em.b
        for slot in range(self.slots):
            if not exclusive:
                result = combine(before, prefixes[slot])
            elif slot:
                result = combine(before, prefixes[slot - 1])
            else:      # the first exclusive output is the identity (§6); a later chunk's is its carry
                first = b.icmp_unsigned("==", self._coordinate(em, slot), ir.Constant(I64, 0))
                result = b.select(first, first_exclusive[0], before)
            b.store(result, registers.slot(em, slot))
        return [registers]

    def _element_or(self, em, element: ElementAt, shape: Shape, slot: int, neutral: ir.Value, dtype: str):
        """element at this thread's coordinate of `slot`, or `neutral` past the domain."""
        linear = self._coordinate(em, slot)
        value = em.entry_alloca(register_type(dtype))
        em.b.store(neutral, value)
        self._in_domain(em, linear, lambda at: em.b.store(element(unravel(em, at, shape)), value))
        return em.b.load(value)

    # ---- the combine stage ------------------------------------------------------------------------
    def _combine(self, em, grid_wide: GridWide) -> None:
        """One CTA: a reduction's or contraction's chunk partials folded into the chunk-0 word;
        a scan's chunk totals replaced by their exclusive prefixes (each chunk's carry), tile
        by tile."""
        op = self.ops[grid_wide.name]
        if grid_wide.op in TUPLE_REDUCTIONS:
            self._combine_tuple(em, grid_wide, op)
            return
        kind = kind_of(op)
        acc = accumulator_of(op, self._dtype(op.operands[0]))
        b = em.b
        tid = b.zext(sreg(em, "tid.x"), I64)
        threads = ir.Constant(I64, THREADS)
        if grid_wide.op != "scan":
            def fold(a, c):
                return combine_builtin(em, op, kind, a, c, acc)
            identity = identity_const(kind, acc)
            partial = em.entry_alloca(register_type(acc))
            b.store(identity, partial)
            em.loop(tid, self.chunks, lambda i: b.store(fold(b.load(partial), self._load(em, grid_wide, i, acc)),
                                                        partial), threads, name="partial")
            total = block_combine(em, self.layout, b.load(partial), identity, fold)
            self._store_words(em, grid_wide, ir.Constant(I64, 0), [total])
            return

        def scan_step(a, c):
            return binary(em, op, COMBINE[kind], a, c, acc)
        neutral = scan_neutral(kind, acc)
        carry = em.entry_alloca(register_type(acc))
        b.store(neutral, carry)

        def tile(start):
            i = b.add(start, tid)
            live = b.icmp_unsigned("<", i, self.chunks)
            value = em.when(live, lambda: self._load(em, grid_wide, i, acc), neutral)
            before, total = _block_scan(em, self.layout, value, b.load(carry), neutral, scan_step)
            with b.if_then(live):
                b.store(to_word(em, before), self._word(em, grid_wide, i))
            b.store(total, carry)
        em.loop(ir.Constant(I64, 0), self.chunks, tile, threads, name="tile")

    def _combine_tuple(self, em, grid_wide: GridWide, op: Op) -> None:
        """A tuple reduction's chunk partials folded in chunk order by each thread (chunks
        t, t + T, ...), then over the threads in order, into the chunk-0 words."""
        b = em.b
        if op.name == "arg_reduce":
            combine, identities = arg_reduce_combine(em, op)
        else:        # an absent partial's components are never read: any identities serve
            combine = generic_reduce_combine(em, op)
            identities = [ir.Constant(register_type(self._dtype(name)), 0) for name in op.results] + \
                [ir.Constant(I1, 0)]
        types = [identity.type for identity in identities]
        partial = [em.entry_alloca(type_) for type_ in types]
        for slot, identity in zip(partial, identities):
            b.store(identity, slot)

        def fold(chunk):
            loaded = [from_word(em, b.load(self._word(em, grid_wide, chunk, component)), type_)
                      for component, type_ in enumerate(types)]
            for slot, value in zip(partial, combine([b.load(slot) for slot in partial], loaded)):
                b.store(value, slot)
        em.loop(b.zext(sreg(em, "tid.x"), I64), self.chunks, fold, ir.Constant(I64, THREADS), name="partial")
        totals = block_combine_tuple(em, self.layout, [b.load(slot) for slot in partial], identities, combine,
                                     rolled=bool(op.regions))
        self._store_words(em, grid_wide, ir.Constant(I64, 0), totals)

    def _grid_wide(self, op: Op) -> GridWide:
        grid_wide = self.stages.by_name(op.results[0])
        assert grid_wide is not None, op.results[0]
        return grid_wide

    def _dtype(self, name: str) -> str:
        type_ = self.types[name]
        assert isinstance(type_, TensorType), name
        return type_.dtype

    def _load(self, em, grid_wide: GridWide, chunk: ir.Value, dtype: str, component: int = 0) -> ir.Value:
        return from_word(em, em.b.load(self._word(em, grid_wide, chunk, component)), register_type(dtype))


def _block_scan(em, layout: CtaPlan, value: ir.Value, carry: ir.Value, neutral: ir.Value, combine) -> tuple:
    """(the exclusive prefix before this thread, the chunk's total), both after `carry`, of one
    value over the CTA's threads (cta_scan.block_scan, forward)."""
    before, total = block_scan(em, layout, [value], [carry], [neutral], lambda a, c: [combine(a[0], c[0])], False)
    return before[0], total[0]
