"""What a target supplies to the shared lowering: the physical mapping of `parallel`, math
functions, atomics and heap temporaries. The host CPU backend implements it in
`intentc.codegen.cpu`; an NVPTX backend maps `parallel` to the grid, math to libdevice and
atomics to scoped instructions, and reuses everything else."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Op
from .pointwise import float_extreme
from .types import is_float, is_signed, register_type
from .values import Body, BufferRef, ElementAt, Group, Lazy, Memory, Shape, Tensor

if TYPE_CHECKING:
    from .emitter import Emitter
    from .memory import Access

Combine = Callable[[ir.Value, ir.Value], ir.Value]

INT_RMW = {"exchange": "xchg", "add": "add", "and": "and", "or": "or", "xor": "xor"}


class TargetHooks(ABC):
    name = "abstract"
    triple = ""
    data_layout = ""
    # The kernel takes its argument words as parameters (one i64 each, then the status
    # pointer) instead of a pointer to them in memory (`abi.py`); and how many words past
    # the ABI's own it takes (a staged program's scratch pointer).
    words_as_params = False
    extra_argument_words = 0

    # ---- the physical mapping ----------------------------------------------------------------
    def lower_top_level(self, em: Emitter, ops: list[Op], lower: Callable[[Emitter, list[Op]], object]) -> None:
        """Lower the kernel's top-level `ops` with `lower` (a target may run them inside a loop
        of its own, or emit other code for a stage of the kernel)."""
        lower(em, ops)

    def substitute(self, em: Emitter, op: Op) -> object | None:
        """None to lower `op` as usual; otherwise the op's value instead of lowering it
        (anything for an op without results: it is then skipped)."""
        return None

    @abstractmethod
    def parallel(self, em: Emitter, op: Op, extents: Shape, iteration: Body) -> None:
        """Run iteration(idx) for every coordinate of the domain `extents` (any order)."""

    def for_each(self, em: Emitter, shape: Shape, body: Body, group: Group | None = None,
                 lane_safe: bool = False) -> None:
        """body(idx) for every coordinate of a tensor-level `shape` (row-major loops here; a
        target may spread the coordinates over threads, always giving a coordinate to the
        same thread for every op of an iteration). `group(idxs, visit)`, when given, is the
        op's vector form over row-major consecutive coordinates, which a target may use
        instead of body (visit(k) makes lane k current); the contiguity of what they address
        is still the group's to check. `lane_safe`: body honors `Emitter.lane_mask` (its
        memory effects go through `Access` lanes, other state only through selects on the
        mask), so a target may run it unbranched on lanes past a tensor's end."""
        em.serial_for_each(shape, body)

    def combine_partials(self, em: Emitter, op: Op, kind: str, value: ir.Value, dtype: str,
                         combine: Combine) -> ir.Value:
        """The full reduction from this thread's partial `value` (a target that spread the
        reduced coordinates over threads combines the partials with `combine`)."""
        return value

    def combine_tuple(self, em: Emitter, op: Op, values: list[ir.Value], identities: list[ir.Value],
                      combine: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]]) -> list[ir.Value]:
        """combine_partials for a reduction whose partial is several values (arg_reduce's
        value and position, generic_reduce's components); `identities` are neutral for
        `combine`, which need not give the same bits with its operands swapped."""
        return values

    def keep_lazy(self, em: Emitter, before_parallel: bool = False) -> bool:
        """Recompute costly element expressions at each use instead of materializing them
        (`before_parallel`: asked for an op's result, which a later iteration may use)."""
        return False

    def lazy_read(self, em: Emitter, resource: object, op: Op | None = None) -> bool:
        """Read `resource` at each use of the result (no temporary) instead of once (`op`: the read)."""
        return False

    def per_coordinate(self, em: Emitter, op: Op) -> bool:
        """Lower the `loop` or `if` op as lazy tensors whose elements each run the region at
        their own coordinate (`coordinate_region.py`; the target has checked that its body
        is element-wise) instead of carrying whole tensors."""
        return False

    def read_at_each_use(self, em: Emitter, resource: object) -> bool:
        """A `lazy_read` of `resource` that is never materialized, not even inside a
        `parallel` iteration (a view every thread of the grid reads: copying it per thread
        would cost more than reading each element where it is used)."""
        return False
    def once(self, em: Emitter, effect: Callable[[], Sequence[ir.Value]]) -> Sequence[ir.Value]:
        """Run `effect` (a scalar access with side effects) once for the iteration being
        lowered and give its values to every thread that runs the iteration (here, one)."""
        return effect()

    def shared_temporary(self, em: Emitter, dtype: str, shape: Shape) -> tuple[Memory, Callable[[], None]]:
        """(a row-major temporary of `shape` that an op fills part by part, finish()): after
        finish() every thread running the iteration may read every element (a target whose
        threads share an iteration puts it in memory they share). A plain temporary here."""
        return em.alloc(dtype, shape), lambda: None

    def buffer_memory(self, em: Emitter, op: Op, dtype: str, shape: Shape) -> Memory | None:
        """Storage for the `buffer` op `op` that all the threads running its iteration share
        (each access then meets them at a barrier, `before_buffer_access`), or None for a
        temporary of the thread's own (`Emitter.alloc`)."""
        return None

    def before_buffer_access(self, em: Emitter, buffer: BufferRef) -> None:
        """Emitted before each access to `buffer` (outside the access's coordinate loop):
        nothing for a buffer of the thread's own."""
        return None

    def tabulate(self, em: Emitter, dtype: str, shape: Shape, element: ElementAt,
                 group: Group | None = None) -> Tensor:
        """A temporary of `shape` holding element(idx) at every coordinate: a row-major one here
        (`group`: the vector form of element, as for `for_each`)."""
        memory = em.alloc(dtype, shape)
        em.for_each(shape, lambda idx: em.b.store(element(idx), memory.address(em, idx)))
        return memory

    def result_arrays(self, em: Emitter, op: Op, dtypes: list[str],
                      shape: Shape) -> tuple[list[Memory], Callable[[], None]]:
        """(temporaries of `shape` for `op`'s results, computed together at each coordinate,
        finish()): fresh temporaries here; a target whose threads share an iteration may
        stage them where every thread reads them once finish() has run."""
        return [em.alloc(dtype, shape) for dtype in dtypes], lambda: None

    def histogram_counts(self, em: Emitter, dtype: str,
                         bins: ir.Value) -> tuple[Memory, Callable[[ir.Value], None], Callable[[], None]]:
        """(zeroed counts of `bins` elements, increment(pointer), finish()) for a histogram:
        a temporary counted in place here; a target whose threads share an iteration counts
        atomically in memory they share, and finish() makes the counts visible to all."""
        counts = em.alloc(dtype, (bins,))
        zero = ir.Constant(register_type(dtype), 0)
        em.store_into(counts, Lazy(dtype, (bins,), lambda e, idx: zero))

        def increment(pointer: ir.Value) -> None:
            em.b.store(em.b.add(em.b.load(pointer), ir.Constant(register_type(dtype), 1)), pointer)
        return counts, increment, lambda: None

    def scan(self, em: Emitter, shape: Shape, elements: Callable[[list[ir.Value]], list[ir.Value]],
             combine: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]], dtypes: list[str],
             exclusive: bool, reverse: bool, first_exclusive: list[ir.Value],
             neutral: list[ir.Value] | None) -> list[Tensor] | None:
        """A target's own lowering of a scan along the last axis of `shape` (`elements(idx)`: its components at a
        coordinate; `neutral`: components `combine` leaves unchanged, None for a generic
        combine that has none; `first_exclusive`: the first exclusive prefix), one tensor a
        component, or None for the shared sequential prefix."""
        return None

    def inline_region_scan(self, em: Emitter) -> bool:
        """Run a region_scan's regions on the whole axis unconditionally (checks counting only
        where the axis is non-empty) and keep emit's outputs as they are, rather than copy
        them into temporaries (a target whose temporaries are costly)."""
        return False

    # ---- math ---------------------------------------------------------------------------------
    def approximate(self, em: Emitter, name: str, args: list[ir.Value], flush: bool) -> ir.Value | None:
        """An approximate-mode f32 `name` (exp2, tanh, fdiv) in the target's own instruction
        (within the spec's bounds, §5.1), or None for the shared correctly rounded code."""
        return None

    def mul_wide_u32(self, em: Emitter, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(high, low) 32 bits of the 64-bit product of two u32 values (Philox's rounds): a
        64-bit product here."""
        wide = em.b.mul(em.b.zext(a, ir.IntType(64)), em.b.zext(b, ir.IntType(64)))
        return em.b.trunc(em.b.lshr(wide, ir.Constant(ir.IntType(64), 32)), ir.IntType(32)), em.b.trunc(
            wide, ir.IntType(32))

    def float_bits(self, em: Emitter, value: ir.Value) -> ir.Value:
        """The bits of an f32 as an i32 (a target may keep the value opaque to work around
        its code generator)."""
        return em.b.bitcast(value, ir.IntType(32))

    def float_extreme(self, em: Emitter, name: str, a: ir.Value, b: ir.Value) -> ir.Value | None:
        """IEEE 754-2019 `maximum` / `minimum` (NaN propagates, -0 < +0) of two floats in the
        target's own instruction, or None for the shared compare-and-select code."""
        return None

    def widen_exactly(self, em: Emitter, word: ir.Value, dtype: str) -> ir.Value | None:
        """The f64 value of the stored pattern `word` of the low float `dtype`, exact for
        every pattern that is not a NaN (the caller handles NaNs), in the target's own
        conversion; None for the shared branch-free decoding."""
        return None

    def round_to_format(self, em: Emitter, x: ir.Value, src: str, dst: str, saturate: bool = False) -> ir.Value | None:
        """The register image of float `x` (of dtype `src`) cast to the low float `dst`
        (round to nearest even, finite overflow to infinity, §5.2; `saturate`: a
        saturating_cast, which clamps to the largest finite) in the target's own conversion,
        or None for the shared software rounding (`lowfloat.round_f64`)."""
        return None

    def narrow_exactly(self, em: Emitter, value: ir.Value, dtype: str) -> ir.Value | None:
        """The stored pattern (iN) of an f64 `value` on the low float `dtype`'s grid, exact for
        every value that is not a NaN (the caller handles NaNs), in the target's own
        conversion; None for the shared branch-free encoding."""
        return None

    def math_f32(self, em: Emitter, name: str, x: ir.Value) -> ir.Value | None:
        """`name` of an f32 value in the target's own f32 function (within the spec's math
        library bounds), or None to evaluate in f64 and round once."""
        return None

    def float_remainder(self, em: Emitter, a: ir.Value, b: ir.Value) -> ir.Value | None:
        """`fmod` of two f32 or f64 values, exact (docs/kir.md §4), in the target's own function;
        None where LLVM's `frem` is exact (the host's libm fmod)."""
        return None

    @abstractmethod
    def math_f64(self, em: Emitter, name: str, x: ir.Value) -> ir.Value:
        """`name` (exp, log, erfc, i0, ...) of an f64 value within the spec's bounds."""

    # ---- memory ---------------------------------------------------------------------------------
    def masked_load(self, em: Emitter, pointer: ir.Value, live: ir.Value, default: ir.Value) -> ir.Value:
        """The element at `pointer` (storage = register type) where `live`, else `default`;
        a masked-off lane makes no access."""
        return em.when(live, lambda: em.b.load(pointer), default)

    def masked_store(self, em: Emitter, pointer: ir.Value, value: ir.Value, live: ir.Value) -> None:
        """Store `value` (storage = register type) at `pointer` where `live`."""
        with em.b.if_then(live):
            em.b.store(value, pointer)

    def view_load(self, em: Emitter, view: object, pointer: ir.Value, live: ir.Value,
                  default: ir.Value) -> ir.Value | None:
        """A view element's load the target stages its own way (the GPU's lane-rows windows),
        or None for `masked_load`."""
        return None

    def view_store(self, em: Emitter, view: object, pointer: ir.Value, value: ir.Value, live: ir.Value) -> bool:
        """Whether the target staged a view element's store its own way (else `masked_store`)."""
        return False

    @abstractmethod
    def heap_alloc(self, em: Emitter, builder: ir.IRBuilder, nbytes: ir.Value) -> ir.Value:
        """A pointer to `nbytes` of temporary memory (dynamic extents), emitted with `builder`."""

    @abstractmethod
    def heap_free(self, em: Emitter, builder: ir.IRBuilder, pointer: ir.Value) -> None:
        """Release what heap_alloc returned."""

    # ---- atomics ---------------------------------------------------------------------------------
    def scoped(self, order: str) -> str:
        """An LLVM ordering with the target's scope for atomics of a kernel (system here)."""
        return order

    def scatter_update(self, em: Emitter, op: Op, acc: Access, pointer: ir.Value, new: ir.Value, kind: str | None,
                       combine: Combine) -> None:
        """*pointer = combine(*pointer, new) for one active lane of a scatter_reduce (`kind`
        the builtin kind, None for a combine region); a plain read-modify-write here, as
        iterations on one thread never overlap."""
        acc.store(pointer, combine(acc.load(pointer), new))

    def masked_scatter(self, em: Emitter, acc: Access, pointer: ir.Value, new: ir.Value, live: ir.Value,
                       kind: str | None) -> bool:
        """The update of `scatter_update` where `live`, without a branch (a predicated
        instruction), if the target has one for it; False: the caller branches around
        `scatter_update`."""
        return False

    def atomic_rmw(self, em: Emitter, op: Op, kind: str, pointer: ir.Value, value: ir.Value, dtype: str,
                   order: str) -> ir.Value:
        """One indivisible read-modify-write; returns the old register value."""
        b = em.b
        if not is_float(dtype):
            if kind in INT_RMW:
                operation = INT_RMW[kind]
            else:
                operation = ("max" if kind == "max" else "min") if is_signed(dtype) else (
                    "umax" if kind == "max" else "umin")
            return b.atomic_rmw(operation, pointer, value, self.scoped(order))
        if kind == "add":
            return b.atomic_rmw("fadd", pointer, value, self.scoped(order))
        if kind == "exchange":
            return b.atomic_rmw("xchg", pointer, value, self.scoped(order))
        return self.cas_loop(em, pointer, value, order, lambda old: float_extreme(em, "maximum" if kind == "max"
                                                                                   else "minimum", old, value))

    def cas_loop(self, em: Emitter, pointer: ir.Value, value: ir.Value, order: str,
                 update: Callable[[ir.Value], ir.Value]) -> ir.Value:
        """old = *p; do new = update(old) while !cas(p, old, new); return old (bitwise compare)."""
        b = em.b
        int_type = value.type if isinstance(value.type, ir.IntType) else ir.IntType(32 if str(value.type) == "float"
                                                                                    else 64)
        int_pointer = b.bitcast(pointer, int_type.as_pointer())
        start = b.load_atomic(int_pointer, self.scoped("monotonic"), int_type.width // 8)
        entry = b.block
        retry, done = em.new_block("cas.retry"), em.new_block("cas.done")
        b.branch(retry)
        b.position_at_end(retry)
        seen = b.phi(int_type)
        seen.add_incoming(start, entry)
        new = b.bitcast(update(b.bitcast(seen, value.type)), int_type)
        failure = {"acq_rel": "acquire", "release": "monotonic"}.get(order, order)
        pair = b.cmpxchg(int_pointer, seen, new, self.scoped(order), failure)
        seen.add_incoming(b.extract_value(pair, 0), b.block)
        b.cbranch(b.extract_value(pair, 1), done, retry)
        b.position_at_end(done)
        return b.bitcast(seen, value.type)
