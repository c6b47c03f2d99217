"""Recognizing a tiled *structured* contraction (docs/gpu.md, "Structured contractions"):
the kernel shapes of `scaled_contract` (MX: e2m1 elements with e8m0 scales) that the
tensor-core mapping runs (`tile_structured.py`).

The scaled form: a `parallel` over `ceil(M / TM) x ceil(N / TN)` output tiles whose
iteration reads, at the tile's rows, the whole K of A (`[TM, G, C]` of a `[M, G, C]` u8
carrier) and its scales (`[TM, G]` of `[M, G]`), and at the tile's columns the whole K of
B (`[G, C, TN]` of `[G, C, N]`) and its scales (`[TN, G]` of `[N, G]`); every read masked by
exactly its view's bound along M (N), the other axes covered whole by `iota`s of the view's
extents; one `scaled_contract` of the four; casts; one write at the tile masked by C's
bounds. Such a kernel computes `C = cast(scaled_contract(A, As, B, Bs))` on `[0, M) x
[0, N)` whatever its IR tile: the fill of a masked row or column reaches only outputs the
write leaves out. The symbolic evaluation is the dense recognizer's (`tile_contraction.py`),
with shapes that may name extents (`G`) and unit-axis reshapes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...ir.nodes import Kernel, Op
from ...ir.types import TensorType
from .tile_contraction import (Affine, Ceil, IndexTensor, Mask, NoMatch, _broadcast, _epilogue, _Evaluator,
                               k_loop_after_prologue)


@dataclass(frozen=True)
class ScaledContraction:
    """c[m, n] = epilogue(Σ_g Σ_k decode(a[m, g, k]) · 2^(as[m, g] - 127) · decode(b[g, k, n]) · 2^(bs[n, g] - 127)).

    The fields the dense mapping's epilogue and layouts read (`c`, `c_axes`, dtypes, `casts`,
    `init`, `values`) have the dense `TileContraction`'s meaning."""
    parallel: Op
    a: str
    a_scale: str
    b: str
    b_scale: str
    c: str
    c_axes: tuple
    element_format: str                   # "e2m1"
    group_size: int
    acc_dtype: str
    out_dtype: str
    casts: tuple
    ir_tile: tuple                        # (TM, TN)
    operand_dtype: str = "f16"            # what the elements are decoded to for the tensor cores
    init: float = 0.0
    kind: str = "scaled"
    values: dict = field(default_factory=dict, compare=False)


class _SymbolicShapes(_Evaluator):
    """The dense evaluator, with extents that may be symbols and `reshape`s that add or drop
    unit axes."""

    def shape(self, type_) -> tuple:
        if not isinstance(type_, TensorType):
            raise NoMatch("not a tensor")
        return tuple(type_.shape)

    def tensor_op(self, op: Op) -> None:
        if op.name != "reshape":
            super().tensor_op(op)
            return
        shape = self.shape(op.result_types[0])
        value = self.env.get(op.operands[0])
        self.env[op.results[0]] = _reshaped(value, shape)


def _unit_free(shape: tuple, coefficients: tuple) -> list:
    return [c for extent, c in zip(shape, coefficients) if extent != 1]


def _reshaped(value, shape: tuple):
    """`value` reshaped to `shape` where only unit axes come or go."""
    if isinstance(value, IndexTensor):
        source = [e for e in value.shape if e != 1]
        if source != [e for e in shape if e != 1]:
            raise NoMatch("a reshape that moves elements")
        kept = iter(_unit_free(value.shape, value.axes))
        return IndexTensor(shape, value.base, tuple(next(kept) if extent != 1 else 0 for extent in shape))
    if isinstance(value, Mask):
        return Mask(shape, frozenset((_reshaped(index, shape), bound) for index, bound in value.facts))
    raise NoMatch("a reshape of an unknown value")


def _bound(extent) -> Affine:
    return Affine.of(extent) if isinstance(extent, str) else Affine((), extent)


def _access(evaluator: _SymbolicShapes, op: Op, shape: tuple, tiled: dict) -> tuple:
    """(view, index tensors) of a read or write whose view axis `a` is, for `a` in `tiled`,
    `base + tile axis` (tiled[a] = (tile axis, base)), and otherwise the whole axis along its
    own tile axis (an iota of the view's extent); masked by exactly the bounds of the tiled
    axes."""
    view_name = op.operands[0]
    view = evaluator.views.get(view_name)
    indices = op.group("index") or ()
    if view is None or len(indices) != len(view.shape) or len(shape) != len(view.shape):
        raise NoMatch("an access that is not a tile of its view")
    facts = set()
    for axis, name in enumerate(indices):
        index = _broadcast(evaluator.env.get(name), shape)
        if not isinstance(index, IndexTensor):
            raise NoMatch("an index that is not affine")
        tile_axis, base = tiled.get(axis, (axis, Affine()))
        expected = tuple(1 if a == tile_axis and shape[a] != 1 else 0 for a in range(len(shape)))
        if index.axes != expected or index.base != base:
            raise NoMatch(f"view axis {axis} of %{view_name} is not indexed as a tile")
        if axis in tiled:
            facts.add((index, _bound(view.shape[axis])))
        elif shape[tile_axis] != view.shape[axis]:
            raise NoMatch(f"view axis {axis} of %{view_name} is not read whole")
    mask_names = op.group("mask")
    mask = _broadcast(evaluator.env.get(mask_names[0]), shape) if mask_names else Mask(shape, frozenset())
    if not isinstance(mask, Mask) or set(mask.facts) != facts:
        raise NoMatch(f"the mask of %{view_name} is not its bounds")
    return view_name, view


def match_scaled_contraction(kernel: Kernel) -> ScaledContraction:
    """The kernel as a tiled MX contraction, or NoMatch saying why not."""
    evaluator = _SymbolicShapes(kernel)
    parallel, (ti, tj), extents, ops = _tile_iteration(evaluator, kernel)
    contractions = [op for op in ops if op.name == "scaled_contract"]
    if len(contractions) != 1:
        raise NoMatch("not one scaled_contract in the iteration")
    contraction = contractions[0]
    position = ops.index(contraction)
    reads = {}
    for op in ops[:position]:
        if op.name == "read":
            reads[op.results[0]] = op
        else:
            evaluator.tensor_op(op)
    attrs: dict[str, Any] = dict(contraction.attributes)
    fmt, group, acc = attrs["format"].name, int(attrs["group_size"]), attrs["acc"].dtype
    if fmt != "e2m1" or group != 32 or acc != "f32":
        raise NoMatch(f"a {fmt} scaled_contract with groups of {group} and an {acc} accumulator")
    if not set(contraction.operands) <= set(reads) or len(reads) != 4:
        raise NoMatch("scaled_contract operands that are not the iteration's reads")
    a_op, as_op, b_op, bs_op = (reads[name] for name in contraction.operands)
    tm, tn = evaluator.shape(contraction.result_types[0])
    if not isinstance(tm, int) or not isinstance(tn, int):
        raise NoMatch("a dynamic output tile")
    rows, cols = Affine.of(ti, tm), Affine.of(tj, tn)
    a, a_view = _access(evaluator, a_op, evaluator.shape(a_op.result_types[0]), {0: (0, rows)})
    a_scale, _ = _access(evaluator, as_op, evaluator.shape(as_op.result_types[0]), {0: (0, rows)})
    b, b_view = _access(evaluator, b_op, evaluator.shape(b_op.result_types[0]), {2: (2, cols)})
    b_scale, _ = _access(evaluator, bs_op, evaluator.shape(bs_op.result_types[0]), {0: (0, cols)})
    carriers = a_view.shape[2]
    if carriers != group // 2 or b_view.shape[1] != carriers or a_view.shape[1] != b_view.shape[0]:
        raise NoMatch("carriers that do not hold one group")
    m_extent, n_extent = a_view.shape[0], b_view.shape[2]
    if extents != [Ceil(m_extent, tm), Ceil(n_extent, tn)]:
        raise NoMatch("the parallel domain does not tile M x N")
    c_name, c_axes, casts = _epilogue(evaluator, contraction.results[0], ops[position + 1:], (ti, tj), (tm, tn),
                                      (m_extent, n_extent), acc)
    values = {contraction.results[0]: "accumulator", a_op.results[0]: "a", b_op.results[0]: "b"}
    return ScaledContraction(parallel, a, a_scale, b, b_scale, c_name, c_axes, fmt, group, acc,
                             casts[-1] if casts else acc, tuple(casts), (tm, tn), values=values)


# ---- sparse (spec §7 sparse_contract) ---------------------------------------------------------
PATTERNS = {"two_of_four": (4, 2), "one_of_two": (2, 1)}     # (group, values kept a group)


@dataclass(frozen=True)
class SparseContraction:
    """c[m, n] = epilogue(Σ_steps (Σ_{kept values v} a[m, v] · b[position(m, v), n])): each
    IR step of `step_groups` groups summed on its own, then added to the carried f32 sum
    (the IR's `add %acc, %part`). Position field f of a group's metadata byte is
    `(byte >> shift) & mask`; masked metadata reads `meta_fill` (a valid encoding)."""
    parallel: Op
    a: str                                # compressed values [M, C]
    meta: str                             # metadata bytes [M, Q], one a group
    b: str                                # [K, N]
    c: str
    c_axes: tuple
    pattern: str
    fields: tuple                         # (shift, mask) of each kept value's position
    meta_fill: int
    step_groups: int                      # groups an IR step covers
    group_stop: tuple                     # (extent, step, scale): the IR visits groups [0, ceil(extent / step) · step · scale)
    operand_dtype: str
    acc_dtype: str
    out_dtype: str
    casts: tuple
    ir_tile: tuple
    op: Op | None = None                  # the sparse_contract (its metadata checks' site)
    init: float = 0.0
    kind: str = "sparse"
    values: dict = field(default_factory=dict, compare=False)

    @property
    def group(self) -> int:
        return PATTERNS[self.pattern][0]

    @property
    def kept(self) -> int:
        return PATTERNS[self.pattern][1]

    def positions(self, byte: int) -> tuple:
        return tuple((byte >> shift) & (0xFF if mask is None else mask) for shift, mask in self.fields)


@dataclass(frozen=True)
class _Field:
    """Bits of a metadata read: (value >> shift) & mask (mask None: all the bits left)."""
    read: str
    shift: int = 0
    mask: int | None = None


class _SparseEvaluator(_SymbolicShapes):
    def tensor_op(self, op: Op) -> None:
        values = [self.env.get(name) for name in op.operands]
        fields = [v for v in values if isinstance(v, _Field)]
        if not fields:
            super().tensor_op(op)
            return
        constants = [v for v in values if not isinstance(v, _Field)]
        if len(fields) != 1 or len(constants) != 1 or values[0] is not fields[0] or \
                not (hasattr(constants[0], "value") and float(constants[0].value).is_integer()):
            raise NoMatch(f"op `{op.name}` on metadata other than by a constant")
        bits, number = fields[0], int(constants[0].value)
        if op.name == "and":
            self.env[op.results[0]] = _Field(bits.read, bits.shift, number if bits.mask is None else bits.mask & number)
        elif op.name == "shr":
            self.env[op.results[0]] = _Field(bits.read, bits.shift + number,
                                             None if bits.mask is None else bits.mask >> number)
        else:
            raise NoMatch(f"op `{op.name}` on metadata")


def _constant(evaluator, op: Op, group: str):
    names = op.group(group)
    value = evaluator.env.get(names[0]) if names else None
    if not (isinstance(value, tuple) and value[0] == "constant"):
        raise NoMatch(f"a {group} that is not a constant")
    return value[2]


def _induction_base(evaluator, op: Op, axis: int, shape: tuple, induction: str) -> int:
    """c where view axis `axis` of `op` is indexed from c · induction."""
    index = _broadcast(evaluator.env.get((op.group("index") or ())[axis]), shape)
    if not isinstance(index, IndexTensor) or index.base.constant or len(index.base.terms) != 1 \
            or index.base.terms[0][0] != induction:
        raise NoMatch("a K index that is not a multiple of the loop's induction variable")
    return index.base.terms[0][1]


def match_sparse_contraction(kernel: Kernel) -> SparseContraction:
    """The kernel as a tiled 2:4 / 1:2 sparse contraction, or NoMatch saying why not."""
    evaluator = _SparseEvaluator(kernel)
    parallel, (ti, tj), extents, ops = _tile_iteration(evaluator, kernel)
    loop, position = k_loop_after_prologue(evaluator, ops)
    start, stop, step = (evaluator.env.get(name) for name in loop.operands[:3])
    body = loop.regions[0]
    if len(loop.group("iter") or ()) != 1 or len(body.args) != 2 or start != Affine() or \
            not isinstance(stop, Affine) or len(stop.terms) != 1 or stop.constant or stop.terms[0][1] != 1 \
            or not isinstance(step, Affine) or not step.is_constant:
        raise NoMatch("the K loop is not `loop 0, extent, step iter(acc)`")
    induction, acc_in = (arg.name for arg in body.args)
    evaluator.env[induction] = Affine.of(induction)
    reads, contraction, total = {}, None, None
    for op in body.ops:
        if op.name == "read":
            reads[op.results[0]] = op
            if op.result_types[0].dtype in ("u8", "i8"):
                evaluator.env[op.results[0]] = _Field(op.results[0])
        elif op.name == "record":       # the fields in the order the interpreter takes them
            named = dict(zip((f.name for f in op.result_types[0].fields), op.operands))
            evaluator.env[op.results[0]] = tuple(evaluator.env.get(named[f]) if f in named else None
                                                 for f in ("first", "second"))
        elif op.name == "sparse_contract":
            contraction = op
        elif op.name == "add" and contraction is not None and set(op.operands) == {acc_in, contraction.results[0]}:
            total = op
        elif op.name == "yield":
            if total is None or op.operands != total.results:
                raise NoMatch("the loop does not yield its accumulator plus the sparse contraction")
        else:
            evaluator.tensor_op(op)
    if contraction is None or total is None:
        raise NoMatch("no sparse_contract added to the carried value")
    return _sparse_finish(evaluator, parallel, (ti, tj), extents, loop, (stop, step.constant, induction), reads,
                          contraction, ops[position + 1:])


def _tile_iteration(evaluator, kernel: Kernel):
    """(parallel, its coordinates, its extents, its ops) of a kernel whose top level is
    scalars, iotas, fulls and one `parallel` over tiles."""
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1:
        raise NoMatch("not one top-level parallel")
    for op in kernel.body:
        if op is parallels[0] or op.name == "yield":
            continue
        evaluator.tensor_op(op)          # (scalars go on to scalar_op)
    parallel = parallels[0]
    extents = [evaluator.env.get(name) for name in parallel.operands]
    region = parallel.regions[0]
    if len(extents) != 2 or not all(isinstance(e, Ceil) for e in extents):
        raise NoMatch("the parallel domain is not ceil(M / TM) x ceil(N / TN)")
    coordinates = tuple(arg.name for arg in region.args)
    for name in coordinates:
        evaluator.env[name] = Affine.of(name)
    return parallel, coordinates, extents, [op for op in region.ops if op.name != "yield"]


def _sparse_finish(evaluator, parallel, coordinates, extents, loop, loop_facts, reads, contraction, epilogue):
    stop, step, induction = loop_facts
    ti, tj = coordinates
    pattern, acc = contraction.attributes["pattern"].name, contraction.attributes["acc"].dtype
    group, kept = PATTERNS[pattern]
    values_name, positions_name, b_name = contraction.operands
    if values_name not in reads or b_name not in reads:
        raise NoMatch("sparse_contract operands that are not reads in the loop")
    positions = evaluator.env.get(positions_name)
    fields = positions if isinstance(positions, tuple) else (positions,)
    if len(fields) != kept or not all(isinstance(f, _Field) for f in fields) or \
            len({f.read for f in fields}) != 1 or fields[0].read not in reads:
        raise NoMatch("positions that are not bit fields of one metadata read")
    a_op, meta_op, b_op = reads[values_name], reads[fields[0].read], reads[b_name]
    tm, tv = evaluator.shape(a_op.result_types[0])
    _, tg = evaluator.shape(meta_op.result_types[0])
    tk, tn = evaluator.shape(b_op.result_types[0])
    scale = _induction_base(evaluator, meta_op, 1, (tm, tg), induction)
    if tv != kept * tg or tk != group * tg or scale * step != tg or not all(isinstance(e, int) for e in (tm, tn)):
        raise NoMatch("tiles of values, metadata and B rows that do not cover the same groups")
    rows, cols = Affine.of(ti, tm), Affine.of(tj, tn)
    a, a_view = _access(evaluator, a_op, (tm, tv), {0: (0, rows), 1: (1, Affine.of(induction, kept * scale))})
    meta, _ = _access(evaluator, meta_op, (tm, tg), {0: (0, rows), 1: (1, Affine.of(induction, scale))})
    b, b_view = _access(evaluator, b_op, (tk, tn), {0: (0, Affine.of(induction, group * scale)), 1: (1, cols)})
    if float(_constant(evaluator, a_op, "fill")) != 0.0 or float(_constant(evaluator, b_op, "fill")) != 0.0:
        raise NoMatch("a masked value or B element that does not read 0")
    found = SparseContraction(parallel, a, meta, b, "", (), pattern, tuple((f.shift, f.mask) for f in fields),
                              int(_constant(evaluator, meta_op, "fill")), tg, (stop.terms[0][0], step, scale),
                              a_view.dtype, acc, acc, (), (tm, tn), contraction)
    if not _valid(found.positions(found.meta_fill), pattern):
        raise NoMatch("masked metadata that is not a valid encoding")
    init = evaluator.env.get(loop.group("iter")[0])
    if a_view.dtype != b_view.dtype or acc != "f32" or getattr(init, "value", None) != 0.0 or \
            getattr(init, "dtype", None) != acc:
        raise NoMatch("operands of two dtypes, or an accumulator other than f32 from 0")
    m_extent, n_extent = a_view.shape[0], b_view.shape[1]
    if extents != [Ceil(m_extent, tm), Ceil(n_extent, tn)]:
        raise NoMatch("the parallel domain does not tile M x N")
    c_name, c_axes, casts = _epilogue(evaluator, loop.results[0], epilogue, coordinates, (tm, tn), (m_extent, n_extent),
                                      acc)
    values = {loop.results[0]: "accumulator", contraction.results[0]: "accumulator", values_name: "a", b_name: "b"}
    return SparseContraction(**{**found.__dict__, "c": c_name, "c_axes": c_axes, "casts": tuple(casts),
                                "out_dtype": casts[-1] if casts else acc, "values": values})


def _valid(positions: tuple, pattern: str) -> bool:
    if pattern == "one_of_two":
        return positions[0] in (0, 1)
    first, second = positions
    return 0 <= first < second < 4
