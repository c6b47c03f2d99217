"""NVPTX hooks for the shared lowering: the grid for `parallel`, libdevice for math,
device malloc/free for dynamic temporaries. Atomics use the shared LLVM atomics (LLVM's
NVPTX backend emits scoped `atom`/`ld.acquire`/`st.release` for them)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.nodes import Op
from ...ir.optable import ops_where
from ..llvm.reduction import identity_const
from ..llvm.outlined import outlined
from ..llvm.special import i0
from ..llvm.target import Combine, TargetHooks
from ..llvm.types import F32, F64, I32, I64, I8, register_type
from ..llvm.values import Body, BufferRef, ElementAt, Group, Lazy, Memory, Registers, Shape, Tensor
from .cta import (barrier, block_combine, block_slots, block_stride, full_slot, guarded_slot, on_thread_zero,
                  shared_array, slot_coordinate, sreg, unravel)
from .cta_buffers import buffer_storage, cta_scratch
from .cta_effects import once
from .cta_group_loop import run_trips
from .cta_groups import group_iterations
from .cta_reduce import block_combine_tuple, shared_rows, stage_in_shared
from .cta_scan import Scan, chunk_scan, chunked_for_each, scan_slots, scans_read
from .cta_staging import stage
from .cta_transpose import permuted
from .cta_votes import cta_vote, votes
from .lane_rows import LaneWalk
from . import narrow, ptx_math, widen
from .f8_casts import PTX_FORMAT as F8_FORMATS, f8_pattern, round_to_f8
from .mapping import Mapping
from .number_extremes import number_extreme
from .outlined_math import call_outlined, long_function
from .ptx_asm import global_pointer
from .tile_matmul import emit_tile_contraction
from .tile_structured import StructuredPlan, emit_structured

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter
    from ..llvm.memory import Access

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"

# libdevice (https://docs.nvidia.com/cuda/libdevice-users-guide). The spec's math library
# precision (§5) takes its bounds from the CUDA math library's, so f32 uses libdevice's f32
# functions (`__nv_expf`, ...: within the CUDA Programming Guide's ULP table, e.g. expf 2,
# logf 1, log1pf 1, erfcf 4) rather than f64 evaluation, which costs 10-20 FP64 instructions
# an element; f64 uses the f64 functions.
MATH = ops_where(lambda op: op.libm)
LIBDEVICE = {name: f"__nv_{name}" for name in MATH}
LIBDEVICE_F32 = {name: f"__nv_{name}f" for name in MATH}

# Register types with a predicated PTX load/store: (PTX type, inline-asm constraint).
PREDICATED = {"float": ("f32", "f"), "double": ("f64", "d"), "i16": ("b16", "h"), "i32": ("b32", "r"),
              "i64": ("b64", "l")}

# `red.global.add` of a view's element dtype: (PTX type, inline-asm constraint); integer
# addition is the same bits signed or not.
RED_ADD = {"f32": ("f32", "f"), "f64": ("f64", "d"), "i32": ("u32", "r"), "u32": ("u32", "r"),
           "i64": ("u64", "l"), "u64": ("u64", "l")}

# The status word's value when the device heap is exhausted (ids of checks are positive).
STATUS_OUT_OF_HEAP = -1


class NvptxHooks(TargetHooks):
    name = "nvptx"
    triple = TRIPLE
    data_layout = DATA_LAYOUT
    # argument words as kernel parameters: a launch passes them by value (no upload)
    words_as_params = True

    def __init__(self, mapping: Mapping, arch: str = ""):
        self.mapping = mapping
        self.arch = arch                      # the instructions beyond sm_80's it may use ("": none)
        self.plan = mapping.cta               # the CTA mapping's plan (cta.py), or None
        # lowering the body of a CTA-mapped iteration, or a grid-wide program's top level
        self.in_cta = self.plan is not None and self.plan.grid
        self.current_slot = 0                 # the register form's coordinate being visited
        self.trip_start: ir.Value | None = None   # a trip's first coordinate in the group loop (cta_group_loop.py)
        self.extra_argument_words = mapping.mma.extra_argument_words if mapping.mma is not None else 0
        self.lane_walk: LaneWalk | None = None   # the lane-rows mapping's walk and windows (lane_rows.py)

    # ---- the physical mapping ----------------------------------------------------------------
    def parallel(self, em: Emitter, op: Op, extents: Shape, iteration: Body) -> None:
        if op is not self.mapping.parallel or em.loop_depth:
            em.serial_for_each(extents, iteration)
            return
        if self.mapping.mma is not None:    # a tiled contraction on the tensor cores
            (emit_structured if isinstance(self.mapping.mma, StructuredPlan) else emit_tile_contraction)(
                em, self.mapping.mma)
            return
        if self.mapping.plan is not None:   # a whole-kernel plan with its own emitter
            self.mapping.plan.emit(em)
            return
        b = em.b
        total = em.element_count(extents)
        # linear < total: each coordinate lies below its extent as the source names it (the
        # domain's extents are those or, where one is negative, 0: no iteration runs)
        named = [em.env[name].value for name in op.operands]

        def body(linear):
            self.in_cta = self.plan is not None
            idx = unravel(em, linear, extents)
            try:
                with ExitStack() as known:
                    for coordinate, extent in zip(idx, named):
                        known.enter_context(em.knowing_below(coordinate, extent))
                    if self.plan is not None and self.plan.trip_slots:
                        run_trips(em, self, lambda: iteration(idx))
                    else:
                        iteration(idx)
            finally:
                self.in_cta = False
        if self.mapping.lanes is not None:  # iteration it on lane it mod 32 of a warp (lane_rows.py)
            self.lane_walk = LaneWalk(em, self.mapping.lanes)
            self.lane_walk.walk(total, body)
            return
        if self.plan is not None:          # iteration it on CTA it mod nctaid, all its threads
            start, stride = b.zext(sreg(em, "ctaid.x"), I64), b.zext(sreg(em, "nctaid.x"), I64)
            if self.plan.iterations > 1:   # or on one group of `width` threads of the CTA
                start, stride = group_iterations(em, self.plan, start, stride)
        else:                               # iteration it on thread it mod (nctaid * ntid)
            start = b.zext(b.add(b.mul(sreg(em, "ctaid.x"), sreg(em, "ntid.x")), sreg(em, "tid.x")), I64)
            stride = b.zext(b.mul(sreg(em, "nctaid.x"), sreg(em, "ntid.x")), I64)
        em.loop(start, total, body, stride, name="grid")

    def for_each(self, em: Emitter, shape: Shape, body: Body, group: Group | None = None,
                 lane_safe: bool = False) -> None:
        if not self.in_cta:
            if not (self.lane_walk is not None and self.lane_walk.for_each_chunked(shape, body)):
                em.serial_for_each(shape, body)
        elif not shape:
            on_thread_zero(em, self.plan, lambda: body([]))
        else:
            self.in_cta = False            # a coordinate's own work stays on its thread
            try:
                if self.plan.slots and self.plan.holds(_size(shape)):
                    self._each_slot(em, shape, body, group, lane_safe)
                elif scans := self._scans_read(em):   # the dynamic form's scans, recomputed here
                    chunked_for_each(em, self.plan, shape, body, scans)
                else:                      # the dynamic form, or a histogram's bins
                    block_stride(em, self.plan, shape, body)
            finally:
                self.in_cta = True

    def _each_slot(self, em, shape, body, group, lane_safe) -> None:
        """The register form: body per slot, or group(idxs, visit) per full group of V
        consecutive coordinates when the op has a vector form (visit(k): lane k's slot
        becomes current, for reading other tensors there)."""
        plan = self.plan
        if group is None or plan.vector == 1:
            block_slots(em, plan, shape, body, self._visit, lane_safe, self.trip_start)
            return
        for number in range(plan.groups):
            slots = range(number * plan.vector, (number + 1) * plan.vector)
            if not plan.full(number):
                for slot in slots:
                    self.current_slot = slot
                    linear = slot_coordinate(em, plan, slot)
                    with guarded_slot(em, plan, slot, linear, shape, lane_safe):
                        body(unravel(em, linear, shape))
                continue
            linears = [slot_coordinate(em, plan, slot, self.trip_start) for slot in slots]
            with ExitStack() as known:
                for linear in linears:
                    known.enter_context(full_slot(em, linear, shape))
                group([unravel(em, linear, shape) for linear in linears],
                      lambda lane, first=slots[0]: self._visit(first + lane))

    def _scans_read(self, em) -> list:
        op = em.current_op
        names = list(op.operands) + [v for g in op.groups for v in g.values] if op is not None else []
        found: list = []
        for name in names:
            scans_read(em.env.get(name), found)
        return found

    def _visit(self, slot: int) -> None:
        self.current_slot = slot

    def combine_partials(self, em: Emitter, op: Op, kind: str, value: ir.Value, dtype: str,
                         combine: Combine) -> ir.Value:
        if not self.in_cta:
            return value
        if votes(self.plan, kind, dtype):
            return cta_vote(em, kind, value)
        return block_combine(em, self.plan, value, identity_const(kind, dtype), combine)

    def combine_tuple(self, em: Emitter, op: Op, values: list[ir.Value], identities: list[ir.Value],
                      combine: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]]) -> list[ir.Value]:
        if not self.in_cta:
            return values
        # a reduction with a region (generic_reduce) combines by the author's code: rolled steps
        return block_combine_tuple(em, self.plan, values, identities, combine, rolled=bool(op.regions))

    def keep_lazy(self, em: Emitter, before_parallel: bool = False) -> bool:
        if self.plan is None:
            return False
        if self.in_cta:
            return not self.plan.slots
        return before_parallel and not self._hoists_prologue

    def lazy_read(self, em: Emitter, resource: object, op: Op | None = None) -> bool:
        if self.lane_walk is not None and op is not None and op.results[0] in self.mapping.lanes.lazy_reads:
            return True
        if self.plan is None:
            return self.read_at_each_use(em, resource)
        if self.in_cta and self.plan.slots:
            return False
        return getattr(resource, "name", None) in self.plan.lazy_views

    def read_at_each_use(self, em: Emitter, resource: object) -> bool:
        return self.plan is None and getattr(resource, "name", None) in self.mapping.lazy_views

    def per_coordinate(self, em: Emitter, op: Op) -> bool:
        return op.results[0] in self.mapping.coordinate_regions
    @property
    def _hoists_prologue(self) -> bool:
        """In the register form a thread owns the same coordinates in every iteration, so a
        costly value the top level computes before the `parallel` (a window, a table) is
        computed once a thread, into its slots, rather than in every iteration (not where
        the slots are a loop's trips: there it is read at each use)."""
        return bool(self.plan and self.plan.slots and not self.plan.grid and not self.plan.trip_slots)

    def tabulate(self, em: Emitter, dtype: str, shape: Shape, element: ElementAt,
                 group: Group | None = None) -> Tensor:
        staged = self._staged(em) if self.in_cta and shape else None
        if staged is not None:
            return stage_in_shared(em, self, dtype, shape, element, *staged)
        if self.in_cta and not self.plan.slots and shape and self._reads_shared_buffer(em):
            # the dynamic form: a snapshot the CTA shares (a later write must not show through)
            memory, finish = self.shared_temporary(em, dtype, shape)
            self.for_each(em, shape, lambda idx: em.b.store(element(idx), memory.address(em, idx)))
            finish()
            return memory
        if not self.in_cta and self._hoists_prologue and shape:
            return self._prologue_value(em, dtype, shape, element)
        if not (self.in_cta and self.plan.slots and shape):
            return super().tabulate(em, dtype, shape, element, group)
        op = em.current_op
        if op is not None and op.results and op.results[0] in self.plan.staged:
            order = dict(self.plan.transposed).get(op.results[0])
            return stage(em, dtype, shape, element, self._visitor(em, shape, order), padded=order is not None)
        if not self.plan.holds(_size(shape)):  # a smaller tensor beside the tiles: recomputed at each use
            return Lazy(dtype, tuple(shape), lambda e, idx: element(idx))
        registers = self._registers(em, dtype, shape)

        def store_group(idxs, visit):
            for lane, value in enumerate(group(idxs, visit)):
                visit(lane)
                em.b.store(value, registers.slot(em, self.current_slot))
        self.for_each(em, shape, lambda idx: em.b.store(element(idx), registers.slot(em, self.current_slot)),
                      store_group if group is not None else None, lane_safe=True)
        return registers

    def shared_temporary(self, em: Emitter, dtype: str, shape: Shape) -> tuple[Memory, Callable[[], None]]:
        """In a CTA-mapped iteration: the CTA's shared memory (static, checked by the plan),
        complete for every thread after finish()."""
        if not self.in_cta or self.plan.grid:
            return super().shared_temporary(em, dtype, shape)
        barrier(em)                         # the previous iteration's readers are done
        if _size(shape) is None:            # sized at launch (the plan checked): the CTA's scratch
            return cta_scratch(em, self.plan, dtype, shape), lambda: barrier(em)
        flat = shared_array(em, dtype, _size(shape))
        return Memory(dtype, tuple(shape), flat.ptr, em.row_major_strides(shape)), lambda: barrier(em)

    def buffer_memory(self, em: Emitter, op: Op, dtype: str, shape: Shape) -> Memory | None:
        place = dict(self.plan.buffers).get(op.results[0]) if self.in_cta and not self.plan.grid else None
        return buffer_storage(em, self.plan, place, dtype, shape) if place is not None else None

    def before_buffer_access(self, em: Emitter, buffer: BufferRef) -> None:
        if buffer.shared:
            barrier(em)

    def once(self, em: Emitter, effect: Callable[[], Sequence[ir.Value]]) -> Sequence[ir.Value]:
        if not self.in_cta or self.plan.grid:
            return super().once(em, effect)
        return once(em, self.plan, effect)

    def _visitor(self, em, shape, order) -> Callable[[Body], None]:
        """for_each over `shape` for staging, in the axis `order` the plan gives a transposed
        read (cta_transpose.py: neighbouring lanes on neighbouring addresses)."""
        if order is None:
            return lambda body: self.for_each(em, shape, body)
        return lambda body: self.for_each(em, permuted(shape, order), lambda idx: body(permuted(idx, order)))

    def _prologue_value(self, em, dtype, shape, element) -> Tensor:
        """A top-level value for the iterations: this thread's slots of it when it has the
        iteration's size (the same coordinates in every iteration), else recomputed at
        each use."""
        if not self.plan.holds(_size(shape)):
            return Lazy(dtype, tuple(shape), lambda e, idx: element(idx))
        registers = self._registers(em, dtype, shape)
        block_slots(em, self.plan, shape, lambda idx: em.b.store(element(idx), registers.slot(em, self.current_slot)),
                    self._visit)
        return registers

    def result_arrays(self, em: Emitter, op: Op, dtypes: list[str],
                      shape: Shape) -> tuple[list[Memory], Callable[[], None]]:
        """A partial arg_reduce's values and positions in shared memory (the plan stages
        them), readable by every thread after finish()'s barrier."""
        staged = self._staged(em) if self.in_cta else None
        if staged is None:
            return super().result_arrays(em, op, dtypes, shape)
        arrays = [shared_rows(em, dtype, shape, staged[0]) for dtype in dtypes]
        barrier(em)                         # the previous iteration's readers are done
        return arrays, lambda: barrier(em)

    def _reads_shared_buffer(self, em) -> bool:
        op = em.current_op
        return (op is not None and op.name == "read" and isinstance(em.env.get(op.operands[0]), BufferRef)
                and em.env[op.operands[0]].shared)

    def _staged(self, em) -> tuple[int, bool] | None:
        """(elements, by_block) when the op being lowered is a partial reduction that the
        plan stages in shared memory."""
        op = em.current_op
        name = op.results[0] if op is not None and op.results else None
        return next(((count, by_block) for staged, count, by_block in self.plan.shared_results if staged == name),
                    None)

    def _registers(self, em, dtype, shape) -> Registers:
        array = em.entry_alloca(ir.ArrayType(register_type(dtype), self.plan.slots))
        return Registers(dtype, tuple(shape), array)

    def histogram_counts(self, em: Emitter, dtype: str,
                         bins: ir.Value) -> tuple[Memory, Callable[[ir.Value], None], Callable[[], None]]:
        """In the CTA mapping: the CTA's counts in shared memory, zeroed by all threads,
        incremented with block-scoped atomics, complete for every thread after finish()."""
        if not self.in_cta:
            return super().histogram_counts(em, dtype, bins)
        counts = shared_array(em, dtype, int(bins.constant))
        zero, one = ir.Constant(register_type(dtype), 0), ir.Constant(register_type(dtype), 1)
        barrier(em)                         # the previous iteration's readers are done
        self.for_each(em, (bins,), lambda idx: em.b.store(zero, counts.address(em, idx)))
        barrier(em)

        def increment(pointer):
            em.b.atomic_rmw("add", pointer, one, 'syncscope("block") monotonic')
        return counts, increment, lambda: barrier(em)

    def scan(self, em: Emitter, shape: Shape, elements: Callable[[list[ir.Value]], list[ir.Value]],
             combine: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]], dtypes: list[str],
             exclusive: bool, reverse: bool, first_exclusive: list[ir.Value],
             neutral: list[ir.Value] | None) -> list[Tensor] | None:
        """A block scan (cta_scan.py): into registers, group by group, in the register
        form; recomputed in its consumers' chunked loops in the dynamic form. A generic
        combine gets a presence flag in front, whose absence is neutral; the lines of an
        N-D tensor a head flag (a segmented scan)."""
        if not self.in_cta:
            return None
        scan = Scan(shape, elements, combine, neutral or first_exclusive, dtypes, exclusive, reverse, first_exclusive)
        scan = (scan.with_presence(em) if neutral is None else scan).segmented(em)
        scanned = scan_slots(em, self, scan) if self.plan.slots else chunk_scan(em, scan)
        return scanned[len(scanned) - len(dtypes):]          # without the presence and head flags

    def inline_region_scan(self, em: Emitter) -> bool:
        return self.in_cta and not self.plan.grid

    # ---- math ---------------------------------------------------------------------------------
    def math_f32(self, em: Emitter, name: str, x: ir.Value) -> ir.Value | None:
        if name not in LIBDEVICE_F32:
            return None
        if self.mapping.outlined_math and long_function(LIBDEVICE_F32[name]):
            return call_outlined(em, LIBDEVICE_F32[name], x)
        if self.arch and (self.mapping.math_templates or getattr(self.mapping.plan, "math_asm", False)):
            # the mapping's choice (ptx_math.TEMPLATE_KINDS), or the plan's (flash_mma.py)
            inline = ptx_math.call(em.b, LIBDEVICE_F32[name], self.arch, x)
            if inline is not None:
                return inline
        return em.b.call(em.declare(LIBDEVICE_F32[name], F32, [F32]), [x])

    def math_f64(self, em: Emitter, name: str, x: ir.Value) -> ir.Value:
        if name == "i0" and em.loop_depth == 0:
            # about 250 instructions, computed once a thread outside every loop (a top-level
            # value in each slot): one copy, called from every slot
            helper = outlined(em, "intentc_i0", ir.FunctionType(F64, [F64]),
                              lambda v: i0(em, v, lambda w: self.math_f64(em, "exp", w)))
            return em.b.call(helper, [x])
        if name == "i0":    # inside a loop: inline, no call in the loop's body
            return i0(em, x, lambda v: self.math_f64(em, "exp", v))
        return em.b.call(em.declare(LIBDEVICE[name], F64, [F64]), [x])

    def float_remainder(self, em: Emitter, a: ir.Value, b: ir.Value) -> ir.Value | None:
        """libdevice's fmod, exact (0 ULP in the CUDA Programming Guide's table). LLVM's NVPTX
        backend expands `frem` as a - trunc(a / b) * b with a rounded quotient: wrong for large
        quotients, the sign of a zero remainder, and a zero divisor."""
        name, type_ = ("__nv_fmod", F64) if a.type == F64 else ("__nv_fmodf", F32)
        return em.b.call(em.declare(name, type_, [type_, type_]), [a, b])

    def approximate(self, em: Emitter, name: str, args: list[ir.Value], flush: bool) -> ir.Value | None:
        """ex2.approx[.ftz].f32, tanh.approx.f32, div.approx[.ftz].f32 (PTX ISA §9.7.3),
        whose bounds §5.1 adopts; ftz flushes subnormal inputs and results as §5.1 says."""
        ftz = ".ftz" if flush and name != "tanh" else ""
        if name == "tanh" and flush:
            return None
        text = {"exp2": f"ex2.approx{ftz}.f32 $0, $1;", "tanh": "tanh.approx.f32 $0, $1;",
                "fdiv": f"div.approx{ftz}.f32 $0, $1, $2;"}[name]
        constraints = "=f," + ",".join("f" for _ in args)
        return em.b.asm(ir.FunctionType(F32, [F32] * len(args)), text, constraints, list(args), side_effect=False)

    def float_extreme(self, em: Emitter, name: str, a: ir.Value, b: ir.Value) -> ir.Value | None:
        # `max.NaN.f32` / `min.NaN.f32` (sm_80+): one instruction where the shared code takes
        # eight (compares, a select for -0 < +0, a NaN test); f64 has no such instruction.
        if not name.endswith("_num") and a.type == F32:
            return em.call_intrinsic(name, a, b)
        if a.type == F32:
            return number_extreme(em, name, a, b)
        return None

    def widen_exactly(self, em: Emitter, word: ir.Value, dtype: str) -> ir.Value | None:
        return widen.widen_exactly(em, word, dtype)

    def mul_wide_u32(self, em: Emitter, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
        # `mul.hi.u32` and `mul.lo.u32`: from a 64-bit product, LLVM's InstCombine turned the
        # zext(trunc) operands into masks of i64 values and the NVPTX backend emitted
        # `mul.lo.s64` (several IMADs) for Philox's 20 products an element.
        return em.b.call(em.declare("llvm.nvvm.mulhi.ui", I32, [I32, I32]), [a, b]), em.b.mul(a, b)
    def round_to_format(self, em: Emitter, x: ir.Value, src: str, dst: str, saturate: bool = False) -> ir.Value | None:
        if dst in F8_FORMATS:
            return round_to_f8(em, x, src, dst, saturate, self.arch)
        return None if saturate else narrow.round_to_format(em, x, src, dst)

    def narrow_exactly(self, em: Emitter, value: ir.Value, dtype: str) -> ir.Value | None:
        if dtype in F8_FORMATS:
            return f8_pattern(em, value, dtype, self.arch)
        return narrow.narrow_exactly(em, value, dtype)

    def float_bits(self, em: Emitter, value: ir.Value) -> ir.Value:
        # A register move the optimizer cannot see through: ptxas stored the low byte of
        # `st.b8` from an f32 register wrongly (quantize_q8_k's scale, byte 0 read as 0).
        return em.b.asm(ir.FunctionType(I32, [F32]), "mov.b32 $0, $1;", "=r,f", [value], side_effect=False)

    # ---- atomics (device scope: a kernel's threads share one GPU) -------------------------------
    def scoped(self, order: str) -> str:
        return f'syncscope("device") {order}'

    def scatter_update(self, em: Emitter, op: Op, acc: Access, pointer: ir.Value, new: ir.Value, kind: str | None,
                       combine: Combine) -> None:
        """An indivisible update: atomicrmw for the builtin kinds of register-width views,
        a CAS loop (bitwise compare) for float max/min and combine regions."""
        from ..llvm.values import ViewRef
        from ..llvm.types import register_type, storage_type
        dtype = acc.resource.dtype
        if not isinstance(acc.resource, ViewRef) or storage_type(dtype) != register_type(dtype) or dtype == "bool":
            return super().scatter_update(em, op, acc, pointer, new, kind, combine)
        builtin = {"add": "add", "and": "and", "or": "or", "xor": "xor", "max": "max", "min": "min"}
        if kind in builtin and not (kind in ("max", "min") and dtype in ("f32", "f64")):
            self.atomic_rmw(em, op, kind, pointer, new, dtype, "monotonic")
            return
        self.cas_loop(em, pointer, new, "monotonic", lambda old: combine(old, new))

    def masked_scatter(self, em: Emitter, acc: Access, pointer: ir.Value, new: ir.Value, live: ir.Value,
                       kind: str | None) -> bool:
        # `@p red.global.add` (relaxed, device scope: the atomicrmw `scatter_update` makes):
        # no branch a lane, so an unrolled iteration's scatters stay in one block (segment_sum)
        from ..llvm.values import ViewRef
        dtype = acc.resource.dtype
        if kind != "add" or not isinstance(acc.resource, ViewRef) or dtype not in RED_ADD:
            return False
        kind_suffix, constraint = RED_ADD[dtype]
        em.b.asm(ir.FunctionType(ir.VoidType(), [new.type, global_pointer(em.b, pointer).type, live.type]),
                 f"@$2 red.relaxed.gpu.global.add.{kind_suffix} [$1], $0;", f"{constraint},l,b",
                 [new, global_pointer(em.b, pointer), live], side_effect=True)
        return True

    # ---- memory ---------------------------------------------------------------------------------
    def masked_load(self, em: Emitter, pointer: ir.Value, live: ir.Value, default: ir.Value) -> ir.Value:
        """A predicated `@p ld` (as Triton emits): no branch a lane, so an unrolled iteration
        stays one basic block for LLVM and its loads stay independent for ptxas. Volatile asm:
        LLVM keeps it in order with the kernel's stores."""
        form = PREDICATED.get(str(default.type))
        if form is None:
            return super().masked_load(em, pointer, live, default)
        kind, constraint = form
        pointer = global_pointer(em.b, pointer)
        return em.b.asm(ir.FunctionType(default.type, [pointer.type, live.type, default.type]),
                        f"mov.{kind} $0, $3;\n\t@$2 ld.global.{kind} $0, [$1];", f"=&{constraint},l,b,{constraint}",
                        [pointer, live, default], side_effect=True)

    def masked_store(self, em: Emitter, pointer: ir.Value, value: ir.Value, live: ir.Value) -> None:
        form = PREDICATED.get(str(value.type))
        if form is None:
            super().masked_store(em, pointer, value, live)
            return
        kind, constraint = form
        pointer = global_pointer(em.b, pointer)
        em.b.asm(ir.FunctionType(ir.VoidType(), [value.type, pointer.type, live.type]),
                 f"@$2 st.global.{kind} [$1], $0;", f"{constraint},l,b", [value, pointer, live], side_effect=True)

    def view_load(self, em: Emitter, view: object, pointer: ir.Value, live: ir.Value,
                  default: ir.Value) -> ir.Value | None:
        window = self.lane_walk.window(view, writes=False) if self.lane_walk else None
        return window.load(pointer, live, default) if window else None

    def view_store(self, em: Emitter, view: object, pointer: ir.Value, value: ir.Value, live: ir.Value) -> bool:
        window = self.lane_walk.window(view, writes=True) if self.lane_walk else None
        if window:
            window.store(pointer, value, live)
        return window is not None

    def heap_alloc(self, em: Emitter, builder: ir.IRBuilder, nbytes: ir.Value) -> ir.Value:
        """Device malloc; an exhausted heap stores STATUS_OUT_OF_HEAP and ends the thread
        (PTX `exit`), without splitting the caller's block."""
        return builder.call(_checked_malloc(em), [nbytes, em.status])

    def heap_free(self, em: Emitter, builder: ir.IRBuilder, pointer: ir.Value) -> None:
        builder.call(em.declare("free", ir.VoidType(), [I8.as_pointer()]), [pointer])


def _size(shape) -> int | None:
    """The element count of a shape whose extents are constants, else None."""
    count = 1
    for extent in shape:
        if not isinstance(extent, ir.Constant):
            return None
        count *= int(extent.constant)
    return count


def _checked_malloc(em) -> ir.Function:
    name = "intentc_checked_malloc"
    existing = em.module.globals.get(name)
    if existing is not None:
        return existing
    function = ir.Function(em.module, ir.FunctionType(I8.as_pointer(), [I64, I64.as_pointer()]), name)
    function.linkage = "internal"
    nbytes, status = function.args
    b = ir.IRBuilder(function.append_basic_block("entry"))
    raw = b.call(em.declare("malloc", I8.as_pointer(), [I64]), [nbytes])
    failed = b.icmp_unsigned("==", b.ptrtoint(raw, I64), ir.Constant(I64, 0))
    out, ok = function.append_basic_block("exhausted"), function.append_basic_block("ok")
    b.cbranch(failed, out, ok)
    b.position_at_end(out)
    b.store_atomic(ir.Constant(I64, STATUS_OUT_OF_HEAP), status, "monotonic", 8)
    b.asm(ir.FunctionType(ir.VoidType(), []), "exit;", "", [], side_effect=True)
    b.unreachable()
    b.position_at_end(ok)
    b.ret(raw)
    return function
