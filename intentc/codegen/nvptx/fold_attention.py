"""Recognizing attention written as a `region_fold` over keys: the kernel shape the flash
mapping runs (docs/gpu.md, "Flash attention"; `flash_attention.py` emits it).

The kernel reads whole [T, D] key and value tiles (K, V) at the top level and runs one
`parallel` over the T query rows; its iteration reads its query row q[i, :] ([D]), takes
scores = matvec(K, q) ([T], f32 accumulator) followed by element-wise ops on [T] values,
folds (`region_fold`, axis 0) the scores and V into a record of scalars and [D] vectors,
computes an output [D] vector from the record with element-wise ops and writes it to
o[i, :]. The summarizer and the combine hold only ops the flash mapping lowers one by one
on its per-thread layout (`fold_values.py`): constants, `full`, scalar broadcasts,
element-wise ops and f32 math, reductions of a [len] vector, records, and one `vecmat` of
a [len] weight vector with the value slice. Nothing is matched by name: every op is
lowered with the shared element lowering, so the recognizer only proves that each value
is a scalar (a row's), a vector along the keys ([T] or the slice's [len]) or along D, or
one of the K / V / q tiles used where the mapping stages them. Anything else raises
NoMatch: the kernel keeps its other mappings.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...ir.nodes import Kernel, Op
from ...ir.optable import all_ops
from ...ir.types import RecordType, TensorType, ViewType
from .iteration_dots import Iota, _broadcast_axis, _tensor
from .fold_values import STRUCTURAL
from .tile_contraction import NoMatch, _is_contraction

REDUCTIONS = {"sum", "max", "min", "any", "all"}
DTYPES = {"f32", "f16", "bf16", "bool", "index"}
OPERANDS = {"f32", "f16", "bf16"}    # Q, K and V: one of these, the same for all three
# the contractions the mapping stages: the scores of K and q, the weights times the value slice
CONTRACTIONS = {("matvec", "keys", "query"), ("vecmat", None, "values")}


@dataclass(frozen=True)
class FoldAttention:
    parallel: Op
    q: str
    k: str
    v: str
    o: str
    rows: int | str               # T: the query rows and the keys
    depth: int | str              # D
    fold: Op                      # the region_fold
    prologue: tuple               # top-level value ops (not the iotas and reads, nor the parallel)
    keys_tile: str                # the top-level value holding K
    values_tile: str              # ... and V
    query: str                    # the iteration's read of q[i, :]
    operand_dtype: str = "f32"    # of Q, K and V
    kinds: dict = field(default_factory=dict, compare=False)   # value -> "rows" | "keys" | "cols" | tile


def _whole_tile(op: Op, env: dict, views: dict, shape: tuple) -> str:
    """The view a top-level read takes whole as [T, D] in the view's own axis order."""
    view = views.get(op.operands[0])
    indices = op.group("index") or ()
    if view is None or view.direction != "in" or len(view.shape) != 2 or op.group("mask") or len(indices) != 2:
        raise NoMatch("a top-level read other than a whole [T, D] view")
    for axis, name in enumerate(indices):
        if _broadcast_axis(env.get(name), shape) != axis or shape[axis] != view.shape[axis]:
            raise NoMatch("a top-level read other than a whole [T, D] view")
    return op.operands[0]


class _Shapes:
    """Which per-thread kind each value has (see the module docstring)."""

    def __init__(self, rows, depth):
        self.rows, self.depth = rows, depth
        self.kinds: dict[str, str] = {}

    def kind_of(self, type_, length: str | None = None) -> str:
        if isinstance(type_, RecordType):
            for f in type_.fields:
                self.kind_of(f.type, length)
            return "record"
        if not isinstance(type_, TensorType) or type_.dtype not in DTYPES:
            raise NoMatch(f"a value of type {type_} in the attention")
        if not type_.shape:
            return "rows"
        if len(type_.shape) == 1 and type_.shape[0] in (self.rows, length) and type_.shape[0] != self.depth:
            return "keys"
        if len(type_.shape) == 1 and type_.shape[0] == self.depth and self.depth != self.rows:
            return "cols"
        raise NoMatch(f"a tensor of shape {type_.shape} in the attention")

    def check(self, ops, tiles: dict, length: str | None = None) -> None:
        """Every op lowers on the per-thread kinds: `tiles` maps K/V/q values to their role."""
        table = all_ops()
        for op in ops:
            name = op.name
            definition = table[name]
            contracted = op.operands and (name, tiles.get(op.operands[0]), tiles.get(op.operands[-1])) in CONTRACTIONS
            if contracted:
                self._f32_acc(op)
            elif definition.contraction or any(tiles.get(operand) for operand in op.operands):
                raise NoMatch(f"`{name}` uses a K, V or q tile")
            elif name == "reduce" and (op.int_list_attr("axes") != [0] or op.keyword_attr("kind") not in REDUCTIONS
                                       or self.kinds.get(op.operands[0]) != "keys"):
                raise NoMatch("a reduction other than a whole [len] vector's builtin one")
            elif name == "broadcast" and "dims" in op.attributes:
                raise NoMatch("a broadcast along dims")
            elif not (name == "yield" or name in STRUCTURAL or (
                    (definition.family == "pointwise" or definition.libm)
                    and not op.attributes.get("approximate", False))):
                raise NoMatch(f"op `{name}` in the attention")
            for result, type_ in zip(op.results, op.result_types):
                self.kinds[result] = self.kind_of(type_, length)

    @staticmethod
    def _f32_acc(op: Op) -> None:
        acc = op.attributes["acc"]
        if not isinstance(acc, TensorType) or acc.dtype != "f32":
            raise NoMatch("a contraction without an f32 accumulator")


def match_fold_attention(kernel: Kernel) -> FoldAttention:
    """The kernel as attention by a region_fold over keys, or NoMatch saying why not."""
    views = {p.name: p.type for p in kernel.params if isinstance(p.type, ViewType)}
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1 or len(parallels[0].operands) != 1:
        raise NoMatch("not one top-level parallel over one extent")
    parallel = parallels[0]
    rows = parallel.operands[0]
    region = parallel.regions[0]
    ops = [op for op in region.ops if op.name != "yield"]
    folds = [op for op in ops if op.name == "region_fold"]
    writes = [op for op in ops if op.name == "write"]
    if len(folds) != 1 or len(writes) != 1 or ops[-1] is not writes[0] or ops[0].name != "read":
        raise NoMatch("not one query read, one region_fold and one final write")
    query_read, fold, write = ops[0], folds[0], writes[0]
    q, o = query_read.operands[0], write.operands[0]
    for name in (q, o):
        if name not in views or len(views[name].shape) != 2 or views[name].shape[0] != rows:
            raise NoMatch("the query or output is not a [T, D] view")
    depth = views[q].shape[1]
    if views[o].shape[1] != depth or views[q].dtype not in OPERANDS or views[o].dtype not in OPERANDS:
        raise NoMatch("the query and output are not f32, f16 or bf16 [T, D] views")
    shapes = _Shapes(rows, depth)
    env: dict = {}
    tiles: dict[str, str] = {}
    prologue = []             # the top-level values other than index tensors and the tiles
    top_reads = {}
    for op in kernel.body:
        if op is parallel or op.name == "yield":
            continue
        if op.name == "iota":
            type_ = _tensor(op.result_types[0])
            env[op.results[0]] = Iota(tuple(type_.shape), op.int_attr("axis", len(type_.shape) - 1))
        elif op.name == "read":
            top_reads[op.results[0]] = _whole_tile(op, env, views, (rows, depth))
        else:
            shapes.check([op], tiles)
            prologue.append(op)
    coordinate = region.args[0].name
    _row_read(query_read, coordinate, env, depth)
    tiles[query_read.results[0]] = "query"
    matvecs = [op for op in ops if op.name == "matvec"]
    if len(matvecs) != 1 or matvecs[0].operands[0] not in top_reads or matvecs[0].operands[1] != query_read.results[0]:
        raise NoMatch("the scores are not one matvec of the key tile and the query row")
    keys_tile = matvecs[0].operands[0]
    sources = fold.operands
    if len(sources) != 2 or sources[1] not in top_reads or fold.attributes.get("axis") != 0:
        raise NoMatch("the region_fold does not fold the scores and the value tile along the keys")
    values_tile = sources[1]
    operand = views[q].dtype
    if top_reads[keys_tile] == top_reads[values_tile] or views[top_reads[keys_tile]].dtype != operand \
            or views[top_reads[values_tile]].dtype != operand:
        raise NoMatch("the key and value tiles are not two views of the query's dtype")
    tiles[keys_tile], tiles[values_tile] = "keys", "values"
    shapes.kinds[coordinate] = "rows"
    before, after = ops[1:ops.index(fold)], ops[ops.index(fold) + 1:-1]
    # a keys vector exists one tile at a time: only the summarizer reduces one, and nothing
    # after the fold may read one
    if any(op.name == "reduce" or _is_weighting(op) for op in before + after) or any(map(_is_contraction, after)):
        raise NoMatch("a reduction or weighting outside the summarizer, or scores after the fold")
    shapes.check(before, tiles)
    keys_values = {name for name, kind in shapes.kinds.items() if kind == "keys"}
    if any(set(op.operands) & keys_values for op in after):
        raise NoMatch("a [T] vector used after the fold")
    shapes.check(after, tiles)
    if shapes.kinds.get(sources[0]) != "keys":
        raise NoMatch("the folded scores are not a [T] vector")
    _check_fold(shapes, fold, tiles)
    _row_read(write, coordinate, env, depth)
    if shapes.kinds.get(write.operands[1]) != "cols":
        raise NoMatch("the written row is not a [D] vector")
    return FoldAttention(parallel, q, top_reads[keys_tile], top_reads[values_tile], o, rows, depth, fold,
                         tuple(prologue), keys_tile, values_tile, query_read.results[0], operand, dict(shapes.kinds))


def _is_weighting(op: Op) -> bool:
    """A contraction of a vector by a tile (the summarizer's weights times the values)."""
    return _is_contraction(op) and op.name != "matvec"


def _row_read(op: Op, coordinate: str, env: dict, depth) -> None:
    """A read or write of row `coordinate` of a [T, D] view, whole along D."""
    indices = op.group("index") or ()
    if len(indices) != 2 or indices[0] != coordinate or op.group("mask") \
            or _broadcast_axis(env.get(indices[1]), (depth,)) != 0:
        raise NoMatch("an access other than a whole row of a [T, D] view")


def _check_fold(shapes: _Shapes, fold: Op, tiles: dict) -> None:
    summarize, combine = fold.regions
    if any(op.name == "matvec" for op in summarize.ops + combine.ops) or any(op.name == "vecmat" for op in combine.ops):
        raise NoMatch("scores inside the fold, or a weighting in its combine")
    length, positions, scores, values = (arg.name for arg in summarize.args)
    shapes.kinds[length] = "rows"
    shapes.kinds[positions] = shapes.kinds[scores] = "keys"
    region_tiles = {**tiles, values: "values"}
    shapes.check(summarize.ops, region_tiles, length)
    for arg in combine.args:
        shapes.kinds[arg.name] = shapes.kind_of(arg.type)
    shapes.check(combine.ops, tiles)
    for result, type_ in zip(fold.results, fold.result_types):
        shapes.kinds[result] = shapes.kind_of(type_)
    if len(fold.group("init") or ()) != len(fold.results):
        raise NoMatch("a region_fold without one init a result")
