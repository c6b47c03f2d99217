"""Recognizing a tiled contraction: the kernel shape the tensor-core mapping runs (docs/gpu.md,
"MMA mapping").

The kernel's top level is pure scalar ops and one `parallel` over output tiles
(`ceil(M / TM)`, `ceil(N / TN)`); its iteration reads an A tile and a B tile per step of an
ordered K `loop` that starts at 0, ends at the K extent and steps by the tile's K extent,
accumulates `matmul`/`contract` of the two tiles into the carried accumulator (`init`,
the fused contraction-add form), and after the loop casts the accumulator and writes it
at the tile's coordinates. Reads and the write must be masked by exactly the bounds of
their view (out-of-range elements read as 0, §10 fill), so the kernel computes
`C = cast(init + A @ B)` over `[0, M) x [0, N)`, whatever its IR tile sizes: the mapping
is then free to choose its own tiles.

The iteration is evaluated symbolically: index values are affine in the iteration's
coordinates, the loop's induction variable, kernel scalars and the coordinates of
`iota` (`Affine`, `IndexTensor`), masks are sets of `index < bound` facts (`Mask`). Any op
the evaluator does not know, any other effect, or any mismatch means "not this shape":
the kernel keeps its other mappings.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.nodes import Kernel, Op
from ...ir.ops.contraction import contraction_axes
from ...ir.types import TensorType, ViewType

FLOAT_CASTS = {"f32", "f16", "bf16"}     # dtypes whose casts the epilogue converts in hardware


class NoMatch(Exception):
    """The kernel is not a tiled contraction the MMA mapping runs."""


@dataclass(frozen=True)
class Affine:
    """sum(coefficient · symbol) + constant over index symbols."""
    terms: tuple = ()                     # sorted (symbol, coefficient), no zero coefficient
    constant: int = 0

    @staticmethod
    def of(symbol: str, coefficient: int = 1) -> Affine:
        return Affine(((symbol, coefficient),)) if coefficient else Affine()

    def __add__(self, other: Affine) -> Affine:
        terms = dict(self.terms)
        for symbol, coefficient in other.terms:
            terms[symbol] = terms.get(symbol, 0) + coefficient
        return Affine(tuple(sorted((s, c) for s, c in terms.items() if c)), self.constant + other.constant)

    def scaled(self, factor: int) -> Affine:
        return Affine(tuple((s, c * factor) for s, c in self.terms if c * factor), self.constant * factor)

    @property
    def is_constant(self) -> bool:
        return not self.terms


@dataclass(frozen=True)
class Ceil:
    """ceil(symbol / divisor), as `floordiv(add(symbol, divisor - 1), divisor)` writes it."""
    symbol: str
    divisor: int


@dataclass(frozen=True)
class IndexTensor:
    """Element at coordinate c: base + sum(axes[i] · c[i]) (size-1 axes have coefficient 0)."""
    shape: tuple
    base: Affine
    axes: tuple


@dataclass(frozen=True)
class Mask:
    """Element at coordinate c: every `index(c) < bound` holds."""
    shape: tuple
    facts: frozenset                      # (IndexTensor, Affine bound)


@dataclass(frozen=True)
class Full:
    dtype: str
    shape: tuple
    value: float


@dataclass(frozen=True)
class TileRead:
    """A read of a rank-2 view, each view axis indexed by base + one tile axis, masked by
    exactly the view's bounds."""
    view: str
    tile_axis_of_view_axis: tuple         # view axis -> tile axis
    bases: tuple                          # view axis -> Affine
    shape: tuple


@dataclass(frozen=True)
class TileContraction:
    """What the MMA mapping computes: c[m, n] = epilogue(init + sum_k a[m, k] · b[k, n])."""
    parallel: Op
    a: str
    b: str
    c: str
    a_axes: tuple                         # view axis of (m, k) in a
    b_axes: tuple                         # view axis of (k, n) in b
    c_axes: tuple                         # view axis of (m, n) in c
    operand_dtype: str
    acc_dtype: str
    out_dtype: str
    casts: tuple                          # the epilogue's dtypes after the accumulator, in order
    init: float
    ir_tile: tuple                        # (TM, TN, TK) of the IR
    values: dict = field(default_factory=dict, compare=False)   # IR value -> role, for the layout record


def _broadcast(value, shape: tuple):
    """Right-aligned broadcast (numpy rule) of a symbolic value to `shape`."""
    if isinstance(value, Affine):
        return IndexTensor(shape, value, (0,) * len(shape))
    if isinstance(value, IndexTensor):
        lead = len(shape) - len(value.shape)
        if lead < 0:
            raise NoMatch("broadcast to a lower rank")
        axes = [0] * lead + [c if extent != 1 else 0 for c, extent in zip(value.axes, value.shape)]
        return IndexTensor(shape, value.base, tuple(axes))
    if isinstance(value, Mask):
        return Mask(shape, frozenset((_broadcast(i, shape), bound) for i, bound in value.facts))
    raise NoMatch("broadcast of an unknown value")


def _static_shape(type_) -> tuple:
    if not isinstance(type_, TensorType) or not all(isinstance(e, int) for e in type_.shape):
        raise NoMatch("a tensor without a static shape")
    return tuple(type_.shape)


class _Evaluator:
    """Symbolic values of the iteration's ops (see the module docstring)."""

    def __init__(self, kernel: Kernel):
        self.views = {p.name: p.type for p in kernel.params if isinstance(p.type, ViewType)}
        self.env: dict[str, object] = {}
        for param in kernel.params:
            if isinstance(param.type, TensorType) and not param.type.shape and param.type.dtype == "index":
                self.env[param.name] = Affine.of(param.name)
        for view in self.views.values():
            for extent in view.shape:
                if isinstance(extent, str):
                    self.env[extent] = Affine.of(extent)

    def shape(self, type_) -> tuple:
        """A tensor's shape as the evaluator accepts it (static here; a subclass may allow symbols)."""
        return _static_shape(type_)

    def affine(self, name: str) -> Affine:
        value = self.env.get(name)
        if not isinstance(value, Affine):
            raise NoMatch(f"%{name} is not an affine index")
        return value

    def constant(self, name: str) -> int:
        value = self.affine(name)
        if not value.is_constant:
            raise NoMatch(f"%{name} is not constant")
        return value.constant

    def scalar_op(self, op: Op) -> None:
        """Top-level and iteration scalars: index constants, add, mul by a constant, ceil."""
        name, args = op.name, op.operands
        type_ = op.result_types[0] if len(op.result_types) == 1 else None
        if not isinstance(type_, TensorType) or op.regions:
            raise NoMatch(f"op `{name}` at the top level")
        number = op.attributes.get("value")
        if name == "constant" and type_.dtype == "index" and isinstance(number, int):
            value: object = Affine((), number)
        elif name == "constant":
            value = ("constant", type_.dtype, number)
        elif name == "add":
            value = self.affine(args[0]) + self.affine(args[1])
        elif name == "mul":
            left, right = self.affine(args[0]), self.affine(args[1])
            value = left.scaled(right.constant) if right.is_constant else \
                right.scaled(left.constant) if left.is_constant else None
            if value is None:
                raise NoMatch("a product of two symbols")
        elif name == "floordiv":
            numerator, divisor = self.affine(args[0]), self.constant(args[1])
            if len(numerator.terms) != 1 or numerator.terms[0][1] != 1 or numerator.constant != divisor - 1:
                raise NoMatch("floordiv other than a ceiling division")
            value = Ceil(numerator.terms[0][0], divisor)
        else:
            raise NoMatch(f"op `{name}` at the top level")
        self.env[op.results[0]] = value

    def tensor_op(self, op: Op) -> None:
        name, args, type_ = op.name, op.operands, op.result_types[0] if op.result_types else None
        if not isinstance(type_, TensorType):
            raise NoMatch(f"op `{name}` in the iteration")
        if not type_.shape:
            self.scalar_op(op)
            return
        shape = self.shape(type_)
        if name == "iota":
            axis = op.int_attr("axis", 0)
            axes = tuple(1 if a == axis and shape[a] != 1 else 0 for a in range(len(shape)))
            value: object = IndexTensor(shape, Affine(), axes)
        elif name == "broadcast" and "dims" not in op.attributes:
            value = _broadcast(self.env.get(args[0]), shape)
        elif name == "add":
            left, right = (_broadcast(self.env.get(a), shape) for a in args)
            if not isinstance(left, IndexTensor) or not isinstance(right, IndexTensor):
                raise NoMatch("add of non-index tensors")
            value = IndexTensor(shape, left.base + right.base, tuple(x + y for x, y in zip(left.axes, right.axes)))
        elif name == "lt":
            index, bound = (_broadcast(self.env.get(a), shape) for a in args)
            if not isinstance(index, IndexTensor) or not isinstance(bound, IndexTensor) or any(bound.axes):
                raise NoMatch("lt other than index < scalar bound")
            value = Mask(shape, frozenset({(index, bound.base)}))
        elif name == "and":
            left, right = (_broadcast(self.env.get(a), shape) for a in args)
            if not isinstance(left, Mask) or not isinstance(right, Mask):
                raise NoMatch("and of non-masks")
            value = Mask(shape, left.facts | right.facts)
        elif name == "full":
            number = op.attributes["value"]
            if not isinstance(number, int | float):
                raise NoMatch("a non-finite initial accumulator")
            value = Full(type_.dtype, shape, float(number))
        else:
            raise NoMatch(f"op `{name}` in the iteration")
        self.env[op.results[0]] = value

    def tile_access(self, op: Op, view_name: str, shape: tuple) -> TileRead:
        """The view axes' bases and tile axes of a read or write, checking its mask is exactly
        the view's bounds."""
        view = self.views.get(view_name)
        indices = op.group("index") or ()
        if view is None or len(view.shape) != 2 or len(indices) != 2 or len(shape) != 2:
            raise NoMatch("an access that is not a rank-2 tile of a view")
        tile_axes, bases, facts = [], [], set()
        for axis, name in enumerate(indices):
            index = _broadcast(self.env.get(name), shape)
            if not isinstance(index, IndexTensor) or sorted(index.axes) != [0, 1]:
                raise NoMatch("a tile index other than base + one tile coordinate")
            tile_axes.append(index.axes.index(1))
            bases.append(index.base)
            extent = view.shape[axis]
            facts.add((index, Affine.of(extent) if isinstance(extent, str) else Affine((), extent)))
        mask_names = op.group("mask")
        if sorted(tile_axes) != [0, 1] or not mask_names:
            raise NoMatch("an unmasked or diagonal tile access")
        mask = _broadcast(self.env.get(mask_names[0]), shape)
        if not isinstance(mask, Mask) or set(mask.facts) != facts:
            raise NoMatch("a mask other than the view's bounds")
        return TileRead(view_name, tuple(tile_axes), tuple(bases), shape)


def _zero_fill(evaluator: _Evaluator, op: Op) -> None:
    fill = op.group("fill")
    value = evaluator.env.get(fill[0]) if fill else None
    if not (isinstance(value, tuple) and value[0] == "constant" and float(value[2]) == 0.0):
        raise NoMatch("a masked read whose fill is not 0")


def match_tile_contraction(kernel: Kernel) -> TileContraction:
    """The kernel as a tiled contraction, or NoMatch saying why not."""
    evaluator = _Evaluator(kernel)
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1:
        raise NoMatch("not one top-level parallel")
    for op in kernel.body:
        if op is not parallels[0] and op.name != "yield":
            evaluator.scalar_op(op)
    parallel = parallels[0]
    extents = [evaluator.env.get(name) for name in parallel.operands]
    region = parallel.regions[0]
    if len(extents) != 2 or not all(isinstance(e, Ceil) for e in extents):
        raise NoMatch("the parallel domain is not ceil(M / TM) x ceil(N / TN)")
    coordinates = [arg.name for arg in region.args]
    for name in coordinates:
        evaluator.env[name] = Affine.of(name)
    ops = [op for op in region.ops if op.name != "yield"]
    loop, position = k_loop_after_prologue(evaluator, ops)
    contraction, reads = _k_loop(evaluator, loop)
    return _finish(evaluator, parallel, extents, coordinates, loop, contraction, reads, ops[position + 1:])


def k_loop_after_prologue(evaluator, ops: list) -> tuple:
    """The iteration's one K `loop` and its position in `ops`, the ops before it evaluated."""
    loops = [op for op in ops if op.name == "loop"]
    if len(loops) != 1:
        raise NoMatch("not one K loop in the iteration")
    position = ops.index(loops[0])
    for op in ops[:position]:
        evaluator.tensor_op(op)
    return loops[0], position


def _k_loop(evaluator: _Evaluator, loop: Op):
    start, stop, step = (evaluator.env.get(name) for name in loop.operands[:3])
    carried = loop.group("iter") or ()
    body = loop.regions[0]
    if len(carried) != 1 or len(body.args) != 2 or start != Affine() or not isinstance(stop, Affine) \
            or not isinstance(step, Affine) or not step.is_constant:
        raise NoMatch("the K loop is not `loop 0, K, TK iter(acc)`")
    induction, acc_in = (arg.name for arg in body.args)
    evaluator.env[induction] = Affine.of(induction)
    reads: dict[str, TileRead] = {}
    contraction = None
    for op in body.ops:
        if op.name == "read":
            _zero_fill(evaluator, op)
            reads[op.results[0]] = evaluator.tile_access(op, op.operands[0], _static_shape(op.result_types[0]))
        elif op.name == "yield":
            if contraction is None or op.operands != contraction.results:
                raise NoMatch("the loop does not yield its contraction")
        elif _is_contraction(op):
            if contraction is not None or (op.group("init") or ()) != (acc_in,):
                raise NoMatch("the loop's contraction does not accumulate into the carried value")
            contraction = op
        else:
            evaluator.tensor_op(op)
    if contraction is None:
        raise NoMatch("no contraction in the K loop")
    return contraction, (reads, induction, stop, step.constant)


def _is_contraction(op: Op) -> bool:
    from ...ir.optable import all_ops
    definition = all_ops().get(op.name)
    return bool(definition is not None and definition.contraction)


def _operand(reads: dict, name: str) -> TileRead:
    if name not in reads:
        raise NoMatch("a contraction operand that is not a tile read in the loop")
    return reads[name]


def _finish(evaluator, parallel, extents, coordinates, loop, contraction, loop_facts, epilogue):
    reads, induction, k_stop, tk = loop_facts
    lhs_contract, rhs_contract, lhs_batch, rhs_batch = contraction_axes(contraction)
    a, b = (_operand(reads, name) for name in contraction.operands)
    if lhs_batch or rhs_batch or len(lhs_contract) != 1 or len(rhs_contract) != 1:
        raise NoMatch("a batched or multi-axis contraction")
    a_k, b_k = lhs_contract[0], rhs_contract[0]
    a_m, b_n = 1 - a_k, 1 - b_k
    tm, tn = a.shape[a_m], b.shape[b_n]
    if a.shape[a_k] != tk or b.shape[b_k] != tk:
        raise NoMatch("the tiles' K extent is not the loop's step")
    a_axes = (a.tile_axis_of_view_axis.index(a_m), a.tile_axis_of_view_axis.index(a_k))
    b_axes = (b.tile_axis_of_view_axis.index(b_k), b.tile_axis_of_view_axis.index(b_n))
    a_view, b_view = evaluator.views[a.view], evaluator.views[b.view]
    m_extent, n_extent = a_view.shape[a_axes[0]], b_view.shape[b_axes[1]]
    k_extent = a_view.shape[a_axes[1]]
    if b_view.shape[b_axes[0]] != k_extent or k_stop != Affine.of(k_extent) or not isinstance(k_extent, str):
        raise NoMatch("the loop does not run over the operands' common K extent")
    ti, tj = coordinates
    if a.bases[a_axes[1]] != Affine.of(induction) or b.bases[b_axes[0]] != Affine.of(induction):
        raise NoMatch("the K tile does not start at the loop's induction variable")
    if a.bases[a_axes[0]] != Affine.of(ti, tm) or b.bases[b_axes[1]] != Affine.of(tj, tn):
        raise NoMatch("the output tile does not start at (ti · TM, tj · TN)")
    if extents != [Ceil(m_extent, tm), Ceil(n_extent, tn)]:
        raise NoMatch("the parallel domain does not tile M x N")
    init = evaluator.env.get(loop.group("iter")[0])
    acc = contraction.attributes["acc"].dtype
    if not isinstance(init, Full) or init.shape != (tm, tn) or init.dtype != acc:
        raise NoMatch("the accumulator does not start as a full tile")
    if a_view.dtype != b_view.dtype:
        raise NoMatch("operands of different dtypes")
    c_name, c_axes, casts = _epilogue(evaluator, loop.results[0], epilogue, (ti, tj), (tm, tn),
                                      (m_extent, n_extent), acc)
    out_dtype = casts[-1] if casts else acc
    values = {loop.results[0]: "accumulator", contraction.results[0]: "accumulator",
              contraction.operands[0]: "a", contraction.operands[1]: "b"}
    return TileContraction(parallel, a.view, b.view, c_name, a_axes, b_axes, c_axes, a_view.dtype, acc, out_dtype,
                           tuple(casts), init.value, (tm, tn, tk), values)


def _epilogue(evaluator, acc_name, ops, coordinates, tile, extents, acc_dtype):
    """The ops after the loop: casts of the accumulator (each used once, by the next; between
    float dtypes, or an integer accumulator's cast to its own dtype) and one masked write of
    the last at the tile's coordinates."""
    current, write = acc_name, None
    casts: list[str] = []
    for op in ops:
        if op.name == "cast" and op.operands == (current,) and write is None:
            dtype = op.result_types[0].dtype
            floats = dtype in FLOAT_CASTS and acc_dtype in FLOAT_CASTS
            if not floats and (dtype != acc_dtype or casts):
                raise NoMatch(f"an epilogue cast to {dtype}")
            current = op.results[0]
            casts.append(dtype)
        elif op.name == "write" and op.operands[1] == current and write is None:
            write = op
        elif op.name == "write" or op.regions or not op.result_types:
            raise NoMatch(f"op `{op.name}` after the K loop")
        else:
            evaluator.tensor_op(op)
    if write is None:
        raise NoMatch("the accumulator is not written")
    access = evaluator.tile_access(write, write.operands[0], tile)
    c_view = evaluator.views[write.operands[0]]
    c_axes = (access.tile_axis_of_view_axis.index(0), access.tile_axis_of_view_axis.index(1))
    ti, tj = coordinates
    if access.bases[c_axes[0]] != Affine.of(ti, tile[0]) or access.bases[c_axes[1]] != Affine.of(tj, tile[1]):
        raise NoMatch("the write is not at the output tile")
    if (c_view.shape[c_axes[0]], c_view.shape[c_axes[1]]) != extents:
        raise NoMatch("the output's extents are not M x N")
    return write.operands[0], c_axes, casts
