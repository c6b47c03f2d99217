"""The lane-group dot mapping (docs/gpu.md, "Lane-group dots"): an iteration that is a batch
of independent dot products (`iteration_dots.py`, e.g. decode attention's scores
q[b, h, :] · k[b, s, h, :]) runs every dot product of every iteration on a group of G lanes.

The dots of all iterations form one task space (iteration, then the contraction's result
axes, the last fastest, so neighbouring groups read neighbouring rows); a warp takes
32 / G consecutive tasks at a time, warps stride over the grid, and `UNROLL` tasks a
group are loaded before any is summed (their loads in flight together). Lane g of a group
holds elements [g·V, g·V + V) of each chunk of G·V along the contracted axis: one 16-byte
(or 8-byte) load an operand where the axis is contiguous and aligned (a uniform run-time
check), else one guarded load an element. Operands widen exactly to the f32 accumulator
(bf16 by a shift, f16 by `cvt`), each lane sums its elements with `fma.rn.f32` (the
contraction's fused semantics, §5.3), and a `shfl.sync.bfly` butterfly over the group adds
the lanes' partials (§6: a reduction may reassociate). Lane 0 of the group multiplies by
the scale (a separate, rounded `mul`, as the IR writes it) and stores. No temporaries: the
only state is a lane's registers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from llvmlite import ir

from ..layout.assign import Assignment
from ..layout.encodings import Blocked
from ..llvm.types import F32, I32, I64
from ..llvm.values import ViewRef
from .cta import sreg
from .ptx_asm import asm
from .iteration_dots import IterationDots

THREADS = 256
UNROLL = 4                # tasks a group loads before summing any
# CTAs an SM, the grid's too (`.minnctapersm`): 128 registers a thread hold 4 tasks' rows in
# flight without spills (at 4 CTAs an SM, 64 registers, ptxas spilled)
RESIDENT = 2
LOAD_BYTES = 16


@dataclass(frozen=True)
class LaneDotsPlan:
    dots: IterationDots
    group: int                # lanes a dot product
    vector: int               # elements a lane loads at once along the contracted axis
    threads: int = THREADS
    unroll: int = UNROLL

    kind = "lane-dots"
    # LLVM's Loop Strength Reduction in code generation: without it the H200 ran decode_scores
    # alike (0.0533 / 0.0532 ms) for a seventh less time to PTX (docs/gpu.md, session 10)
    strength_reduce = False
    ctas_per_sm = RESIDENT
    resident = RESIDENT
    shared_bytes = 0

    @property
    def parallel(self):
        return self.dots.parallel

    def emit(self, em) -> None:
        LaneDotsEmitter(em, self).emit()

    def to_json(self) -> dict:
        return {"group_lanes": self.group, "elements_per_load": self.vector, "unroll": self.unroll,
                "tasks": "iteration x contraction result, last axis fastest; a warp 32/G consecutive tasks",
                "operands": list(self.dots.operand_dtypes), "acc": self.dots.acc_dtype,
                "scale": self.dots.scale or "", "strength_reduce": self.strength_reduce}

    def layouts(self, known: dict) -> Assignment:
        """Operands along the contracted axis: V elements a lane, G lanes a dot; the result:
        one element a group of G lanes."""
        result = Assignment()
        lanes = (32 // self.group, self.group)
        operand = Blocked((None, None), (1, self.vector), lanes, (self.threads // 32, 1), (1, 0))
        for name in self.dots.values[:2]:
            result.values[name] = operand
        result.values[self.dots.values[2]] = Blocked((None,), (1,), (32 // self.group,), (self.threads // 32,), (0,))
        return result


def plan_lane_dots(kernel, known: dict) -> LaneDotsPlan | None:
    from .iteration_dots import match_iteration_dots
    from .tile_contraction import NoMatch
    try:
        dots = match_iteration_dots(kernel)
    except NoMatch:
        return None
    vector = LOAD_BYTES // max(4 if dtype == "f32" else 2 for dtype in dots.operand_dtypes)
    depth = dots.depth if isinstance(dots.depth, int) else known.get(dots.depth)
    # enough lanes to cover a known D in one chunk (at most a warp); 16 when D is dynamic
    group = min(32, 1 << max(0, math.ceil(math.log2(max(1, -(-depth // vector)))))) if depth else 16
    return LaneDotsPlan(dots, group, vector)


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def _i32(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


@dataclass
class _Operand:
    """A view read along the contracted axis: its element size, the view, the view axis of
    each result axis (None: not this operand's) and of the iteration's coordinate, the
    contracted axis's stride, and whether V-element vector loads fit (uniform)."""
    view: ViewRef
    dtype: str
    result_axes: tuple
    coordinate_axis: int
    stride: ir.Value
    vectors: ir.Value | None = None

    @property
    def size(self) -> int:
        return 4 if self.dtype == "f32" else 2


class LaneDotsEmitter:
    def __init__(self, em, plan: LaneDotsPlan):
        self.em, self.plan = em, plan
        dots = plan.dots
        self.lhs = self._operand(dots.lhs, dots.lhs_of_result, dots.lhs_contract, dots.operand_dtypes[0])
        self.rhs = self._operand(dots.rhs, dots.rhs_of_result, dots.rhs_contract, dots.operand_dtypes[1])
        self.out_view = em.env[dots.out.view]
        self.depth = em.env[dots.lhs.view].shape[dots.lhs.axes[dots.lhs_contract]]

    def _operand(self, slice_, of_result, contract, dtype) -> _Operand:
        view = self.em.env[slice_.view]
        axes = tuple(None if axis is None else slice_.axes[axis] for axis in of_result)
        return _Operand(view, dtype, axes, slice_.coordinate_axis, view.strides[slice_.axes[contract]])

    def emit(self) -> None:
        em, plan = self.em, self.plan
        b = em.b
        dots = plan.dots
        self.extents = [self._result_extent(r) for r in range(len(dots.lhs_of_result))]
        iterations = self.lhs.view.shape[self.lhs.coordinate_axis]
        tasks = em.element_count([iterations, *self.extents])
        for operand in (self.lhs, self.rhs):
            operand.vectors = self._vectors_fit(operand)
        per_warp = 32 // plan.group
        warp_tasks = b.sdiv(b.add(tasks, _i64(per_warp - 1)), _i64(per_warp))
        tid = sreg(em, "tid.x")
        warp = b.zext(b.add(b.mul(sreg(em, "ctaid.x"), _i32(plan.threads // 32)), b.udiv(tid, _i32(32))), I64)
        warps = b.zext(b.mul(sreg(em, "nctaid.x"), _i32(plan.threads // 32)), I64)
        lane = b.zext(b.urem(tid, _i32(32)), I64)
        self.member, self.within = b.udiv(lane, _i64(plan.group)), b.urem(lane, _i64(plan.group))
        self.tasks = tasks
        self.scale = em.env[dots.scale].value if dots.scale else None
        em.loop(warp, warp_tasks, lambda first: self._round(first, warps), b.mul(warps, _i64(plan.unroll)),
                name="dots")

    def _result_extent(self, r: int) -> ir.Value:
        dots = self.plan.dots
        if dots.lhs_of_result[r] is not None:
            return self.lhs.view.shape[self.lhs.result_axes[r]]
        return self.rhs.view.shape[self.rhs.result_axes[r]]

    def _vectors_fit(self, operand: _Operand) -> ir.Value:
        """V-element loads fit every row: unit contracted stride, the start and every other
        stride a multiple of V elements (so each row's chunks stay V-aligned)."""
        b = self.em.b
        view, vector = operand.view, self.plan.vector
        start = b.add(b.ptrtoint(view.ptr, I64), b.mul(view.offset, _i64(operand.size)))
        fits = b.and_(b.icmp_signed("==", operand.stride, _i64(1)),
                      b.icmp_unsigned("==", b.and_(start, _i64(vector * operand.size - 1)), _i64(0)))
        for axis in {a for a in operand.result_axes if a is not None} | {operand.coordinate_axis}:
            fits = b.and_(fits, b.icmp_signed("==", b.srem(view.strides[axis], _i64(vector)), _i64(0)))
        return b.and_(fits, b.icmp_signed("==", b.srem(self.depth, _i64(vector)), _i64(0)))

    def _round(self, first: ir.Value, warps: ir.Value) -> None:
        """UNROLL warp tasks: every group's rows loaded chunk by chunk, summed, stored; by
        vector loads when every operand row fits them (uniform), else element by element."""
        b = self.em.b
        per_warp = 32 // self.plan.group
        tasks = []
        for u in range(self.plan.unroll):
            task = b.add(b.mul(b.add(first, b.mul(warps, _i64(u))), _i64(per_warp)), self.member)
            valid = b.icmp_signed("<", task, self.tasks)
            coordinates = self._unravel(b.select(valid, task, _i64(0)))
            tasks.append((valid, coordinates, self._base(self.lhs, coordinates), self._base(self.rhs, coordinates)))
        with b.if_else(b.and_(self.lhs.vectors, self.rhs.vectors)) as (vectors, elements):
            with vectors:
                self._sum_and_store(tasks, self._vector_chunk)
            with elements:
                self._sum_and_store(tasks, None)

    def _sum_and_store(self, tasks: list, chunk_values) -> None:
        em, plan = self.em, self.plan
        b = em.b
        sums = [em.entry_alloca(F32) for _ in tasks]
        for slot in sums:
            b.store(ir.Constant(F32, 0.0), slot)
        fma = em.declare("llvm.fma.f32", F32, [F32, F32, F32])
        if chunk_values is None:        # element by element: lane g takes d = g, g + G, ...
            for slot, (valid, _, lhs, rhs) in zip(sums, tasks):
                def element(d, slot=slot, lhs=lhs, rhs=rhs):
                    b.store(b.call(fma, [self._element(self.lhs, lhs, d), self._element(self.rhs, rhs, d),
                                         b.load(slot)]), slot)
                em.loop(self.within, b.select(valid, self.depth, _i64(0)), element, _i64(plan.group), name="d")
        else:
            chunk = plan.group * plan.vector
            chunks = b.sdiv(b.add(self.depth, _i64(chunk - 1)), _i64(chunk))

            def step(c):
                d0 = b.add(b.mul(c, _i64(chunk)), b.mul(self.within, _i64(plan.vector)))
                # every task's loads issued before the first product uses one
                loaded = [(chunk_values(self.lhs, lhs, d0, valid), chunk_values(self.rhs, rhs, d0, valid))
                          for valid, _, lhs, rhs in tasks]
                for slot, (left, right) in zip(sums, loaded):
                    total = b.load(slot)
                    for x, y in zip(left(), right()):
                        total = b.call(fma, [x, y, total])
                    b.store(total, slot)
            em.loop(_i64(0), chunks, step, name="chunk")
        out, dots = self.out_view, self.plan.dots
        for slot, (valid, coordinates, _, _) in zip(sums, tasks):
            total = self._butterfly(b.load(slot))
            if self.scale is not None:
                total = b.fmul(total, self.scale)
            with b.if_then(b.and_(valid, b.icmp_signed("==", self.within, _i64(0)))):
                offset = self._offset(out, dots.out.coordinate_axis, dots.out.axes, coordinates)
                b.store(total, b.gep(out.ptr, [offset]))

    def _unravel(self, task: ir.Value) -> list:
        """(iteration, result coordinates...) of a task, the last axis fastest."""
        b = self.em.b
        coordinates = []
        for extent in reversed(self.extents):
            coordinates.append(b.urem(task, extent))
            task = b.udiv(task, extent)
        return [task, *reversed(coordinates)]

    @staticmethod
    def _offset_of(b, view, pairs) -> ir.Value:
        offset = view.offset
        for axis, coordinate in pairs:
            offset = b.add(offset, b.mul(coordinate, view.strides[axis]))
        return offset

    def _offset(self, view, coordinate_axis, axes, coordinates) -> ir.Value:
        return self._offset_of(self.em.b, view, [(coordinate_axis, coordinates[0]), *zip(axes, coordinates[1:])])

    def _base(self, operand: _Operand, coordinates: list) -> ir.Value:
        pairs = [(operand.coordinate_axis, coordinates[0])]
        pairs += [(axis, c) for axis, c in zip(operand.result_axes, coordinates[1:]) if axis is not None]
        return self._offset_of(self.em.b, operand.view, pairs)

    def _vector_chunk(self, operand: _Operand, base: ir.Value, d0: ir.Value, valid: ir.Value):
        """Elements [d0, d0 + V) of a row by one predicated vector load (zeros past D or for
        an invalid task; D is a multiple of V here); widened only when called, after every
        load of the step is issued."""
        b = self.em.b
        words = self.plan.vector * operand.size // 4
        inside = b.and_(valid, b.icmp_signed("<", d0, self.depth))
        address = b.gep(operand.view.ptr, [b.add(base, d0)])
        loaded = global_vector(b, address, words, inside)

        def widened():
            if operand.size == 4:
                return [b.bitcast(word, F32) for word in loaded]
            halves = []
            for word in loaded:
                halves += [self._widen(operand.dtype, b.trunc(word, ir.IntType(16))),
                           self._widen(operand.dtype, b.trunc(b.lshr(word, _i32(16)), ir.IntType(16)))]
            return halves
        return widened

    def _widen(self, dtype: str, bits: ir.Value) -> ir.Value:
        """A 16-bit element's f32 value, exactly (bf16: its bits in the high half)."""
        b = self.em.b
        if dtype == "bf16":
            return b.bitcast(b.shl(b.zext(bits, I32), _i32(16)), F32)
        return b.fpext(b.bitcast(bits, ir.HalfType()), F32)

    def _element(self, operand: _Operand, base: ir.Value, d: ir.Value) -> ir.Value:
        b = self.em.b
        raw = b.load(b.gep(operand.view.ptr, [b.add(base, b.mul(d, operand.stride))]))
        return raw if operand.size == 4 else self._widen(operand.dtype, raw)

    def _butterfly(self, value: ir.Value) -> ir.Value:
        """The group's sum in every lane of it (xor offsets below G stay in the group)."""
        em = self.em
        b = em.b
        shfl = em.declare("llvm.nvvm.shfl.sync.bfly.i32", I32, [I32, I32, I32, I32])
        offset = self.plan.group // 2
        while offset:
            other = b.call(shfl, [_i32(-1), b.bitcast(value, I32), _i32(offset), _i32(0x1F)])
            value = b.fadd(value, b.bitcast(other, F32))
            offset //= 2
        return value


def global_vector(b: ir.IRBuilder, address: ir.Value, words: int, predicate: ir.Value) -> list:
    """`words` (2 or 4) 32-bit words from global memory at `address`, or zeros where
    `predicate` is false (a predicated load, no branch)."""
    outs = ", ".join(f"${i}" for i in range(words))
    zeros = " ".join(f"mov.b32 ${i}, 0;" for i in range(words))
    text = (f"{{ .reg .pred p; setp.ne.b32 p, ${words}, 0; {zeros} "
            f"@p ld.global.v{words}.b32 {{{outs}}}, [${words + 1}]; }}")
    constraints = ",".join(["=r"] * words + ["r", "l"])
    result = asm(b, text, constraints, ir.LiteralStructType([I32] * words),
                 [b.zext(predicate, I32), b.ptrtoint(address, I64)])
    return [b.extract_value(result, i) for i in range(words)]
