"""The flash mapping's op-by-op lowering of the attention's iteration and fold regions onto a
thread's share of a CTA's query block (docs/gpu.md, "Flash attention").

A thread holds R query rows of the block; for each row it holds K keys of the current key
tile (lanes with the same row index share the tile's keys, 16 lanes a row) and C columns of
the current D block. So a value of the iteration is `PerThread` of one kind:
- `rows`: a scalar of each row (R values; a uniform scalar is the same value R times),
- `keys`: a [T] / [len] vector, the current tile's keys (R x K values),
- `cols`: a [D] vector, the current column block (R x C values),
or a record of such values. Element-wise ops run element by element through the shared
element lowering (`codegen/llvm/pointwise.py`, `math.py`: the same bits as every other
mapping); a reduction of a `keys` vector folds a thread's keys (keys past the axis's end
take the identity) and then a `shfl.sync.bfly` butterfly over the lanes of the row (16, or 4 in the MMA layout),
each step with the lower lane's operand first, so every lane gets the same bits (§6:
reductions may reassociate). `matvec` and `vecmat` are the emitter's (`contract`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any
from dataclasses import dataclass

from llvmlite import ir

from ...ir.nodes import Op
from ...ir.optable import all_ops
from ...ir.dtypes import is_float
from ...ir.types import RecordType, TensorType
from ..llvm import math as llvm_math
from ..llvm.conversion import constant_value, convert
from ..llvm.pointwise import binary, unary
from ..llvm.types import I1, I32, register_type
from .cta import _shuffle

ROW_LANES = 16            # lanes sharing a row's keys (lane bits 0..3)
COMBINE = {"sum": "add", "max": "maximum", "min": "minimum", "any": "or", "all": "and"}
# the ops other than contractions and element-wise ones that FoldValues lowers: op -> method
STRUCTURAL = {"record": "_record", "record_get": "_record_get", "constant": "_constant", "full": "_constant",
              "broadcast": "_broadcast", "select": "_select", "reduce": "_reduce", "cast": "_cast",
              "saturating_cast": "_cast"}


@dataclass
class PerThread:
    kind: str                 # "rows" | "keys" | "cols"
    dtype: str
    values: list              # [row][slot] (rows: one slot)


@dataclass
class Record:
    fields: dict              # name -> PerThread


def _is_vector(value) -> bool:
    """A row held as one LLVM vector (FoldValues.column_vector), not a splat constant."""
    return isinstance(value.type, ir.VectorType) and not isinstance(value, ir.Constant)


def _leaves(value) -> list:
    """The PerThread leaves of an evaluated value (a record's fields)."""
    return [leaf for inner in value.fields.values() for leaf in _leaves(inner)] if isinstance(value, Record) else [value]


def reduction_identity(op: Op, dtype: str) -> ir.Constant:
    """The identity of a `reduce` op's combine in `dtype`."""
    kind = op.keyword_attr("kind")
    if dtype == "bool":
        return ir.Constant(ir.IntType(1), int(kind == "all"))
    if dtype == "index":
        return ir.Constant(register_type(dtype), {"sum": 0, "max": -(1 << 63), "min": (1 << 63) - 1}[kind])
    return ir.Constant(register_type(dtype), {"sum": -0.0, "max": float("-inf"), "min": float("inf")}[kind])


class FoldValues:
    """Evaluates ops into `env` (name -> PerThread | Record); `slots` gives each kind's slot
    count, `depth` names D (a [D] vector is `cols`, any other vector `keys`), `key_exists` the i1 of each key slot (inside the axis), `lane` the thread's lane
    (i32), `contract(op, env)` lowers matvec / vecmat, `row_lanes` the lanes (low lane bits)
    that share a row's keys."""

    def __init__(self, em, rows: int, slots: dict, depth, contract: Callable, row_lanes: int = ROW_LANES):
        self.em, self.rows, self.slots, self.depth, self.contract = em, rows, slots, depth, contract
        self.row_lanes = row_lanes            # lanes sharing a row's keys: the reductions' butterfly
        self.env: dict = {}
        self.defs: dict = {}      # value -> its op (an fma-marked add's product)
        self.key_exists: list = []
        self.lane: ir.Value | None = None
        self._upper: dict = {}    # (block, offset) -> `_upper_lane`
        self.unlowered: set = set()   # values no op reads but the emitter's contraction, which reads their op's operands
        self.column_vector = 0    # C > 0: a `cols` value's row is one LLVM vector of its C slots (slots["cols"] = 1)
        # reductions whose operand is their identity at keys past the axis (dead_slices.identity_past_axis)
        self.identity_past_axis: frozenset = frozenset()

    def uniform(self, dtype: str, value: ir.Value) -> PerThread:
        return PerThread("rows", dtype, [[value] for _ in range(self.rows)])

    def filled(self, kind: str, dtype: str, value: ir.Value) -> PerThread:
        return PerThread(kind, dtype, [self.row_of(kind, value) for _ in range(self.rows)])

    def row_of(self, kind: str, value: ir.Value) -> list:
        """A row of `kind` whose every slot is `value`: one vector where columns are vectors."""
        if kind == "cols" and self.column_vector:
            return [self.splat(value)]
        return [value] * self.slots[kind]

    def splat(self, value: ir.Value) -> ir.Value:
        """A vector of `column_vector` copies of `value`."""
        vector = ir.VectorType(value.type, self.column_vector)
        if isinstance(value, ir.Constant):
            return ir.Constant(vector, [value.constant] * self.column_vector)
        b = self.em.b
        first = b.insert_element(ir.Constant(vector, ir.Undefined), value, ir.Constant(I32, 0))
        return b.shuffle_vector(first, ir.Constant(vector, ir.Undefined),
                                ir.Constant(ir.VectorType(I32, self.column_vector), [0] * self.column_vector))

    def run(self, ops) -> list:
        """Evaluates `ops`; returns the yielded values (a region's), if any."""
        for op in ops:
            if op.name == "yield":
                return [self.env[name] for name in op.operands]
            self.op(op)
        return []

    def op(self, op: Op) -> None:
        em, name = self.em, op.name
        type_: Any = op.result_types[0] if op.result_types else None
        definition = all_ops()[name]
        result: PerThread | Record
        if op.results and op.results[0] in self.unlowered:
            self.defs[op.results[0]] = op
            return
        if definition.contraction:              # of tiles the emitter stages
            result = self.contract(op, self.env)
        elif name in STRUCTURAL:
            result = getattr(self, STRUCTURAL[name])(op, [self.value(n) for n in op.operands], type_)
        elif "fma" in op.attributes and self._product(op) is not None:
            result = self._fused(op, *self._product(op))
        else:
            operands = [self.value(n) for n in op.operands]
            dtype = operands[0].dtype
            if definition.libm:
                result = self._map(operands, type_.dtype, lambda v: llvm_math.evaluate(em, op, name, v[0], dtype))
            elif len(operands) == 1:
                result = self._map(operands, type_.dtype, lambda v: unary(em, name, v[0], dtype))
            else:
                result = self._map(operands, type_.dtype, lambda v: binary(em, op, name, v[0], v[1], dtype))
        self.env[op.results[0]] = result
        self.defs[op.results[0]] = op

    def _record(self, op: Op, operands: list, type_) -> Record:
        return Record({f.name: value for f, value in zip(type_.fields, operands)})

    def _record_get(self, op: Op, operands: list, type_) -> PerThread:
        return operands[0].fields[op.keyword_attr("field")]

    def _constant(self, op: Op, operands: list, type_) -> PerThread:
        value = constant_value(self.em, op.attributes["value"], type_.dtype)
        return self.uniform(type_.dtype, value) if not type_.shape else self.filled(self._kind(type_), type_.dtype,
                                                                                    value)

    def _broadcast(self, op: Op, operands: list, type_) -> PerThread:
        kind = self._kind(type_)
        if kind == "rows":
            return operands[0]
        return PerThread(kind, type_.dtype, [self.row_of(kind, row[0]) for row in operands[0].values])

    def _cast(self, op: Op, operands: list, type_) -> PerThread:
        source = operands[0].dtype
        saturate = op.name == "saturating_cast"
        return self._map(operands, type_.dtype, lambda v: convert(self.em, op, v[0], source, type_.dtype, saturate))

    def _select(self, op: Op, operands: list, type_) -> PerThread:
        return self._map(operands, type_.dtype, lambda v: self.em.b.select(*v))

    def slotwise(self, ops) -> bool:
        """Whether `ops` (the ops after the fold) compute each column slot from the same slot
        of their inputs: element-wise ops, casts, selects, records and broadcasts only (no
        reduction or contraction), on a row's scalars and vectors of the columns."""
        if not all(all_ops()[op.name].elementwise or (op.name in STRUCTURAL and op.name != "reduce") for op in ops):
            return False
        return all(leaf.kind in ("rows", "cols") for name in self.inputs(ops) if name in self.env
                   for leaf in _leaves(self.env[name]))

    def varying(self, names: list) -> list:
        """The leaves of the values `names` (those evaluated here) whose slots differ: the
        ones `at_slot` reads slot by slot (constants and scalar broadcasts are one value)."""
        return [leaf for name in names if name in self.env for leaf in _leaves(self.env[name])
                if any(len({id(value) for value in row}) > 1 or _is_vector(row[0]) for row in leaf.values)]

    def at_slot(self, ops, names: list, read: Callable) -> dict:
        """`ops` on one column slot: the values `names` there (`read(leaf)`: that slot of a
        varying leaf, one value a row; any slot of the others); returns the evaluated values."""
        one = FoldValues(self.em, self.rows, {"rows": 1, "keys": 1, "cols": 1}, self.depth, self.contract,
                         self.row_lanes)
        one.lane = self.lane
        varying = {id(leaf) for leaf in self.varying(names)}

        def slot(value):
            if isinstance(value, Record):
                return Record({field: slot(inner) for field, inner in value.fields.items()})
            return read(value) if id(value) in varying else PerThread(value.kind, value.dtype,
                                                                      [[_first(row[0])] for row in value.values])
        one.env = {name: slot(self.env[name]) for name in names if name in self.env}
        one.run(ops)
        return one.env

    @staticmethod
    def inputs(ops) -> list:
        """The names `ops` read that they do not define."""
        defined = {name for op in ops for name in op.results}
        return list(dict.fromkeys(name for op in ops for name in op.operands if name not in defined))

    def value(self, name: str):
        """An evaluated value, or a kernel scalar (the same on every row)."""
        if name in self.env:
            return self.env[name]
        scalar = self.em.env[name]
        return self.uniform(scalar.dtype, scalar.value)

    def _product(self, op: Op):
        """(product operand index, its mul) of an add/sub that fusion-legality marked (§5.5)."""
        index = 0 if op.keyword_attr("fma") == "lhs" else 1
        producer = self.defs.get(op.operands[index])
        return (index, producer) if producer is not None and producer.name == "mul" else None

    def _fused(self, op: Op, index: int, producer: Op) -> PerThread:
        """One llvm.fma, one rounding, as the shared lowering fuses a marked add/sub."""
        em = self.em
        x, y = (self.value(n) for n in producer.operands)
        other = self.value(op.operands[1 - index])
        negate_product, negate_other = op.name == "sub" and index == 1, op.name == "sub" and index == 0

        def element(v):
            first = em.b.fneg(v[0]) if negate_product else v[0]
            addend = em.b.fneg(v[2]) if negate_other else v[2]
            return em.call_intrinsic("fma", first, v[1], addend)
        return self._map([x, y, other], other.dtype, element)

    def _kind(self, type_: TensorType) -> str:
        if not type_.shape:
            return "rows"
        return "cols" if type_.shape[0] == self.depth else "keys"

    def _map(self, operands: list, dtype: str, element) -> PerThread:
        first = operands[0] if operands[0].kind != "rows" or len(operands) == 1 else \
            next((o for o in operands if o.kind != "rows"), operands[0])
        rows = []
        for r in range(self.rows):
            rows.append([element([o.values[r][s if o.kind != "rows" else 0] for o in operands])
                         for s in range(len(first.values[r]))])
        return PerThread(first.kind, dtype, rows)

    def _reduce(self, op: Op, operands: list, type_) -> PerThread:
        """A keys vector to each row's scalar: the thread's keys in order (missing keys take
        the identity), then the butterfly over the row's 16 lanes."""
        vector = operands[0]
        identity = reduction_identity(op, vector.dtype)
        return self.rows_result(op, [self.across_lanes(op, self.thread_keys(op, identity, row, vector.dtype), vector.dtype)
                                     for row in vector.values], vector.dtype)

    @staticmethod
    def rows_result(op: Op, totals: list, dtype: str) -> PerThread:
        """A reduction's rows scalar from each row's total."""
        return PerThread("rows", dtype if op.keyword_attr("kind") not in ("any", "all") else "bool",
                         [[total] for total in totals])

    def thread_keys(self, op: Op, total: ir.Value, row: list, dtype: str) -> ir.Value:
        """`total` combined with a row's key slots `row` in order, a slot past the axis
        (`key_exists`) taking the reduction's identity (which the slot holds already where
        `identity_past_axis` proves it)."""
        b = self.em.b
        identity = reduction_identity(op, dtype)
        masked = op.results[0] not in self.identity_past_axis
        for value, exists in zip(row, self.key_exists, strict=True):
            operand = b.select(exists, value, identity) if masked else value
            total = binary(self.em, op, COMBINE[op.keyword_attr("kind")], total, operand, dtype)
        return total

    def across_lanes(self, op: Op, total: ir.Value, dtype: str) -> ir.Value:
        """A row's thread total combined over the row's lanes: a butterfly, the lower lane's
        operand first (every lane the same bits)."""
        b = self.em.b
        offset = 1
        while offset < self.row_lanes:
            other = self._shuffled(total, offset)
            if is_float(dtype):
                upper = self._upper_lane(offset)
                first, second = b.select(upper, other, total), b.select(upper, total, other)
            else:           # an integer or bool combine gives the same bits in either order
                first, second = total, other
            total = binary(self.em, op, COMBINE[op.keyword_attr("kind")], first, second, dtype)
            offset *= 2
        return total

    def _shuffled(self, value: ir.Value, offset: int) -> ir.Value:
        """The value of the lane `offset` away in the butterfly (a bool moves as an i32)."""
        if value.type != I1:
            return _shuffle(self.em, "bfly", value, offset, 0x1F)
        b = self.em.b
        return b.trunc(_shuffle(self.em, "bfly", b.zext(value, I32), offset, 0x1F), I1)

    def _upper_lane(self, offset: int) -> ir.Value:
        """i1: this lane is the upper of its butterfly pair at `offset` (whose operand goes
        second: every lane the same bits); built once a block."""
        b = self.em.b
        key = (b.block, offset)
        if key not in self._upper:
            self._upper[key] = b.icmp_unsigned("!=", b.and_(self.lane, ir.Constant(I32, offset)), ir.Constant(I32, 0))
        return self._upper[key]


def _first(value: ir.Value) -> ir.Value:
    """A slot of a row the same in every slot: the value, or a splat constant's element."""
    if isinstance(value.type, ir.VectorType):
        element = value.constant[0]
        return element if isinstance(element, ir.Constant) else ir.Constant(value.type.element, element)
    return value


def record_leaves(value, type_) -> list:
    """The PerThread leaves of a value of `type_` (a record's fields in order)."""
    if isinstance(type_, RecordType):
        return [leaf for f in type_.fields for leaf in record_leaves(value.fields[f.name], f.type)]
    return [value]


def rebuild(type_, leaves: list):
    """A value of `type_` from `record_leaves` order (consumes `leaves`)."""
    if isinstance(type_, RecordType):
        return Record({f.name: rebuild(f.type, leaves) for f in type_.fields})
    return leaves.pop(0)
