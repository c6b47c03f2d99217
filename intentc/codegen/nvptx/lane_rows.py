"""The lane-rows mapping (docs/gpu.md, "Lane rows"): a `parallel` whose iteration runs an
ordered `loop` over its row (a recurrence: `ema_rows`) runs one iteration per LANE, 32 rows
a warp, the loop in order within the lane (§10: an ordered loop keeps its order, so the
parallelism is across rows).

Lane l of warp w takes row 32·w + l (warps walk the row blocks grid-stride, every lane of a
warp the same number of blocks; the last block's lanes past the end repeat the last row,
whose writes store the same bits). The iteration's code is the per-thread lowering, with
its view accesses staged through shared memory so that the warp moves whole lines:

- a **read window** per `in` view: each lane holds WINDOW consecutive elements of its own
  row in a [32][WINDOW + 1] shared tile of its warp. A read that misses in any lane
  (`vote.any`) makes the warp refill: every lane's window restarts at its current address,
  and the warp loads the 32 windows row by row, 32 consecutive elements a load (coalesced),
  transposing them into the tile; a read that hits is a conflict-free shared load.
- a **write window** per `out` view: a write lands in the lane's tile row and its bit in a
  64-bit mask; a write outside any lane's window, and the end of the iteration, flush the
  warp's windows row by row, 32 consecutive elements a store, only the written ones.

Either is exact for any index pattern (a miss refills), and fast when a lane's accesses
walk its row. A tensor `write` to a write window runs CHUNK coordinates at a time, its
window stores deferred to the chunk's end: the chunk's values (ema's row, read back from
the lane's buffer in local memory, which L1 no longer holds) load together, one latency a
chunk instead of one a coordinate; then, where the chunk lies inside the windows (one vote
for the chunk), its stores go in without a branch between them.

The recognizer (`plan_lane_rows`) asks for what makes the warp-collective refills and
flushes safe: the control flow around every view access is uniform across the
warp (loop bounds and `if` conditions from values outside the `parallel`, constants and
such loops' indices), views are only `read` (`in`, never written) or `write`n (`out`,
never read) with the row as their first index, and 4-byte elements. Buffers are the
lane's own (its stack, which the GPU interleaves across a warp's lanes: a step's writes of
32 lanes are one line).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from ...ir.nodes import Kernel, Op
from ...ir.optable import op_def
from ...ir.types import ViewType
from ..layout.assign import elements
from ..llvm.affine_forms import difference
from ..llvm.builder import LoweringBuilder
from ..llvm.types import I1, I32, I64, register_type
from .cta import shared_array, sreg
from .ptx_asm import global_pointer

LANES = 32
WINDOW = 64               # consecutive elements of its row a lane's window holds (a 64-bit write mask)
WINDOW_BYTES_PER_WARP = LANES * (WINDOW + 1) * 4
STATIC_SHARED = 40 * 1024  # of the 48 KiB a CTA may declare statically
MAX_WARPS = 2
LANE_STACK_BYTES = 16 * 1024   # a lane's tensors and buffers, each (8 bytes an element at most)
RESIDENT_THREADS = 2048
WORD_DTYPES = frozenset({"f32", "i32", "u32"})   # 4-byte elements a window moves as they are stored
# coordinates of a tensor write whose values load before their window stores (ema_rows on the
# H200, stored one by one: 1 0.637 ms, 8 0.357, 16 0.337, 32 0.327, 64 0.381); 16 since the
# stores of a chunk inside the windows go in without a branch (`store_chunk`): 148 registers,
# as 32 had before (227 at 32 now). Session 8 (bench/results/ctime-20261202-s8-h200-r2/): 8 a
# chunk made ema's kernel 938 -> 790 PTX lines but ran 4 % slower (0.3386 / 0.326 ms).
CHUNK = 16
# rows of the warp's windows a refill loads at once (LANES: all of them, one unrolled block;
# fewer: a rolled loop over the rows, that many rows' loads in flight a trip). 8 (16 loads in
# flight a trip): ema 1,471 -> 938 PTX lines, 0.326 ms against 0.321 with all 32 (the same
# round; chunk 16 both). Session 10 (issue #13): 4 (8 loads in flight a trip; session 8's A/B ran
# 8 and 4 alike at chunk 8, 0.3386 / 0.3381 ms): ema 686 -> 590 PTX lines.
REFILL_ROWS = 4


@dataclass(frozen=True)
class LaneRows:
    parallel: Op
    reads: tuple              # `in` views read in the iteration (a read window each)
    writes: tuple             # `out` views written in the iteration (a write window each)
    # tensor reads of the lane's buffers that no write follows: read where used, no copy
    lazy_reads: frozenset = frozenset()

    kind = "lane-rows"
    # the lean kernel pipeline (`machine._lean_pipeline`): ema_rows on the H200 0.2094-0.2098 ms
    # lean against 0.2293 on O1 (each compiled apart, the same bits,
    # bench/results/cta-choices-ab-20261202-s9-h200/), and about a quarter less CPU to PTX
    lean = True
    # LLVM's Loop Strength Reduction in code generation (`compile._unrolled`): off since session
    # 10 (issue #13: about a tenth of ema's CPU time to PTX)
    strength_reduce = False

    @property
    def warps(self) -> int:
        windows = max(1, len(self.reads) + len(self.writes))
        return max(1, min(MAX_WARPS, STATIC_SHARED // (windows * WINDOW_BYTES_PER_WARP)))

    @property
    def threads(self) -> int:
        return LANES * self.warps

    @property
    def ctas_per_sm(self) -> int:
        return RESIDENT_THREADS // self.threads

    def to_json(self) -> dict:
        return {"iteration": "one a lane (32 rows a warp), its ordered loops in order in the lane",
                "warps_per_cta": self.warps, "window_elements": WINDOW,
                "windows": [{"view": v, "access": "read"} for v in self.reads]
                + [{"view": v, "access": "write"} for v in self.writes],
                "buffers": "the lane's stack (interleaved across the warp's lanes)",
                "tensor_write_chunk": CHUNK, "refill_rows": REFILL_ROWS, "strength_reduce": self.strength_reduce,
                "reads_at_use": sorted(self.lazy_reads)}


# ---- recognition ----------------------------------------------------------------------------------
def plan_lane_rows(kernel: Kernel, parallel: Op | None, known: dict) -> LaneRows | None:
    """The lane-rows plan of `kernel`, whose top-level `parallel` (the grid-stride one) is
    `parallel`, or None when its iteration runs no ordered loop, or a loop that steps through
    tensors (tiles: the CTA mapping spreads those), holds a tensor or buffer
    whose size is not static (`known`) and small (a lane's stack), or its lanes could
    diverge around a view access."""
    if parallel is None or len(parallel.regions[0].args) != 1:
        return None
    if not all(_fits_a_lane(type_, known) for op in _walk(parallel.regions[0].ops) for type_ in op.result_types):
        return None
    views = {p.name: p.type for p in kernel.params if isinstance(p.type, ViewType)}
    region = parallel.regions[0]
    row = region.args[0].name
    extents = {e for t in views.values() for e in t.shape if isinstance(e, str)}
    uniform = {p.name for p in kernel.params} | extents | {r for op in kernel.body if op is not parallel for r in op.results}
    accesses: list[Op] = []
    if not _collect(region.ops, uniform, views, accesses, diverged=False):
        return None
    loops = [op for op in _walk(region.ops) if op.name == "loop"]
    if not loops or not all(_scalar_loop(op) for op in loops):
        return None
    reads: list[str] = []
    writes: list[str] = []
    for op in accesses:
        view, indices = op.operands[0], op.group("index") or ()
        if views[view].dtype not in WORD_DTYPES or not indices or indices[0] != row:
            return None
        (reads if op.name == "read" else writes).append(view)
    if set(reads) & set(writes) or any(views[v].direction != "in" for v in reads) \
            or any(views[v].direction != "out" for v in writes):
        return None
    return LaneRows(parallel, tuple(dict.fromkeys(reads)), tuple(dict.fromkeys(writes)), _final_reads(region.ops, views))


def _final_reads(ops, views: dict) -> frozenset:
    """The iteration's top-level tensor reads of its buffers after the last write to each
    (in program order, loops included): the buffer no longer changes, so the read's value
    may be read again where it is used instead of copied (a tensor read of a buffer is a
    snapshot, §9)."""
    last_write: dict[str, int] = {}
    positions = {id(op): number for number, op in enumerate(_walk(ops))}
    for op in _walk(ops):
        if op_def(op.name) and op_def(op.name).effects == ("write",) and op.operands[0] not in views:
            last_write[op.operands[0]] = positions[id(op)]
    return frozenset(op.results[0] for op in ops
                     if op_def(op.name) and op_def(op.name).effects == ("read",) and op.operands[0] not in views
                     and getattr(op.result_types[0], "shape", None)
                     and last_write.get(op.operands[0], -1) < positions[id(op)])


def _scalar_loop(loop: Op) -> bool:
    """Whether the loop steps through scalars only (an element a step): a loop over tiles
    spreads each tile over a CTA instead (the CTA mapping)."""
    return all(not getattr(t, "shape", None) for op in _walk([loop]) for t in op.result_types) and \
        all(not getattr(arg.type, "shape", None) for arg in loop.regions[0].args)


def _fits_a_lane(type_, known: dict) -> bool:
    shape = getattr(type_, "shape", None)
    if not shape:
        return True
    count = elements(type_, known)
    return count is not None and count * 8 <= LANE_STACK_BYTES


def _walk(ops):
    for op in ops:
        yield op
        for region in op.regions:
            yield from _walk(region.ops)


def _collect(ops, uniform: set, views: dict, accesses: list, diverged: bool) -> bool:
    """Adds the view accesses of `ops` to `accesses` and the values every lane has alike to
    `uniform`; False where a view access could run on some lanes only (`diverged`: inside
    control flow that depends on the lane), or an op has an effect other than allocating,
    reading and writing (atomics, scatters: other lanes' rows)."""
    for op in ops:
        effects = op_def(op.name).effects if op_def(op.name) else ()
        touches_view = op.operands and op.operands[0] in views
        if touches_view:
            if effects not in (("read",), ("write",)) or diverged:
                return False
            accesses.append(op)
        elif effects not in ((), ("alloc",), ("read",), ("write",)):     # the lane's own buffers
            return False
        inner = diverged or not all(name in uniform for name in _control_operands(op))
        if op.name == "loop" and not inner:
            uniform.add(op.regions[0].args[0].name)      # its index: the same on every lane
        if not all(_collect(region.ops, uniform, views, accesses, inner) for region in op.regions):
            return False
        if not op.regions and not touches_view and all(name in uniform for name in op.operands):
            uniform |= set(op.results)
    return True


def _control_operands(op: Op) -> tuple:
    """The operands that decide which lanes run `op`'s regions and how often: a loop's
    bounds, an `if`'s condition, any other op's operands (a combine region runs per element)."""
    if op.name == "loop":
        return tuple(op.operands[:3])
    if op.name == "if":
        return tuple(op.operands[:1])
    return tuple(op.operands)


# ---- emission -----------------------------------------------------------------------------------------
class LaneWalk:
    """Emits the lane-rows walk and the windows of one kernel (`NvptxHooks` calls it)."""

    def __init__(self, em, plan: LaneRows):
        self.em, self.plan = em, plan
        b = em.b
        tid = sreg(em, "tid.x")
        self.lane = b.zext(b.urem(tid, i32(LANES)), I64)
        self.warp = b.zext(b.udiv(tid, i32(LANES)), I64)
        self.windows: dict[str, _Window] = {}
        self.active = False
        self.deferred: list | None = None   # (window, pointer, value, live) stores a chunk holds back

    def walk(self, total: ir.Value, iteration) -> None:
        em, b = self.em, self.em.b
        warps = ir.Constant(I64, self.plan.warps)
        first = b.add(b.mul(b.zext(sreg(em, "ctaid.x"), I64), warps), self.warp)
        stride = b.mul(b.zext(sreg(em, "nctaid.x"), I64), warps)
        blocks = b.udiv(b.add(total, ir.Constant(I64, LANES - 1)), ir.Constant(I64, LANES))
        last = b.sub(total, ir.Constant(I64, 1))

        def block(index):
            row = b.add(b.mul(index, ir.Constant(I64, LANES)), self.lane)
            self.active = True
            try:
                iteration(b.select(b.icmp_unsigned("<", row, total), row, last))
                for window in self.windows.values():
                    window.end_iteration()
            finally:
                self.active = False
        em.loop(first, blocks, block, stride, name="rows")

    def for_each_chunked(self, shape: list, body) -> bool:
        """body(idx) for every coordinate of the current op's tensor `shape` (row-major), CHUNK
        coordinates along the last axis a step, each chunk's window stores after all of its
        bodies; False (nothing emitted) unless the op is a `write` to a write window: its
        body's one effect is that store, at the body's top level (`_store_each`), so
        holding it back changes no order the program sees (no body reads a written view)."""
        em = self.em
        op = em.current_op
        if not self.active or op is None or op.name != "write" or op.operands[0] not in self.plan.writes \
                or not shape or self.deferred is not None:
            return False
        b = em.b
        extent = shape[-1]
        whole = b.sub(extent, b.urem(extent, ir.Constant(I64, CHUNK)))

        def chunk(first, outer):
            held: list = []
            self.deferred = held
            try:
                for k in range(CHUNK):       # first + k < whole <= extent: no bounds check along the row
                    coordinate = b.add(first, ir.Constant(I64, k))
                    with em.knowing_below(coordinate, extent):
                        body([*outer, coordinate])
            finally:
                self.deferred = None
            windows = {id(window) for window, *_ in held}
            if len(windows) == 1:
                held[0][0].store_chunk([store for _, *store in held])
            else:
                for window, pointer, value, live in held:
                    window.store(pointer, value, live)

        def row(outer):
            em.loop(ir.Constant(I64, 0), whole, lambda first: chunk(first, outer), ir.Constant(I64, CHUNK),
                    name="chunk")
            if not (isinstance(extent, ir.Constant) and int(extent.constant) % CHUNK == 0):   # else no rest
                em.loop(whole, extent, lambda last: body([*outer, last]), name="rest")
        em.serial_for_each(shape[:-1], row)
        return True

    def window(self, view, writes: bool) -> _Window | None:
        if not self.active or view.name not in (self.plan.writes if writes else self.plan.reads):
            return None
        if view.name not in self.windows:
            self.windows[view.name] = _Window(self, view, writes)
        return self.windows[view.name]


class _Window:
    """One view's windows for the warp's 32 lanes: a shared tile, each lane's window start
    (a byte address in the global space, `ld.global`'s; 0: none) and, for writes, which
    elements it holds."""

    def __init__(self, walk: LaneWalk, view, writes: bool):
        em = walk.em
        self.em, self.walk, self.view, self.writes = em, walk, view, writes
        self.word = register_type(view.dtype)
        warps = walk.plan.warps
        # the tile's address as a constant (its global's): usable anywhere in the kernel (the
        # first access may sit in a branch that does not dominate the iteration's end) and
        # in the window's own functions
        array = shared_array(em, view.dtype, warps * LANES * (WINDOW + 1)).ptr.operands[0]
        self.tile = array.gep([ir.Constant(I32, 0), ir.Constant(I32, 0)])
        self.start = em.entry_alloca(I64, ir.Constant(I64, 0))
        self.mask = em.entry_alloca(I64, ir.Constant(I64, 0)) if writes else None
        self.refill: ir.Function | None = None
        self.flush: ir.Function | None = None

    def _slot(self, warp: ir.Value, lane_row: ir.Value, column: ir.Value) -> ir.Value:
        b = self.em.b
        tile_row = b.add(b.mul(warp, ir.Constant(I64, LANES)), lane_row)
        return b.gep(self.tile, [b.add(b.mul(tile_row, ir.Constant(I64, WINDOW + 1)), column)])

    def _column(self, address: ir.Value, live: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(whether `address` lies in the lane's window, its column there; the pad column
        where not live)."""
        b = self.em.b
        offset = b.sub(address, b.load(self.start))
        inside = b.icmp_unsigned("<", offset, ir.Constant(I64, WINDOW * 4))
        return inside, b.select(b.and_(live, inside), b.lshr(offset, ir.Constant(I64, 2)), ir.Constant(I64, WINDOW))

    def _restart_where_missed(self, address: ir.Value, live: ir.Value, before, after) -> None:
        """If a live lane's address lies outside its window (in any lane: the branch is the
        warp's): before(), every lane's window restarts at its address (none where not
        live), after()."""
        em, b = self.em, self.em.b
        inside, _ = self._column(address, live)
        with b.if_then(_vote(em, "any", b.and_(live, b.not_(inside)))):
            before()
            b.store(b.select(live, address, ir.Constant(I64, 0)), self.start)
            if self.mask is not None:
                b.store(ir.Constant(I64, 0), self.mask)
            after()

    def load(self, pointer: ir.Value, live: ir.Value, default: ir.Value) -> ir.Value:
        b = self.em.b
        address = b.ptrtoint(global_pointer(b, pointer), I64)
        self._restart_where_missed(address, live, lambda: None, self._refill)
        _, column = self._column(address, live)
        return b.select(live, b.load(self._slot(self.walk.warp, self.walk.lane, column)), default)

    def store(self, pointer: ir.Value, value: ir.Value, live: ir.Value) -> None:
        if self.walk.deferred is not None:     # a chunk's: stored at its end (LaneWalk.for_each_chunked)
            self.walk.deferred.append((self, pointer, value, live))
            return
        address = self.em.b.ptrtoint(global_pointer(self.em.b, pointer), I64)
        self._restart_where_missed(address, live, self._flush, lambda: None)
        self._put(address, value, live)

    def store_chunk(self, stores: list) -> None:
        """A chunk's stores [(pointer, value, live)], in order: the first's miss restarts the
        windows as its store would; then, where every live one lies inside its lane's window
        (in every lane: a walk along the row), all go in without a branch between them (no
        vote a store: independent instructions); else one by one, as `store`."""
        em, b = self.em, self.em.b
        first = b.ptrtoint(global_pointer(b, stores[0][0]), I64)
        self._restart_where_missed(first, stores[0][2], self._flush, lambda: None)
        if _consecutive([pointer for pointer, _, _ in stores]) and _one_value([live for *_, live in stores]):
            self._store_run(first, [value for _, value, _ in stores], stores[0][2])
            return
        addresses = [first] + [b.ptrtoint(global_pointer(b, pointer), I64) for pointer, _, _ in stores[1:]]
        fits = ir.Constant(I1, 1)
        for address, (_, _, live) in zip(addresses, stores):
            inside, _ = self._column(address, live)
            fits = b.and_(fits, b.or_(b.not_(live), inside))
        with b.if_else(_vote(em, "all", fits), likely=True) as (inside_windows, some_miss):
            with inside_windows:
                for address, (_, value, live) in zip(addresses, stores):
                    self._put(address, value, live)
            with some_miss:
                self._store_each_rolled(self._local_array(I64, addresses), [value for _, value, _ in stores],
                                        [live for _, _, live in stores])

    def _store_run(self, first: ir.Value, values: list, live: ir.Value) -> None:
        """store_chunk of stores to consecutive elements under one `live` (a tensor write
        along the row, `_consecutive`), the first at address `first`: they all lie inside the
        lane's window exactly where the first lies at most WINDOW - n elements past its
        start, one compare instead of one a store; inside, store k goes to the first's column
        + k (the pad where not live) and their n mask bits are set at once; store k's address
        is the first's + 4k, so the other stores' pointers are never used (LLVM drops them)."""
        em, b = self.em, self.em.b
        count = len(values)
        offset = b.sub(first, b.load(self.start))
        first_fits = b.icmp_unsigned("<", offset, ir.Constant(I64, (WINDOW - count + 1) * 4))
        with b.if_else(_vote(em, "all", b.or_(b.not_(live), first_fits)), likely=True) as (inside_windows, some_miss):
            with inside_windows:
                first_column = b.lshr(offset, ir.Constant(I64, 2))
                for k, value in enumerate(values):
                    column = b.select(live, b.add(first_column, ir.Constant(I64, k)), ir.Constant(I64, WINDOW))
                    b.store(value, self._slot(self.walk.warp, self.walk.lane, column))
                bits = b.shl(ir.Constant(I64, (1 << count) - 1), first_column)
                b.store(b.or_(b.load(self.mask), b.select(live, bits, ir.Constant(I64, 0))), self.mask)
            with some_miss:
                self._store_each_rolled(lambda k: b.add(first, b.shl(k, ir.Constant(I64, 2))), values, [live] * count)

    def _store_each_rolled(self, address_at: Callable[[ir.Value], ir.Value], values: list, lives: list) -> None:
        """`store` of each value at address_at(k) (built in the loop) under its live flag, in
        order, in one rolled loop over local arrays: the path where a chunk misses (a window's
        first store off a line, an index that jumps) is rare, and unrolled it was a vote and a
        flush call a store, a third of ema's kernel (issue #13: compile time)."""
        em, b = self.em, self.em.b
        arrays = [self._local_array(self.word, values), self._local_array(I1, lives)]

        def each(k):
            value, live = (array(k) for array in arrays)
            self.store(b.inttoptr(address_at(k), self.word.as_pointer(1)), value, live)
        em.loop(ir.Constant(I64, 0), ir.Constant(I64, len(values)), each, name="missed")

    def _local_array(self, type_: ir.Type, items: list) -> Callable[[ir.Value], ir.Value]:
        """`items` stored in a thread-local array; the returned function loads item k."""
        em, b = self.em, self.em.b
        array = em.entry_alloca(ir.ArrayType(type_, len(items)))
        for k, item in enumerate(items):
            b.store(item, b.gep(array, [ir.Constant(I64, 0), ir.Constant(I64, k)]))
        return lambda k: b.load(b.gep(array, [ir.Constant(I64, 0), k]))

    def _put(self, address: ir.Value, value: ir.Value, live: ir.Value) -> None:
        """The store of `value` at `address`, which lies in the lane's window where `live`."""
        b = self.em.b
        _, column = self._column(address, live)
        b.store(value, self._slot(self.walk.warp, self.walk.lane, column))    # the pad where not live
        bit = b.shl(ir.Constant(I64, 1), column)
        b.store(b.or_(b.load(self.mask), b.select(live, bit, ir.Constant(I64, 0))), self.mask)

    def end_iteration(self) -> None:
        if self.writes:
            self._flush()
            self.em.b.store(ir.Constant(I64, 0), self.mask)
        self.em.b.store(ir.Constant(I64, 0), self.start)

    def _refill(self) -> None:
        b = self.em.b
        end = b.ptrtoint(global_pointer(b, b.gep(self.view.ptr, [self.view.size])), I64)
        if self.refill is None:
            self.refill = self._function("refill", 4, self._emit_refill)
        b.call(self.refill, [b.load(self.start), self.walk.lane, self.walk.warp, end])

    def _flush(self) -> None:
        b = self.em.b
        if self.flush is None:
            self.flush = self._function("flush", 4, self._emit_flush)
        b.call(self.flush, [b.load(self.start), b.load(self.mask), self.walk.lane, self.walk.warp])

    def _function(self, what: str, params: int, emit) -> ir.Function:
        """A `noinline` function of the kernel's module holding emit(*its i64 params): every
        refill (flush) of the window calls it, so its unrolled code exists once."""
        em = self.em
        function = ir.Function(em.module, ir.FunctionType(ir.VoidType(), [I64] * params),
                               f"intentc_lane_window_{what}_{self.view.name}")
        function.linkage = "internal"
        function.attributes.add("noinline")
        builder, kernel = em.b, em.function
        em.b, em.function = LoweringBuilder(function.append_basic_block("entry")), function
        try:
            emit(*function.args)
            em.b.ret_void()
        finally:
            em.b, em.function = builder, kernel
        return function

    def _emit_refill(self, start: ir.Value, lane: ir.Value, warp: ir.Value, end: ir.Value) -> None:
        """The warp loads every lane's window (`start`: its byte address, 0 for none): row r's
        WINDOW elements, 32 consecutive ones a load, all in flight at once, then into the
        tile (elements past the view's allocation `end`: none)."""
        em, b = self.em, self.em.b
        _sync_warp(em)

        def rows(first: ir.Value) -> None:
            loaded = []
            for k in range(REFILL_ROWS):
                r = b.add(first, ir.Constant(I64, k))
                row_start = _shuffle64(em, start, b.trunc(r, I32))
                for part in range(WINDOW // LANES):
                    column = b.add(lane, ir.Constant(I64, part * LANES))
                    address = b.add(row_start, b.shl(column, ir.Constant(I64, 2)))
                    live = b.and_(b.icmp_unsigned("!=", row_start, ir.Constant(I64, 0)),
                                  b.icmp_unsigned("<", address, end))
                    zero = ir.Constant(self.word, 0.0 if isinstance(self.word, ir.FloatType) else 0)
                    value = em.hooks.masked_load(em, b.inttoptr(address, self.word.as_pointer(1)), live, zero)
                    loaded.append((r, column, value))
            for r, column, value in loaded:
                b.store(value, self._slot(warp, r, column))
        if REFILL_ROWS == LANES:
            rows(ir.Constant(I64, 0))
        else:
            em.loop(ir.Constant(I64, 0), ir.Constant(I64, LANES), rows, ir.Constant(I64, REFILL_ROWS), name="rows")
        _sync_warp(em)
        # the lane's next window, on to L2: a walk along the row finds it there at its refill
        for line in range(0, WINDOW * 4, 128):
            ahead = b.add(start, ir.Constant(I64, WINDOW * 4 + line))
            live = b.and_(b.icmp_unsigned("!=", start, ir.Constant(I64, 0)), b.icmp_unsigned("<", ahead, end))
            _prefetch_l2(em, ahead, live)

    def _emit_flush(self, start: ir.Value, mask: ir.Value, lane: ir.Value, warp: ir.Value) -> None:
        """The warp stores every lane's written elements (`mask`) from its window (`start`):
        row r's, 32 consecutive ones a store (a loop over the rows: stores need not wait)."""
        em, b = self.em, self.em.b
        _sync_warp(em)

        def row(r):
            source = b.trunc(r, I32)
            row_start, row_mask = _shuffle64(em, start, source), _shuffle64(em, mask, source)
            for part in range(WINDOW // LANES):
                column = b.add(lane, ir.Constant(I64, part * LANES))
                written = b.trunc(b.lshr(row_mask, column), I1)
                address = b.add(row_start, b.shl(column, ir.Constant(I64, 2)))
                em.hooks.masked_store(em, b.inttoptr(address, self.word.as_pointer(1)),
                                      b.load(self._slot(warp, r, column)), written)
        em.loop(ir.Constant(I64, 0), ir.Constant(I64, LANES), row, name="row")
        _sync_warp(em)


def _consecutive(pointers: list) -> bool:
    """Whether element pointer k is the first's + k whatever the run-time values are: one
    base, indices whose difference is k (`affine_forms`)."""
    first = pointers[0]
    return all(isinstance(p, ir.Instruction) and p.opname == "getelementptr" and len(p.operands) == 2
               and p.operands[0] is first.operands[0] and difference(p.operands[1], first.operands[1]) == k
               for k, p in enumerate(pointers))


def _one_value(values: list) -> bool:
    """Whether the values are one: the same SSA value, or equal constants."""
    first = values[0]
    return all(value is first or (isinstance(value, ir.Constant) and isinstance(first, ir.Constant)
                                  and value.type == first.type and value.constant == first.constant)
               for value in values)


def i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _vote(em, kind: str, value: ir.Value) -> ir.Value:
    """`value` in any (`kind` "any") or every ("all") lane of the warp."""
    vote = em.declare(f"llvm.nvvm.vote.{kind}.sync", I1, [I32, I1])
    return em.b.call(vote, [i32(-1), value])


def _sync_warp(em) -> None:
    em.b.call(em.declare("llvm.nvvm.bar.warp.sync", ir.VoidType(), [I32]), [i32(-1)])


def _shuffle64(em, value: ir.Value, source: ir.Value) -> ir.Value:
    """`value` (i64) of lane `source` (i32)."""
    b = em.b
    shfl = em.declare("llvm.nvvm.shfl.sync.idx.i32", I32, [I32, I32, I32, I32])
    low = b.call(shfl, [i32(-1), b.trunc(value, I32), source, i32(31)])
    high = b.call(shfl, [i32(-1), b.trunc(b.lshr(value, ir.Constant(I64, 32)), I32), source, i32(31)])
    return b.or_(b.zext(low, I64), b.shl(b.zext(high, I64), ir.Constant(I64, 32)))


def _prefetch_l2(em, address: ir.Value, live: ir.Value) -> None:
    em.b.asm(ir.FunctionType(ir.VoidType(), [I64, I1]), "@$1 prefetch.global.L2 [$0];", "l,b", [address, live],
             side_effect=True)
