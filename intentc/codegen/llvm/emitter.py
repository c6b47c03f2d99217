"""The lowering state of one kernel function: builders, the SSA environment, loops,
temporaries, scopes and run-time checks.

Illegal inputs never trap. A check ORs its condition into a per-site flag (a branch-free
reduction that keeps loops vectorizable); after each op the raised flags record the site's
id in the status word (first error wins), and execution goes on with a safe substitute
value. The runtime turns the id back into the diagnostic the interpreter would give.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llvmlite import ir

from ...ir.nodes import Op
from .builder import LoweringBuilder
from .types import I8, I64, register_type
from .values import Body, ElementAt, Group, Memory, Registers, Shape, Tensor

if TYPE_CHECKING:
    from .target import TargetHooks


# A static temporary up to this size lives on the stack, in the entry block.
STACK_LIMIT_BYTES = 64 * 1024


@dataclass(frozen=True)
class CheckSite:
    """One run-time check: the op, its diagnostic code and message."""
    op: Op
    code: str
    message: str
    hint: str = ""


class Emitter:
    def __init__(self, module: ir.Module, function: ir.Function, status: ir.Value, hooks: TargetHooks):
        self.module, self.function, self.status, self.hooks = module, function, status, hooks
        self.entry = LoweringBuilder(function.append_basic_block("entry"))
        self.prologue = LoweringBuilder(function.append_basic_block("prologue"), self.entry)
        self._prologue_start = self.prologue.block     # the prologue may grow more blocks
        self.body_block = function.append_basic_block("body")
        self.b = LoweringBuilder(self.body_block, self.entry)
        self.env: dict[str, object] = {}
        self.sites: list[CheckSite] = []
        self._site_ids: dict[CheckSite, int] = {}
        self._flags: dict[int, ir.Value] = {}
        # Checks raised per region nesting level: a flush inside a region must not consume a
        # check its enclosing op raised before the region (the region may run zero times).
        self._raised: list[set[int]] = [set()]
        self.scopes: list[list[ir.Value]] = [[]]
        self.exit_frees: list[ir.Value] = []
        self.exit_actions: list[Callable[[], None]] = []   # emitted at exit, before the frees
        self.invariant: set[int] = set()   # ids of values computed in the prologue
        self.loop_depth = 0
        self.branch_depth = 0              # inside an if_then branch: temporaries die with it
        self.element_memo: dict = {}      # elements emitted during the current op (elements.py)
        self.block_memo: dict = {}        # pure values per basic block (once_per_block)
        self.at_one_coordinate = 0        # lowering a region for one coordinate (coordinate_region.py)
        self._below: list[tuple[ir.Value, ir.Value]] = []   # (value, bound): value < bound holds here
        self.lane_mask: ir.Value | None = None   # i1: the element being emitted is live (None: always)
        # i8 flags of the loop trips being lowered that stop at a fixed point (fixed_point.py):
        # an op that touches memory sets them all where it runs.
        self.trip_effects: list[ir.Value] = []
        self.current_op: Op | None = None   # the op being lowered (a target's decisions name its values)
        self.check_guards: list[ir.Value] = []   # conditions every check is and-ed with (checks_only_where)
        self.payload_free_reads: set[int] = set()   # ids of reads whose NaN bits no use observes (nan_payloads.py)
        self.bit_copy_reads: set[int] = set()       # ids of reads only stored as they are (nan_payloads.py)
        self.masked_in_bounds: dict[int, frozenset[int]] = {}   # access id -> axes its mask keeps inside (mask_bounds.py)
        # the kernel's argument word by index, read in the prologue (set by kernel.py: abi.py)
        self.argument_word: Callable[[int], ir.Value] = function.args.__getitem__

    # ---- declarations --------------------------------------------------------------------
    def declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(ret, args), name)

    def intrinsic(self, name: str, type_: ir.Type, count: int = 1) -> ir.Function:
        return self.declare(f"llvm.{name}.{_mangled(type_)}", type_, [type_] * count)

    def call_intrinsic(self, name: str, *args: ir.Value) -> ir.Value:
        return self.b.call(self.intrinsic(name, args[0].type, len(args)), list(args))

    # ---- control flow ----------------------------------------------------------------------
    def new_block(self, name: str) -> ir.Block:
        return self.function.append_basic_block(name)

    def loop(self, start: ir.Value, stop: ir.Value, body: Callable[..., Any], step: ir.Value | None = None,
             name: str = "i", running: ir.Value | None = None, carried: list | None = None) -> list:
        """for (i = start; i < stop; i += step) body(i)   (signed i64). `running`: an i1 pointer
        the loop also stops on when false (checked before each trip). `carried`: values a trip
        hands to the next as SSA values (phis in the header, not thread-local slots that SROA
        only removes again): then body(i, values) returns the next trip's values, and the loop
        returns the values after it (else [])."""
        b = self.b
        step = step if step is not None else ir.Constant(I64, 1)
        before = b.block
        header, inside, after = self.new_block(f"{name}.head"), self.new_block(f"{name}.body"), self.new_block(f"{name}.end")
        b.branch(header)
        b.position_at_end(header)
        index = b.phi(I64, name=name)
        index.add_incoming(start, before)
        values = [b.phi(value.type) for value in carried or ()]
        for phi, value in zip(values, carried or ()):
            phi.add_incoming(value, before)
        more = b.icmp_signed("<", index, stop)
        b.cbranch(b.and_(more, b.load(running)) if running is not None else more, inside, after)
        b.position_at_end(inside)
        self.loop_depth += 1
        try:
            following = body(index, list(values)) if carried is not None else body(index)
        finally:
            self.loop_depth -= 1
        index.add_incoming(b.add(index, step, flags=["nsw"]), b.block)
        for phi, value in zip(values, following if carried is not None else (), strict=True):
            phi.add_incoming(value, b.block)
        b.branch(header)
        b.position_at_end(after)
        return list(values)

    def for_each(self, shape: Shape, body: Body, group: Group | None = None, lane_safe: bool = False) -> None:
        """body(idx) for every coordinate of a tensor-level `shape` (the target decides how;
        `group`: the op's optional vector form, `lane_safe`: body may run on masked-off
        lanes, see TargetHooks.for_each)."""
        self.hooks.for_each(self, shape, body, group, lane_safe)

    def serial_for_each(self, shape: Shape, body: Body) -> None:
        """body(idx) for every coordinate of `shape`, row-major (the last axis innermost)."""
        zero = ir.Constant(I64, 0)

        def nest(axis: int, idx: list[ir.Value]) -> None:
            if axis == len(shape):
                body(idx)
                return
            self.loop(zero, shape[axis], lambda i: nest(axis + 1, [*idx, i]), name=f"d{axis}")
        nest(0, [])

    def if_then(self, cond: ir.Value, then: Callable[[], None], otherwise: Callable[[], None] | None = None) -> None:
        b = self.b
        then_block, after = self.new_block("then"), self.new_block("endif")
        else_block = self.new_block("else") if otherwise else after
        b.cbranch(cond, then_block, else_block)
        b.position_at_end(then_block)
        self._in_branch(then)
        b.branch(after)
        if otherwise:
            b.position_at_end(else_block)
            self._in_branch(otherwise)
            b.branch(after)
        b.position_at_end(after)

    def _in_branch(self, body) -> None:
        """Run a branch body in its own scope: a heap temporary allocated there is freed at
        the branch's end (an exit-time free would not be dominated by the allocation)."""
        self.branch_depth += 1
        try:
            with self.scope():
                body()
        finally:
            self.branch_depth -= 1

    def when(self, cond: ir.Value, compute: Callable[[], ir.Value], default: ir.Value) -> ir.Value:
        """compute() where `cond` holds (its effects only then), else `default`."""
        b = self.b
        before = b.block
        with b.if_then(cond):
            value = compute()
            computed = b.block
        merged = b.phi(value.type)
        merged.add_incoming(value, computed)
        merged.add_incoming(default, before)
        return merged

    def once_per_block(self, key: tuple, compute: Callable[[], ir.Value]) -> ir.Value:
        """compute()'s value, emitted once per basic block for `key`: for values that are a
        pure function of the key (a thread's coordinate of a slot), which every op of an
        unrolled iteration would otherwise emit again. An earlier instruction of the block
        where the builder appends dominates the rest of it."""
        known = self.block_memo.get(key)
        if known is not None and known[0] is self.b.block:
            return known[1]
        value = compute()
        self.block_memo[key] = (self.b.block, value)
        return value

    # ---- temporaries and scopes --------------------------------------------------------------
    def entry_alloca(self, type_: ir.Type, init: ir.Value | None = None) -> ir.Value:
        slot = self.entry.alloca(type_)
        if init is not None:
            self.entry.store(init, slot)
        return slot

    def element_count(self, shape: Shape) -> ir.Value:
        b = self.b
        count = ir.Constant(I64, 1)
        for extent in shape:
            count = b.mul(count, extent) if not _is_const(count, 1) else extent
        return count

    def alloc(self, dtype: str, shape: Shape) -> Memory:
        """A row-major register-typed temporary of `shape`."""
        element = register_type(dtype)
        size_bytes = max(1, (element.width + 7) // 8) if isinstance(element, ir.IntType) else \
            (4 if str(element) == "float" else 8)
        strides = self.row_major_strides(shape)
        if all(isinstance(e, ir.Constant) for e in shape):
            count = math.prod(int(e.constant) for e in shape)
            if count * size_bytes <= STACK_LIMIT_BYTES:
                storage = self.entry.alloca(ir.ArrayType(element, max(count, 1)))
                return Memory(dtype, tuple(shape), self.entry.bitcast(storage, element.as_pointer()), strides)
        hoist = self.loop_depth > 0 and all(isinstance(e, ir.Constant) or id(e) in self.invariant for e in shape)
        builder = self.prologue if hoist else self.b
        count = ir.Constant(I64, 1)
        for extent in shape:
            count = builder.mul(count, extent)
        nbytes = builder.mul(count, ir.Constant(I64, size_bytes))
        raw = self.hooks.heap_alloc(self, builder, nbytes)
        pointer = builder.bitcast(raw, element.as_pointer())
        at_exit = hoist or (self.loop_depth == 0 and self.branch_depth == 0)
        (self.exit_frees if at_exit else self.scopes[-1]).append(raw)
        return Memory(dtype, tuple(shape), pointer, strides)

    def row_major_strides(self, shape: Shape) -> tuple[ir.Value, ...]:
        strides, step = [], ir.Constant(I64, 1)
        for extent in reversed(shape):
            strides.append(step)
            step = extent if _is_const(step, 1) else (
                ir.Constant(I64, int(step.constant) * int(extent.constant))
                if isinstance(step, ir.Constant) and isinstance(extent, ir.Constant) else self.b.mul(step, extent))
        return tuple(reversed(strides))

    def materialize(self, value: Tensor) -> Tensor:
        if isinstance(value, (Memory, Registers)) or self.hooks.keep_lazy(self):
            return value
        return self.tabulate(value.dtype, value.shape, lambda idx: value.at(self, idx))

    def tabulate(self, dtype: str, shape: Shape, element: ElementAt, group: Group | None = None) -> Tensor:
        """A temporary holding element(idx) at every coordinate of `shape` (the target
        chooses where: memory here, a thread's registers under a GPU mapping)."""
        return self.hooks.tabulate(self, dtype, shape, element, group)

    def store_into(self, memory: Memory, value: Tensor) -> None:
        self.for_each(memory.shape, lambda idx: self.b.store(value.at(self, idx), memory.address(self, idx)))

    @contextmanager
    def scope(self) -> Iterator[None]:
        self.scopes.append([])
        self._raised.append(set())
        try:
            yield
        finally:
            inner = self._raised.pop()
            self._raised[-1] |= inner
            for raw in self.scopes.pop():
                self.hooks.heap_free(self, self.b, raw)

    # ---- facts a guard establishes ----------------------------------------------------------------
    @contextmanager
    def knowing_below(self, value: ir.Value, bound: ir.Value) -> Iterator[None]:
        """Within: `value` < `bound` (unsigned) holds (the branch of a guard that says so),
        so a bounds check of exactly these two values is left out."""
        self._below.append((value, bound))
        try:
            yield
        finally:
            self._below.pop()

    def known_below(self, value: ir.Value, bound: ir.Value) -> bool:
        return any(known is value and _same_value(limit, bound) for known, limit in self._below)

    @contextmanager
    def masked_lanes(self, live: ir.Value) -> Iterator[None]:
        """Within: elements are emitted unconditionally (no branch), but only where `live`
        holds do they access memory or raise checks: a masked-off element's value is
        garbage, for code that never uses it (a variant's slots past the row's end)."""
        saved = self.lane_mask
        self.lane_mask = live if saved is None else self.b.and_(saved, live)
        try:
            yield
        finally:
            self.lane_mask = saved

    # ---- checks --------------------------------------------------------------------------------
    def number_sites_as(self, sites: list[CheckSite]) -> None:
        """Give these sites the ids they have in another lowering of the same kernel (its
        other entries share one status decoding); sites new here are numbered after them."""
        self.sites = list(sites)
        self._site_ids = {site: ident for ident, site in enumerate(self.sites, 1)}

    def check(self, site: CheckSite, bad: ir.Value) -> None:
        """Note that `bad` (i1) marks an illegal input at `site` (on a live lane)."""
        if self.lane_mask is not None:
            bad = self.b.and_(bad, self.lane_mask)
        ident = self._site_ids.get(site)
        if ident is None:
            self.sites.append(site)
            ident = self._site_ids[site] = len(self.sites)
        if ident not in self._flags:
            # An i8 flag, not i1: with i1 flags LLVM interleaves the predicate ors with the
            # unrolled slots' loads, and the H200 ran vector add 7% and dropout 6% slower
            # (bench/results/gpu-bench-20261201-h200-lead-r2-{new,old3fee745}.log, same run).
            self._flags[ident] = self.entry_alloca(I8, ir.Constant(I8, 0))
        flag = self._flags[ident]
        b = self.b
        for guard in self.check_guards:
            bad = b.and_(bad, guard)
        if isinstance(bad, ir.Constant) and bad.constant in (0, False):
            return     # proven legal here (an access the mask bounds): nothing to or in
        repeat = self.block_memo.get(("check raised", ident, id(bad)))
        if repeat is not None and repeat[0] is b.block and repeat[1] is bad:
            return     # this block ored the same i1 into the flag already (every slot repeats a row's check)
        self.block_memo[("check raised", ident, id(bad))] = (b.block, bad)
        # only checks store to a flag: the value the last check of this block stored is the
        # flag's value here (the load LLVM's SROA would remove, not built)
        raised = b.or_(self.once_per_block(("check flag", ident), lambda: b.load(flag)), b.zext(bad, I8))
        b.store(raised, flag)
        self.block_memo[("check flag", ident)] = (b.block, raised)
        self._raised[-1].add(ident)

    @contextmanager
    def checks_only_where(self, condition: ir.Value) -> Iterator[None]:
        """Checks noted inside count only where `condition` (i1) holds: for code run
        unconditionally whose result is used only where it holds (a region on an empty slice)."""
        self.check_guards.append(condition)
        try:
            yield
        finally:
            self.check_guards.pop()

    def flush_checks(self) -> None:
        """Record the first raised check since the last flush in the status word."""
        b = self.b
        for ident in sorted(self._raised[-1]):
            raised = b.icmp_unsigned("!=", b.load(self._flags[ident]), ir.Constant(I8, 0))
            with b.if_then(raised, likely=False):
                b.cmpxchg(self.status, ir.Constant(I64, 0), ir.Constant(I64, ident), self.hooks.scoped("monotonic"), "monotonic")
        self._raised[-1].clear()

    # ---- finishing -----------------------------------------------------------------------------
    def finish(self) -> None:
        self.flush_checks()
        for action in self.exit_actions:
            action()
        for raw in self.scopes[0] + self.exit_frees:
            self.hooks.heap_free(self, self.b, raw)
        self.b.ret_void()
        self.entry.branch(self._prologue_start)
        self.prologue.branch(self.body_block)


def _same_value(a: ir.Value, b: ir.Value) -> bool:
    """The same SSA value, or equal integer constants (a specialized extent is a constant
    of its own in every view that names it)."""
    return a is b or (isinstance(a, ir.Constant) and isinstance(b, ir.Constant) and a.type == b.type
                      and isinstance(a.constant, int) and a.constant == b.constant)


def _is_const(value: ir.Value, number: int) -> bool:
    return isinstance(value, ir.Constant) and int(value.constant) == number




def _extent(self, extent) -> ir.Value:
    if isinstance(extent, int):
        return ir.Constant(I64, extent)
    return self.env[extent].value


def _shape_of(self, type_) -> tuple[ir.Value, ...]:
    return tuple(self.extent(e) for e in type_.shape)


Emitter.extent = _extent
Emitter.shape_of = _shape_of


def _mangled(type_: ir.Type) -> str:
    """An overloaded intrinsic's type suffix: f32, i64, v32f32 (a vector of 32 floats)."""
    if isinstance(type_, ir.VectorType):
        return f"v{type_.count}{_mangled(type_.element)}"
    return {"float": "f32", "double": "f64"}.get(str(type_), str(type_))
