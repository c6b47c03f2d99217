"""The warp-rows mapping of row-wise dot products (docs/gpu.md, "Quantized rows and dot
rows"): `out[b] = cast(dot(x[b, :], y[b, :]))` (`dot_f16_f32acc.kir`), one row a warp.

The recognizer proves the shape symbolically: a `parallel` over the rows of two `[B, K]`
views whose iteration reads both rows whole (an `iota` over K, no mask), contracts them
over their one axis in an f32 accumulator (a `dot`, or any contraction of that form), and
writes the result and casts of it (f32/f16/bf16) at the row of `[B]` views.

Each lane of a warp loads 16 bytes of each row a step (8 f16 / bf16 or 4 f32, one vector
load where the row is contiguous and aligned), multiplies the exact f32 images with FMA
into its partial (§3/§5.3: the contraction's products and sums in f32, any order, FMA
allowed), and a butterfly gives every lane the same sum; lane 0 casts it (`cvt.rn`) and
writes each output.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from ...ir.nodes import Kernel, Op
from ...ir.ops.contraction import contraction_axes
from ..layout.assign import Assignment
from ..layout.encodings import Blocked, Uniform
from ..llvm.types import F32, I64
from .register_staging import i32, load_run, vector_run, view_address, wide
from .structured_contraction import _SymbolicShapes
from .tile_contraction import FLOAT_CASTS, Affine, IndexTensor, NoMatch, _broadcast, _is_contraction
from .tile_matmul import cast_chain
from .warp_rows import WARPS, RowsPlanData, RowWalk

ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4}
UNROLL = 2                # 16-byte runs of each row a lane has in flight a step


@dataclass(frozen=True)
class DotRows(RowsPlanData):
    parallel: Op
    x: str
    y: str
    dtype: str                            # the rows' element dtype
    writes: tuple                         # (view, casts after the f32 dot)
    values: dict = field(default_factory=dict, compare=False)
    resident: int = 2                     # CTAs an SM (`.minnctapersm`)

    def to_json(self) -> dict:
        return {"rows_per_cta": WARPS, "row": f"one warp: 16 bytes of each row a lane a step ({self.dtype})",
                "sum": "f32 FMA partials, a butterfly (every lane the same bits)",
                "writes": [{"view": view, "casts": list(casts)} for view, casts in self.writes]}

    def layouts(self, known: dict | None = None) -> Assignment:
        result = Assignment()
        per_lane = 16 // ELEMENT_BYTES[self.dtype]
        for name, role in self.values.items():
            result.values[name] = Uniform() if role == "dot" else Blocked((None,), (per_lane,), (32,), (1,), (0,))
        return result

    def emit(self, em) -> None:
        _DotRowsEmitter(em, self).emit()


def match_dot_rows(kernel: Kernel) -> DotRows:
    evaluator = _SymbolicShapes(kernel)
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1 or any(op is not parallels[0] and op.name != "yield" and (op.regions or op.name == "read")
                                  for op in kernel.body):
        raise NoMatch("not one top-level parallel after scalars")
    parallel = parallels[0]
    for op in kernel.body:
        if op is not parallel and op.name != "yield":
            evaluator.scalar_op(op)
    region = parallel.regions[0]
    if len(region.args) != 1:
        raise NoMatch("not a parallel over rows")
    row = region.args[0].name
    evaluator.env[row] = Affine.of(row)
    reads: dict[str, tuple] = {}
    casts: dict[str, tuple] = {}
    dot, writes = None, []
    for op in (op for op in region.ops if op.name != "yield"):
        if op.name == "read":
            reads[op.results[0]] = _row_read(evaluator, op, row)
        elif _is_contraction(op) and dot is None:
            dot = op
        elif op.name == "cast" and dot is not None and op.operands[0] in casts:
            dtype = getattr(op.result_types[0], "dtype", None)
            if dtype not in FLOAT_CASTS:
                raise NoMatch(f"a cast to {dtype}")
            casts[op.results[0]] = (*casts[op.operands[0]], dtype)
        elif op.name == "write" and op.operands[1] in casts:
            writes.append((_row_write(evaluator, op, row), casts[op.operands[1]]))
        else:
            evaluator.tensor_op(op)
        if op is dot:
            casts[op.results[0]] = ()
    if dot is None or not writes or set(dot.operands) - set(reads) or len(dot.operands) != 2 or dot.groups:
        raise NoMatch("not a dot of two row reads, written")
    lhs, rhs, batch_l, batch_r = contraction_axes(dot)
    (x, x_view), (y, y_view) = (reads[name] for name in dot.operands)
    if (list(lhs), list(rhs), list(batch_l), list(batch_r)) != ([0], [0], [], []) or \
            getattr(dot.attributes["acc"], "dtype", None) != "f32" or x_view.dtype != y_view.dtype or \
            x_view.dtype not in ELEMENT_BYTES or x_view.shape != y_view.shape:
        raise NoMatch("not an f32-accumulated dot of two rows of one dtype and shape")
    rows = x_view.shape[0]
    if not isinstance(rows, str) or evaluator.env.get(parallel.operands[0]) != Affine.of(rows) or \
            any(evaluator.views[view].shape[0] != rows for view, _ in writes):
        raise NoMatch("a domain other than the rows")
    values = dict.fromkeys(dot.operands, "row") | {dot.results[0]: "dot"}
    return DotRows(parallel, x, y, x_view.dtype, tuple(writes), values)


def _row_read(evaluator, op: Op, row: str) -> tuple:
    """(view, its type) of a read of view[row, :] whole, without a mask."""
    view = evaluator.views.get(op.operands[0])
    indices = op.group("index") or ()
    shape = evaluator.shape(op.result_types[0])
    if view is None or len(view.shape) != 2 or len(indices) != 2 or op.group("mask") or \
            list(shape) != [view.shape[1]] or evaluator.env.get(indices[0]) != Affine.of(row):
        raise NoMatch("a read that is not a whole row")
    index = _broadcast(evaluator.env.get(indices[1]), shape)
    if not isinstance(index, IndexTensor) or index.axes != (1,) or index.base != Affine():
        raise NoMatch("a row read along other coordinates")
    return op.operands[0], view


def _row_write(evaluator, op: Op, row: str) -> str:
    view = evaluator.views.get(op.operands[0])
    indices = op.group("index") or ()
    if view is None or len(view.shape) != 1 or op.group("mask") or len(indices) != 1 or \
            evaluator.env.get(indices[0]) != Affine.of(row):
        raise NoMatch("a write other than at the row")
    return op.operands[0]


def plan_dot_rows(kernel: Kernel, known: dict | None = None) -> DotRows | None:
    try:
        return match_dot_rows(kernel)
    except NoMatch:
        return None


class _DotRowsEmitter(RowWalk):
    def __init__(self, em, plan: DotRows):
        super().__init__(em)
        self.plan = plan
        self.x, self.y = em.env[plan.x], em.env[plan.y]
        self.per_lane = 16 // ELEMENT_BYTES[plan.dtype]

    def emit(self) -> None:
        self.wide_x, self.wide_y = wide(self.em, self.x, 16), wide(self.em, self.y, 16)
        self.partial = self.em.entry_alloca(F32)
        self.walk(self.x.shape[0], self._row)

    def _row(self, row: ir.Value) -> None:
        """Full chunks of UNROLL runs a lane with vector loads only (where both rows are
        contiguous and aligned), then the rest a run a lane, each element guarded."""
        em = self.em
        b = em.b
        b.store(ir.Constant(F32, 0.0), self.partial)
        width = self.x.shape[1]
        run = 32 * self.per_lane
        full = b.mul(b.sdiv(width, ir.Constant(I64, run * UNROLL)), ir.Constant(I64, run * UNROLL))
        fast_end = b.select(b.and_(self.wide_x, self.wide_y), full, ir.Constant(I64, 0))
        em.loop(ir.Constant(I64, 0), fast_end, lambda start: self._runs(row, start, None),
                ir.Constant(I64, run * UNROLL), name="full")
        em.loop(fast_end, width, lambda start: self._runs(row, start, width), ir.Constant(I64, run), name="rest")
        total = self.butterfly_sum(b.load(self.partial), (16, 8, 4, 2, 1), b.fadd)
        with b.if_then(b.icmp_unsigned("==", self.lane, i32(0))):
            for view, casts in self.plan.writes:
                out = em.env[view]
                b.store(cast_chain(b, total, "f32", casts), b.bitcast(view_address(em, out, (row,)),
                                                                       _stored_type(casts).as_pointer()))

    def _runs(self, row, start, width) -> None:
        """The lane's runs from `start`: UNROLL vector runs of each row (`width` None: all
        inside, loaded together before the FMAs), or one guarded run (`width`: the row's)."""
        em = self.em
        b = em.b
        count = UNROLL if width is None else 1
        runs = []
        for chunk in range(count):
            column = b.add(b.add(start, ir.Constant(I64, 32 * self.per_lane * chunk)),
                           b.zext(b.mul(self.lane, i32(self.per_lane)), I64))
            if width is None:
                runs.append(tuple(vector_run(em, view, (row, column), 16) for view in (self.x, self.y)))
            else:
                inside, left = ir.Constant(ir.IntType(1), 1), b.sub(width, column)
                runs.append(tuple(load_run(em, view, (row, column), inside, left, self.per_lane, flag)
                                  for view, flag in ((self.x, self.wide_x), (self.y, self.wide_y))))
        fma = em.declare("llvm.fma.f32", F32, [F32, F32, F32])
        partial = b.load(self.partial)
        for xs, ys in runs:
            for index in range(self.per_lane):
                partial = b.call(fma, [self._element(xs, index), self._element(ys, index), partial])
        b.store(partial, self.partial)

    def _element(self, words: list, index: int) -> ir.Value:
        """Element `index` of a lane's run as its exact f32."""
        b = self.em.b
        if self.plan.dtype == "f32":
            return b.bitcast(words[index], F32)
        bits = b.and_(b.lshr(words[index // 2], i32(16 * (index % 2))), i32(0xFFFF))
        if self.plan.dtype == "bf16":
            return b.bitcast(b.shl(bits, i32(16)), F32)
        return b.fpext(b.bitcast(b.trunc(bits, ir.IntType(16)), ir.HalfType()), F32)


def _stored_type(casts: tuple) -> ir.Type:
    dtype = casts[-1] if casts else "f32"
    return F32 if dtype == "f32" else ir.HalfType() if dtype == "f16" else ir.IntType(16)


