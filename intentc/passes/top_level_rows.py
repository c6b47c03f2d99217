"""top-level-rows: a top-level tensor program whose tensors all lead with one axis, written as a
`parallel` over that axis (docs/gpu.md, "Top-level rows").

A kernel without `parallel` computes whole tensors: `%v = read %x index(%r, %c) : tensor<f32,
[%M, %N]>`, `%s = reduce %v {axes = [1], kind = sum} : tensor<f32, [%M]>`, then writes. When
every non-scalar value has the same leading extent E and no op mixes coordinates along it
(reductions, scans and iotas along the other axes; element-wise ops, reads, writes, reshapes
and broadcasts that keep it), the program is the same as `parallel %E { ^row(%i): ... }` with
each value's row: a [E, N] tensor becomes its row [N], an [E] tensor its element, an iota
along E the row index, axes numbered one lower. Every element is computed from the same
elements by the same ops, so the results are the same values (a reduction over a row is the
same reduction).

The GPU backend asks for this form when a program would otherwise run on one thread
(`codegen/nvptx/compile.py`): the iterations then get the row mappings. Values that do not
depend on the row (constants, scalar parameters and what is computed from them) stay before
the `parallel`. A program that does not fit (an op mixing rows, a non-scalar value without
the leading axis, an effect other than reads and writes of row values) is left as it is, and
so is a rewritten kernel the verifier would not accept.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import AttrValue, Helper, Kernel, Module, Op, Param, Region
from ..ir.optable import op_def, ops_where
from ..ir.types import TensorType
from .base import Pass, PassContext, register_pass, verifies_replaced
from .ir_walk import Namer, all_uses, defined_names, is_pure_tree, map_bodies, value_types

ELEMENTWISE = ops_where(lambda op: op.elementwise)
REDUCTIONS = ops_where(lambda op: op.family == "reduction")


@register_pass
@dataclass(frozen=True)
class TopLevelRows(Pass):
    name = "top-level-rows"
    summary = "write a top-level tensor program over rows of one leading axis as a `parallel` over it"

    def run(self, module: Module, ctx: PassContext) -> Module:
        def body(item: Kernel | Helper):
            if isinstance(item, Kernel) and (rows := rows_of(item, module)) is not None:
                ctx.count("top-level-rows.kernels")
                return rows.body
            return item.body
        return map_bodies(module, body)


class _Unfit(Exception):
    """The program is not a top-level program over rows."""


def rows_of(kernel: Kernel, module: Module) -> Kernel | None:
    """`kernel` (of `module`) as a `parallel` over its tensors' leading axis, or None when it
    is not one."""
    if any(op.name == "parallel" for op in kernel.body):
        return None
    leading = {t.shape[0] for op in kernel.body for t in op.result_types if isinstance(t, TensorType) and t.shape}
    if len(leading) != 1 or not any(isinstance(t, TensorType) and t.rank > 1
                                    for op in kernel.body for t in op.result_types):
        return None
    if not any(op.name in REDUCTIONS for op in kernel.body):
        return None               # element-wise: the grid mapping's chunks serve it whole
    (extent,) = leading
    try:
        rows = _Rows(kernel, extent).kernel()
    except _Unfit:
        return None
    return rows if verifies_replaced(module, kernel, rows) else None


class _Rows:
    def __init__(self, kernel: Kernel, extent):
        self.source, self.extent = kernel, extent
        self.types = value_types(kernel)
        namer = Namer(defined_names(kernel))
        self.row = namer.fresh("row")
        self.count = namer.fresh("rows") if isinstance(extent, int) else extent
        self.per_row: set[str] = set()        # values that depend on the row
        self.alias: dict[str, str] = {}       # values that are another value in row form
        self.row_indices: set[str] = set()    # iotas along the rows: the row index everywhere
        self.element_of: dict[str, str] = {}  # a row's element reshaped to ones: the element

    def kernel(self) -> Kernel:
        read = {op.operands[0] for op in self.source.body if op.name == "read"}
        if read & {op.operands[0] for op in self.source.body if op.name == "write"}:
            raise _Unfit          # one row's writes could meet another row's reads
        before, inside = [], []
        if isinstance(self.extent, int):
            before.append(Op(name="constant", results=(self.count,), attributes={"value": self.extent},
                             result_types=(TensorType(dtype="index"),)))
        for op in self.source.body:
            if not self._depends_on_row(op):
                before.append(op)
                continue
            converted = self._converted(op)
            if converted is not None:
                inside.append(converted)
        if not inside:
            raise _Unfit
        loop = Op(name="parallel", operands=(self.count,), loc=self.source.body[0].loc,
                  regions=(Region(label="row", args=(Param(name=self.row, type=TensorType(dtype="index")),),
                                  ops=tuple(inside)),))
        return self.source.model_copy(update={"body": (*before, loop)})

    def _depends_on_row(self, op: Op) -> bool:
        """Whether `op` runs per row (noting its results): it makes a tensor along the leading
        axis or reads such a value; an op with effects must do so."""
        along = any(isinstance(t, TensorType) and t.shape for t in op.result_types)
        if along or any(self._resolved(name) in self.per_row for name in all_uses(op)):
            self.per_row.update(op.results)
            return True
        if op.name != "read" and not is_pure_tree(op):
            raise _Unfit          # an effect outside the rows
        return False

    def _converted(self, op: Op) -> Op | None:
        """`op` on rows: None when its result is an alias of another row value."""
        if op.regions and not _scalar_combine(op):
            raise _Unfit
        special = _SPECIAL.get(op.name)
        if special is not None:
            return special(self, op)
        if op.name in REDUCTIONS:
            axes = "axes" if "axes" in op_def(op.name).attrs else "axis"
            return self._retyped(op, {axes: self._shifted(op.attributes.get(axes, 0))})
        if op.name in ELEMENTWISE:
            return self._retyped(op)
        raise _Unfit

    def _retyped(self, op: Op, attributes: dict | None = None) -> Op:
        """`op` on its operands' rows, with its results' row types (and `attributes` changed)."""
        groups = tuple(g.model_copy(update={"values": self._indices(g.values) if g.key == "index"
                                            else tuple(self._resolved(v) for v in g.values)}) for g in op.groups)
        return op.model_copy(update={"operands": tuple(self._resolved(v) for v in op.operands), "groups": groups,
                                     "attributes": {**op.attributes, **(attributes or {})},
                                     "result_types": tuple(self._row_type(t) for t in op.result_types)})

    def _indices(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """An access's indices: an iota along the rows is the row index itself (a scalar
        coordinate: the row's accesses are then seen to be contiguous) where another index
        keeps the access's shape."""
        if all(name in self.row_indices or not self._type_of(name).shape for name in names):
            return tuple(self._resolved(name) for name in names)
        return tuple(self.row if name in self.row_indices else self._resolved(name) for name in names)

    def _reshape(self, op: Op) -> Op | None:
        ones = self._ones_of_element(op)
        return ones if ones is not None else self._retyped(op)

    def _iota(self, op: Op) -> Op | None:
        (type_,) = op.result_types
        assert isinstance(type_, TensorType)
        axis = op.int_attr("axis", 0)
        row_type = self._row_type(type_)
        if axis > 0:
            attributes = {"axis": axis - 1} if axis > 1 else {}
            return op.model_copy(update={"attributes": attributes, "result_types": (row_type,)})
        if not row_type.shape:
            self.alias[op.results[0]] = self.row
            return None
        self.row_indices.add(op.results[0])
        return Op(name="broadcast", results=op.results, operands=(self.row,), result_types=(row_type,), loc=op.loc)

    def _ones_of_element(self, op: Op) -> Op | None:
        """A reshape of a row's element to ones ([E] -> [E, 1]: the way to broadcast a row's
        reduction back over it) as a broadcast of the element, or None for another reshape."""
        source = self._type_of(op.operands[0])
        self._leading(source)
        (type_,) = op.result_types
        row_type = self._row_type(type_)
        if source.rank > 1 or not row_type.shape or not all(e == 1 for e in row_type.shape):
            return None
        element = self._resolved(op.operands[0])
        self.element_of[op.results[0]] = element
        return Op(name="broadcast", results=op.results, operands=(element,), result_types=(row_type,), loc=op.loc)

    def _broadcast(self, op: Op) -> Op | None:
        """A broadcast keeping the leading axis (right-aligned at the same rank, or `dims`
        mapping source axis 0 to it) on rows; a scalar's to the row's shape."""
        (source,) = op.operands
        (type_,) = op.result_types
        assert isinstance(type_, TensorType)
        source_type = self._type_of(source)
        right_aligned = list(range(type_.rank - source_type.rank, type_.rank))
        dims = op.int_list_attr("dims") if "dims" in op.attributes else right_aligned
        if source_type.shape and (source not in self.per_row or dims[:1] != [0]):
            raise _Unfit          # (a value without the leading axis, or one aligned across it)
        row_type = self._row_type(type_)
        row_source = self.element_of.get(source, self._resolved(source))
        if not row_type.shape:
            self.alias[op.results[0]] = row_source
            return None
        attributes: dict[str, AttrValue] = {} if source in self.element_of or source_type.rank <= 1 or \
            dims == right_aligned else {"dims": [d - 1 for d in dims[1:]]}
        return Op(name="broadcast", results=op.results, operands=(row_source,), attributes=attributes,
                  result_types=(row_type,), loc=op.loc)

    def _shifted(self, axes):
        """An `axes` list or `axis` of a value with the leading axis, numbered in its row."""
        if isinstance(axes, list):
            if 0 in axes:
                raise _Unfit      # a reduction along the rows
            return [a - 1 for a in axes]
        if not isinstance(axes, int) or isinstance(axes, bool) or axes == 0:
            raise _Unfit
        return axes - 1

    def _row_type(self, type_):
        if not isinstance(type_, TensorType) or not type_.shape:
            return type_          # a scalar computed from row values
        self._leading(type_)
        return type_.model_copy(update={"shape": type_.shape[1:]})

    def _leading(self, type_) -> None:
        if not isinstance(type_, TensorType) or not type_.shape or type_.shape[0] != self.extent:
            raise _Unfit

    def _type_of(self, name: str) -> TensorType:
        type_ = self.types.get(name)
        if not isinstance(type_, TensorType):
            raise _Unfit
        return type_

    def _resolved(self, name: str) -> str:
        return self.alias.get(name, name)


# Conversions of the ops whose row form is not their own with row types (an implementation
# each, keyed by op name).
_SPECIAL = {"iota": _Rows._iota, "broadcast": _Rows._broadcast, "reshape": _Rows._reshape, "read": _Rows._retyped,
            "write": _Rows._retyped}


def _scalar_combine(op: Op) -> bool:
    """A pure op whose regions take scalars only (a generic reduction's combine): it runs the
    same on rows."""
    return is_pure_tree(op) and all(isinstance(arg.type, TensorType) and not arg.type.shape
                                    for region in op.regions for arg in region.args)
