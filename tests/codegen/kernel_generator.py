"""Random well-typed KIR kernels for differential fuzzing (interpreter vs CPU vs PTX).

`generate(rng)` returns a `Program`: KIR text of one kernel `@k`, its inputs (fresh random
arrays mixed with each dtype's special values) and, per output, whether the spec fixes its
bits (`bits`) or only bounds them: a libm function within ULPs (`ulps`), a reassociated float
sum, product or combine (`sum`: any order's rounding, overflow and inf/NaN, §6).

A kernel reads views of random dtypes over one domain and builds values in one of three
forms: `rows` (a `parallel` over rows, tensors of one row), `top` (whole 2-D tensors at the
top level) and `elems` (a `parallel` over every element, scalars). Values of one form share
one shape; ops that change the shape (reductions, scans, arg_reduce, region folds) are
broadcast back to it. Every op is kept away from illegal inputs by construction (divisors
forced nonzero, shift amounts masked, float→int casts saturated after NaN is replaced), so a
difference between targets, a crash or a diagnostic on a generated program is a bug of
intentc (or of this generator: the failing program says which).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from intentc.interp.values import np_dtype
from intentc.ir.optable import ops_where

from programs import special_values

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64", "f8e5m2"]
# f8e4m3fn has no infinity: arithmetic that rounds past 448 is an illegal input (docs/kir.md §4),
# so it is read, cast and written but never computed with.
STORED_ONLY = ["f8e4m3fn"]
BITS = {"bool": 8, "i8": 8, "u8": 8, "f8e5m2": 8, "f8e4m3fn": 8, "i16": 16, "u16": 16, "f16": 16, "bf16": 16,
        "i32": 32, "u32": 32, "f32": 32, "i64": 64, "u64": 64, "f64": 64}
# The ops come from the op table's traits (no hand-kept op lists, tools/oplists.py); what
# the table cannot say — the guards keeping an op from illegal inputs and the numerics class
# of a float function — is data keyed by op.


def _pointwise(operands: int, classes: tuple[str, ...], same_type: bool = True) -> list[str]:
    return sorted(ops_where(lambda op: op.elementwise and op.family in ("pointwise", "math") and
                            len(op.operands) == operands and op.same_type == same_type and op.dtypes in classes))


INT_BINARY = _pointwise(2, ("numeric", "int", "int_or_bool"))
FLOAT_BINARY = _pointwise(2, ("numeric", "float"))
INT_UNARY = _pointwise(1, ("numeric", "int", "int_or_bool"))
LOGIC = sorted(ops_where(lambda op: op.dtypes == "int_or_bool" and len(op.operands) == 2))
COMPARES = _pointwise(2, ("any",), same_type=False)
CLASSIFY = _pointwise(1, ("float",), same_type=False)
CONVERSIONS = sorted(ops_where(lambda op: op.family == "conversion" and op.identity_at_same_type) - {"bitcast"})
DECODERS = sorted(ops_where(lambda op: op.family == "conversion" and op.elementwise and not op.identity_at_same_type
                            and not op.attrs and op.name.startswith("decode_")))
# Operands that would make an integer op an illegal input are replaced (§4): the guard's method.
GUARDS = {"floordiv": "nonzero_divisor", "mod": "nonzero_divisor", "shl": "shift_amount", "shr": "shift_amount"}
# Float functions of one operand, by what the spec fixes: the bits (exact or correctly
# rounded) or a ULP bound; lgamma is left out (between its negative poles no bound holds).
FLOAT_UNARY_BOUND = {"neg": "bits", "abs": "bits", "sqrt": "bits", "floor": "bits", "ceil": "bits", "trunc": "bits",
                     "rint": "bits", "rsqrt": "ulps", "i0": "ulps"} | \
    dict.fromkeys(ops_where(lambda op: op.libm) - {"lgamma"}, "ulps")
# Associative and commutative combines of generic_reduce / region_fold with their identities
# (float `add` is associative only up to rounding: §6 lets the compiler reorder it).
FLOAT_COMBINE_IDENTITY = {"add": 0.0, "maximum": "-inf", "maximum_num": "-inf", "minimum": "inf", "minimum_num": "inf"}
# Accumulators that hold every value of the operand dtype exactly (docs/kir.md §7).
ACCUMULATORS = {"i8": ["i32", "i64"], "i16": ["i32", "i64"], "u8": ["u32", "i32"], "i32": ["i32", "i64"],
                "u32": ["u32", "u64"], "i64": ["i64"], "f16": ["f32", "f64"], "bf16": ["f32", "f64"],
                "f8e5m2": ["f32"], "f32": ["f32", "f64"], "f64": ["f64"]}
ATOMIC_TYPES = ["i32", "i64", "u32", "u64", "f32", "f64"]
BINS = 5
LONG_EXTENTS = [1000, 1024, 1025, 4097, 10000]
EXTENTS = [0, 1, 2, 3, 5, 7, 8, 16, 31, 33, 64, 100, 257]


@dataclass
class Value:
    name: str
    dtype: str
    exact: bool = True
    bound: str = "bits"


@dataclass
class Program:
    text: str
    inputs: dict[str, np.ndarray]
    outputs: dict[str, str] = field(default_factory=dict)   # name → bits, ulps or sum
    form: str = ""


def is_float(dtype: str) -> bool:
    return dtype in FLOATS or dtype in STORED_ONLY


class KernelBuilder:
    """Builds one kernel's text; `self.shape` is the type suffix of every pooled value."""

    def __init__(self, rng: random.Random, form: str, rows: int, cols: int, static_cols: bool):
        # `nested` is `elems` written as a parallel over rows holding a parallel over columns.
        self.nested = form == "nested"
        form = "elems" if self.nested else form
        self.rng, self.form = rng, form
        self.rows, self.cols = rows, cols
        self.col_extent = str(cols) if static_cols else "%N"
        self.params: list[str] = []
        self.body: list[str] = []
        self.prologue: list[str] = []
        self.pool: list[Value] = []
        self.inputs: dict[str, np.ndarray] = {}
        self.outputs: dict[str, bool] = {}
        self.counter = 0
        self.indent = "  " if form == "top" else "    "
        self.shape = {"rows": f"[{self.col_extent}]", "top": f"[%M, {self.col_extent}]", "elems": "[]"}[form]
        self.rank = {"rows": 1, "top": 2, "elems": 0}[form]
        self.index = {"rows": "%i, %cols", "top": "%r, %c", "elems": "%i, %j"}[form]
        self.constants: dict[tuple[str, str], str] = {}
        self.helpers: list[str] = []

    # ---- names and types ------------------------------------------------------------------
    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"%{stem}{self.counter}"

    def ty(self, dtype: str, shape: str | None = None) -> str:
        shape = self.shape if shape is None else shape
        return dtype if shape == "[]" else f"tensor<{dtype}, {shape}>"

    def emit(self, line: str) -> None:
        self.body.append(self.indent + line)

    def constant(self, dtype: str, value) -> str:
        """A scalar constant at the top of the kernel (shared, visible in every region)."""
        key = (dtype, repr(value))
        if key not in self.constants:
            name = f"%k{len(self.constants)}"
            self.prologue.append(f"  {name} = constant {{value = {value}}} : {dtype}")
            self.constants[key] = name
        return self.constants[key]

    def component_constant(self, dtype: str, value, component: str) -> str:
        """A constant of a reduction component's type (a scalar, or a tensor of the reduced shape)."""
        scalar = self.constant(dtype, value)
        if component == dtype:
            return scalar
        name = self.fresh("s")
        self.emit(f"{name} = broadcast {scalar} : {component}")
        return name

    def splat(self, dtype: str, value) -> str:
        """`value` in the pool's shape."""
        scalar = self.constant(dtype, value)
        if self.shape == "[]":
            return scalar
        name = self.fresh("s")
        self.emit(f"{name} = broadcast {scalar} : {self.ty(dtype)}")
        return name

    def add(self, name: str, dtype: str, exact: bool = True, libm: bool = False) -> Value:
        value = Value(name, dtype, exact, "bits" if exact else "ulps" if libm else "sum")
        if exact:      # an inexact value only flows to an output (its bound is then the op's own)
            self.pool.append(value)
        return value

    def pick(self, predicate=lambda v: True) -> Value | None:
        choices = [v for v in self.pool if predicate(v)]
        return self.rng.choice(choices) if choices else None

    # ---- reads ----------------------------------------------------------------------------
    def read_input(self, dtype: str | None = None) -> Value:
        dtype = dtype or self.rng.choice(INTS + FLOATS + STORED_ONLY + ["bool"])
        param = f"x{len(self.inputs)}"
        self.params.append(f"%{param}: view<{dtype}, [%M, {self.col_extent}], in>")
        self.inputs[param] = input_array(dtype, (self.rows, self.cols), self.rng)
        name = self.fresh()
        self.emit(f"{name} = read %{param} index({self.index}) : {self.ty(dtype)}")
        return self.add(name, dtype)

    # ---- pointwise ------------------------------------------------------------------------
    def computable(self, v: Value) -> bool:
        return v.dtype not in STORED_ONLY

    def binary(self) -> Value | None:
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool")
        if a is None:
            return None
        b = self.pick(lambda v: v.dtype == a.dtype) or a
        op = self.rng.choice(FLOAT_BINARY if is_float(a.dtype) else INT_BINARY)
        rhs = getattr(self, GUARDS[op])(b) if op in GUARDS else b.name
        name = self.fresh()
        self.emit(f"{name} = {op} {a.name}, {rhs} : {self.ty(a.dtype)}")
        return self.add(name, a.dtype)

    def unguarded(self, dtype: str) -> list[str]:
        """The binary ops of `dtype` that take any operands (no guard needed)."""
        return [op for op in (FLOAT_BINARY if is_float(dtype) else INT_BINARY) if op not in GUARDS]

    def nonzero_divisor(self, b: Value) -> str:
        """`max(b, 1)`: never zero, never -1 (signed_min // -1 is an illegal input)."""
        one = self.splat(b.dtype, 1)
        name = self.fresh()
        self.emit(f"{name} = maximum {b.name}, {one} : {self.ty(b.dtype)}")
        return name

    def shift_amount(self, b: Value) -> str:
        """`b & (width - 1)`: always in [0, width)."""
        mask = self.splat(b.dtype, BITS[b.dtype] - 1)
        name = self.fresh()
        self.emit(f"{name} = and {b.name}, {mask} : {self.ty(b.dtype)}")
        return name

    def logic(self) -> Value | None:
        a = self.pick(lambda v: v.dtype == "bool")
        if a is None:
            return self.compare()
        b = self.pick(lambda v: v.dtype == "bool") or a
        name = self.fresh()
        if self.rng.random() < 0.2:
            self.emit(f"{name} = not {a.name} : {self.ty('bool')}")
        else:
            self.emit(f"{name} = {self.rng.choice(LOGIC)} {a.name}, {b.name} : {self.ty('bool')}")
        return self.add(name, "bool")

    def unary(self) -> Value | None:
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool")
        if a is None:
            return None
        name = self.fresh()
        if is_float(a.dtype):
            bound = "ulps" if self.rng.random() < 0.3 and a.dtype != "f8e5m2" else "bits"
            op = self.rng.choice(sorted(name for name, b in FLOAT_UNARY_BOUND.items() if b == bound))
            self.emit(f"{name} = {op} {a.name} : {self.ty(a.dtype)}")
            return self.add(name, a.dtype, exact=bound == "bits", libm=bound == "ulps")
        op = self.rng.choice(INT_UNARY)
        self.emit(f"{name} = {op} {a.name} : {self.ty(a.dtype)}")
        return self.add(name, a.dtype)

    def classify(self) -> Value | None:
        a = self.pick(lambda v: is_float(v.dtype) and self.computable(v))
        if a is None:
            return None
        name = self.fresh()
        self.emit(f"{name} = {self.rng.choice(CLASSIFY)} {a.name} : {self.ty('bool')}")
        return self.add(name, "bool")

    def compare(self) -> Value | None:
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool")
        if a is None:
            return None
        b = self.pick(lambda v: v.dtype == a.dtype) or a
        name = self.fresh()
        self.emit(f"{name} = {self.rng.choice(COMPARES)} {a.name}, {b.name} : {self.ty('bool')}")
        return self.add(name, "bool")

    def select(self) -> Value | None:
        cond = self.pick(lambda v: v.dtype == "bool") or self.compare()
        a = self.pick(lambda v: v.dtype != "bool")
        if cond is None or a is None:
            return None
        b = self.pick(lambda v: v.dtype == a.dtype) or a
        name = self.fresh()
        self.emit(f"{name} = select {cond.name}, {a.name}, {b.name} : {self.ty(a.dtype)}")
        return self.add(name, a.dtype)

    # ---- conversions ----------------------------------------------------------------------
    def convert(self) -> Value | None:
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        target = self.rng.choice(INTS + FLOATS + STORED_ONLY)
        if self.rng.random() < 0.25:
            same_width = [d for d in INTS + FLOATS + STORED_ONLY if BITS[d] == BITS[a.dtype] and d != a.dtype]
            if same_width:
                target = self.rng.choice(same_width)
                # A computed NaN's payload is the target's choice (§5.2): bitcast shows it.
                source = self.without_nan(a) if is_float(a.dtype) and not is_float(target) else a.name
                name = self.fresh()
                self.emit(f"{name} = bitcast {source} : {self.ty(target)}")
                return self.add(name, target)
        source = a.name
        if is_float(a.dtype) and not is_float(target):
            source = self.without_nan(a)           # NaN to an integer is illegal even saturating
            op = "saturating_cast"
        elif is_float(target) and target == "f8e4m3fn":
            op = "saturating_cast"                 # a finite overflow into f8e4m3fn is illegal
        else:
            op = self.rng.choice(CONVERSIONS)
        name = self.fresh()
        self.emit(f"{name} = {op} {source} : {self.ty(target)}")
        return self.add(name, target)

    def without_nan(self, a: Value) -> str:
        nan = self.fresh()
        self.emit(f"{nan} = isnan {a.name} : {self.ty('bool')}")
        zero = self.splat(a.dtype, 0.0)
        name = self.fresh()
        self.emit(f"{name} = select {nan}, {zero}, {a.name} : {self.ty(a.dtype)}")
        return name

    # ---- reductions, scans ----------------------------------------------------------------
    def reduced_shape(self, axis: int) -> str:
        extents = {"rows": [self.col_extent], "top": ["%M", self.col_extent]}[self.form]
        del extents[axis]
        return "[" + ", ".join(extents) + "]"

    def back(self, name: str, dtype: str, axis: int, exact: bool) -> Value:
        """A value reduced along `axis`, broadcast back to the pool's shape."""
        out = self.fresh()
        dims = " {dims = [0]}" if self.form == "top" and axis == 1 else ""
        self.emit(f"{out} = broadcast {name}{dims} : {self.ty(dtype)}")
        return self.add(out, dtype, exact)

    def reduce(self) -> Value | None:
        if self.rank == 0:
            return None
        a = self.pick(self.computable)
        if a is None:
            return None
        axis = self.rng.randrange(self.rank)
        if a.dtype == "bool":
            kind, acc = self.rng.choice(["any", "all"]), "bool"
        else:
            kind = self.rng.choice(["sum", "prod", "max", "min"])
            acc = self.accumulator(a.dtype, kind)
        exact = not (is_float(acc) and kind in ("sum", "prod"))
        attr = f", acc = {acc}" if acc != a.dtype else ""
        name = self.fresh()
        self.emit(f"{name} = reduce {a.name} {{axes = [{axis}]{attr}, kind = {kind}}} : "
                  f"{self.ty(acc, self.reduced_shape(axis))}")
        return self.back(name, acc, axis, exact)

    def accumulator(self, dtype: str, kind: str) -> str:
        """`kind`'s default accumulator (§3 widening for sum), sometimes an explicit wider one."""
        if kind not in ("sum", "prod"):
            return dtype
        if is_float(dtype):
            return self.rng.choice(["f32", "f64"]) if dtype != "f64" else "f64"
        wide = {"i8": "i32", "i16": "i32", "u8": "u32", "u16": "u32"}
        default = wide.get(dtype, dtype) if kind == "sum" else dtype
        return self.rng.choice([default, "i64" if dtype.startswith("i") else "u64"])

    def scan(self) -> Value | None:
        if self.rank == 0:
            return None
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool")
        if a is None:
            return None
        axis = self.rng.randrange(self.rank)
        kind = self.rng.choice(["sum", "prod", "max", "min"])
        acc = self.accumulator(a.dtype, kind)
        attrs = [f"axis = {axis}"]
        if acc != a.dtype:
            attrs.insert(0, f"acc = {acc}")
        if self.rng.random() < 0.4:
            attrs.append("exclusive = true")
        attrs.append(f"kind = {kind}")
        if self.rng.random() < 0.4:
            attrs.append("reverse = true")
        name = self.fresh()
        self.emit(f"{name} = scan {a.name} {{{', '.join(attrs)}}} : {self.ty(acc)}")
        return self.add(name, acc, exact=not (is_float(acc) and kind in ("sum", "prod")))

    def arg_reduce(self) -> Value | None:
        if self.rank == 0 or self.cols == 0 or (self.form == "top" and self.rows == 0):
            return None                              # an empty axis has no position (R0405)
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool")
        if a is None:
            return None
        axis = self.rng.randrange(self.rank)
        shape = self.reduced_shape(axis)
        value, position = self.fresh(), self.fresh()
        kind = self.rng.choice(["max", "min"])
        self.emit(f"{value}, {position} = arg_reduce {a.name} {{axis = {axis}, kind = {kind}}} : "
                  f"{self.ty(a.dtype, shape)}, {self.ty('index', shape)}")
        wide = self.fresh()
        self.emit(f"{wide} = cast {position} : {self.ty('i64', shape)}")
        self.back(value, a.dtype, axis, True)
        return self.back(wide, "i64", axis, True)

    def generic_reduce(self) -> Value | None:
        if self.rank == 0:
            return None
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool")
        if a is None:
            return None
        axis = self.rng.randrange(self.rank)
        op, identity = self.combine_op(a.dtype)
        component = self.ty(a.dtype, self.reduced_shape(axis))
        init = self.component_constant(a.dtype, identity, component)
        name = self.fresh()
        acc, x = self.fresh("a"), self.fresh("b")
        scan = self.rng.random() < 0.5
        if scan:
            attrs = [f"axis = {axis}"] + (["exclusive = true"] if self.rng.random() < 0.4 else []) \
                + (["reverse = true"] if self.rng.random() < 0.4 else [])
            self.emit(f"{name} = generic_scan {a.name} init({init}) {{{', '.join(attrs)}}} : {self.ty(a.dtype)} {{")
        else:
            self.emit(f"{name} = generic_reduce {a.name} init({init}) {{axes = [{axis}]}} : {component} {{")
        self.emit(f"^combine({acc}: {component}, {x}: {component}):")
        result = self.fresh()
        self.emit(f"  {result} = {op} {acc}, {x} : {component}")
        self.emit(f"  yield {result}")
        self.emit("}")
        exact = not (is_float(a.dtype) and op == "add")
        if scan:
            return self.add(name, a.dtype, exact)
        return self.back(name, a.dtype, axis, exact)

    def combine_op(self, dtype: str) -> tuple[str, object]:
        if is_float(dtype):
            op = self.rng.choice(sorted(FLOAT_COMBINE_IDENTITY))
            return op, FLOAT_COMBINE_IDENTITY[op]
        low, high = int_limits(dtype)
        identities = {"add": 0, "mul": 1, "and": -1 if low < 0 else high, "or": 0, "xor": 0,
                      "maximum": low, "minimum": high}
        op = self.rng.choice(sorted(identities))
        return op, identities[op]

    def region_fold(self) -> Value | None:
        """A sum or extremum by slices: summarize reduces a slice, combine merges two."""
        if self.rank == 0:
            return None
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool" and v.dtype != "f8e5m2")
        if a is None:
            return None
        axis = self.rng.randrange(self.rank)
        kind, op = self.rng.choice([("sum", "add"), ("max", "maximum"), ("min", "minimum")])
        acc = a.dtype if kind != "sum" else ("f64" if is_float(a.dtype) else ("i64" if a.dtype[0] == "i" else "u64"))
        identity = {"sum": 0.0 if is_float(acc) else 0, "max": "-inf" if is_float(acc) else int_limits(acc)[0],
                    "min": "inf" if is_float(acc) else int_limits(acc)[1]}[kind]
        summary = self.ty(acc, self.reduced_shape(axis))
        init = self.component_constant(acc, identity, summary)
        extents = {"rows": [self.col_extent], "top": ["%M", self.col_extent]}[self.form]
        sliced = list(extents)
        length = self.fresh("len")
        sliced[axis] = length
        slice_ty = f"tensor<{a.dtype}, [{', '.join(sliced)}]>"
        name = self.fresh()
        self.emit(f"{name} = region_fold {a.name} init({init}) {{axis = {axis}}} : {summary} {{")
        xs, part, left, right, merged = (self.fresh(s) for s in ("xs", "p", "l", "r", "m"))
        pos = self.fresh("pos")
        self.emit(f"^summarize({length}: index, {pos}: tensor<index, [{length}]>, {xs}: {slice_ty}):")
        acc_attr = f", acc = {acc}" if acc != a.dtype else ""
        self.emit(f"  {part} = reduce {xs} {{axes = [{axis}]{acc_attr}, kind = {kind}}} : {summary}")
        self.emit(f"  yield {part}")
        self.emit("} {")
        self.emit(f"^combine({left}: {summary}, {right}: {summary}):")
        self.emit(f"  {merged} = {op} {left}, {right} : {summary}")
        self.emit(f"  yield {merged}")
        self.emit("}")
        return self.back(name, acc, axis, exact=not (is_float(acc) and kind == "sum"))

    def arg_pair(self) -> Value | None:
        """A two-component generic_reduce: the maximum and the lowest position holding it (ties
        and the comparison exact: integer values)."""
        if self.rank == 0:
            return None
        a = self.pick(lambda v: v.dtype in INTS)
        if a is None:
            return None
        axis = self.rng.randrange(self.rank)
        position = self.fresh()
        self.emit(f"{position} = iota {{axis = {axis}}} : {self.ty('i64')}")
        value_ty, index_ty = (self.ty(d, self.reduced_shape(axis)) for d in (a.dtype, "i64"))
        low = self.component_constant(a.dtype, int_limits(a.dtype)[0], value_ty)
        far = self.component_constant("i64", int_limits("i64")[1], index_ty)
        best, where = self.fresh(), self.fresh()
        av, ai, bv, bi = self.fresh("a"), self.fresh("a"), self.fresh("b"), self.fresh("b")
        greater, same, earlier, tie, take, v, i = (self.fresh() for _ in range(7))
        self.emit(f"{best}, {where} = generic_reduce {a.name}, {position} init({low}, {far}) {{axes = [{axis}]}} : "
                  f"{value_ty}, {index_ty} {{")
        self.emit(f"^combine({av}: {value_ty}, {ai}: {index_ty}, {bv}: {value_ty}, {bi}: {index_ty}):")
        bool_ty = self.ty("bool", self.reduced_shape(axis))
        self.emit(f"  {greater} = gt {bv}, {av} : {bool_ty}")
        self.emit(f"  {same} = eq {bv}, {av} : {bool_ty}")
        self.emit(f"  {earlier} = lt {bi}, {ai} : {bool_ty}")
        self.emit(f"  {tie} = and {same}, {earlier} : {bool_ty}")
        self.emit(f"  {take} = or {greater}, {tie} : {bool_ty}")
        self.emit(f"  {v} = select {take}, {bv}, {av} : {value_ty}")
        self.emit(f"  {i} = select {take}, {bi}, {ai} : {index_ty}")
        self.emit(f"  yield {v}, {i}")
        self.emit("}")
        self.back(best, a.dtype, axis, True)
        return self.back(where, "i64", axis, True)

    def call(self) -> Value | None:
        """A helper applying a binary op (and a select on its own comparison) to two values."""
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool")
        if a is None:
            return None
        b = self.pick(lambda v: v.dtype == a.dtype) or a
        op = self.rng.choice(self.unguarded(a.dtype))
        helper = f"h{len(self.helpers)}"
        t = self.ty(a.dtype)
        self.helpers.append(f"helper @{helper}(%p: {t}, %q: {t}) -> ({t}) {{\n  %r = {op} %p, %q : {t}\n"
                            f"  %g = gt %p, %q : {self.ty('bool')}\n  %s = select %g, %r, %q : {t}\n  yield %s\n}}\n")
        name = self.fresh()
        self.emit(f"{name} = call {a.name}, {b.name} {{callee = @{helper}}} : {t}")
        return self.add(name, a.dtype)

    # ---- kernel scalars, random numbers, decoders, buffers, contractions -------------------
    def scalar_param(self) -> Value:
        """A runtime scalar parameter, broadcast to the pool's shape."""
        dtype = self.rng.choice(INTS + FLOATS + ["bool"])
        param = f"x{len(self.inputs)}"
        self.params.append(f"%{param}: {dtype}")
        self.inputs[param] = input_array(dtype, (1, 1), self.rng).reshape(())
        if self.shape == "[]":
            return self.add(f"%{param}", dtype)
        name = self.fresh()
        self.emit(f"{name} = broadcast %{param} : {self.ty(dtype)}")
        return self.add(name, dtype)

    def random(self) -> Value:
        """Philox bits or a uniform float at a counter made of the coordinates (exact, §12)."""
        param = f"x{len(self.inputs)}"
        self.params.append(f"%{param}: u64")
        self.inputs[param] = np.uint64(self.rng.randrange(2 ** 64))
        row = {"rows": "%i", "top": "%r", "elems": "%i"}[self.form]
        base, counter, name = self.fresh(), self.fresh(), self.fresh()
        scaled_row = row if self.form == "top" else self.index_splat(row)
        self.emit(f"{base} = mul {scaled_row}, {self.index_splat(self.extent_value())} : {self.ty('index')}")
        self.emit(f"{counter} = add {base}, {self.column()} : {self.ty('index')}")
        op, dtype = self.rng.choice([("random_bits", "u32"), ("uniform", "f32")])
        self.emit(f"{name} = {op} %{param}, {counter} : {self.ty(dtype)}")
        return self.add(name, dtype)

    def decode(self) -> Value | None:
        a = self.pick(lambda v: v.dtype == "u8")
        if a is None:
            return None
        name = self.fresh()
        self.emit(f"{name} = {self.rng.choice(DECODERS)} {a.name} : {self.ty('f32')}")
        return self.add(name, "f32")

    def approximate(self) -> Value | None:
        """§5.1's approximate modes on f32 (within their stated bounds, so `ulps`)."""
        a = self.pick(lambda v: v.dtype == "f32")
        if a is None:
            return None
        b = self.pick(lambda v: v.dtype == "f32") or a
        name = self.fresh()
        line = self.rng.choice([f"exp2 {a.name} {{approximate = true}}", f"tanh {a.name} {{approximate = true}}",
                                f"fdiv {a.name}, {b.name} {{approximate = true}}", f"exp2 {a.name}"])
        self.emit(f"{name} = {line} : {self.ty('f32')}")
        return self.add(name, "f32", exact=False, libm=True)

    def scratch(self) -> Value | None:
        """A row's kernel-local buffer: initialized from a value, overwritten where a mask holds,
        read back (rows only: one buffer per iteration)."""
        if self.form != "rows":
            return None
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        b = self.pick(lambda v: v.dtype == a.dtype) or a
        where = self.pick(lambda v: v.dtype == "bool") or self.compare()
        if where is None:
            return None
        buffer, name = self.fresh("buf"), self.fresh()
        self.emit(f"{buffer} = buffer init({a.name}) : buffer<{a.dtype}, [{self.col_extent}]>")
        self.emit(f"write {buffer}, {b.name} index(%cols) mask({where.name})")
        self.emit(f"{name} = read {buffer} index(%cols) : {self.ty(a.dtype)}")
        return self.add(name, a.dtype)

    def matmul(self) -> Value | None:
        """`top`: the values against their own reshape ([M, N] x [N, M], the reshape legal for
        any extents) reduced back to [M]; `rows`: an outer product reduced back to [N]."""
        a = self.pick(lambda v: v.dtype in ACCUMULATORS and v.dtype in INTS)
        if a is None or self.form == "elems":
            return None
        acc = self.rng.choice(ACCUMULATORS[a.dtype])
        name, total = self.fresh(), self.fresh()
        if self.form == "rows":
            self.emit(f"{name} = outer {a.name}, {a.name} : tensor<{a.dtype}, [{self.col_extent}, {self.col_extent}]>")
            self.emit(f"{total} = reduce {name} {{axes = [0], kind = max}} : {self.ty(a.dtype)}")
            return self.add(total, a.dtype)
        flipped = self.fresh()
        self.emit(f"{flipped} = reshape {a.name} : tensor<{a.dtype}, [{self.col_extent}, %M]>")
        self.emit(f"{name} = matmul {a.name}, {flipped} {{acc = {acc}}} : tensor<{acc}, [%M, %M]>")
        self.emit(f"{total} = reduce {name} {{axes = [1], kind = max}} : tensor<{acc}, [%M]>")
        return self.back(total, acc, 1, True)

    def trip_loop(self) -> Value | None:
        """A loop whose trip count is a runtime scalar (0 to 3), carrying an integer value."""
        a = self.pick(lambda v: v.dtype in INTS)
        if a is None:
            return None
        param = f"x{len(self.inputs)}"
        self.params.append(f"%{param}: index")
        self.inputs[param] = np.int64(self.rng.randrange(4))
        lb, step = self.constant("index", 0), self.constant("index", 1)
        name, k, carried, widened, nxt = self.fresh(), self.fresh("it"), self.fresh("c"), self.fresh(), self.fresh()
        self.emit(f"{name} = loop {lb}, %{param}, {step} iter({a.name}) : {self.ty(a.dtype)} {{")
        self.emit(f"^step({k}: index, {carried}: {self.ty(a.dtype)}):")
        self.emit(f"  {widened} = cast {k} : {a.dtype}")
        spread = widened
        if self.shape != "[]":
            spread = self.fresh()
            self.emit(f"  {spread} = broadcast {widened} : {self.ty(a.dtype)}")
        self.emit(f"  {nxt} = xor {carried}, {spread} : {self.ty(a.dtype)}")
        self.emit(f"  yield {nxt}")
        self.emit("}")
        return self.add(name, a.dtype)

    # ---- control --------------------------------------------------------------------------
    def loop(self) -> Value | None:
        """A counted loop carrying a value through a few integer or float steps."""
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool")
        if a is None:
            return None
        b = self.pick(lambda v: v.dtype == a.dtype) or a
        trips = self.rng.choice([0, 1, 3])
        lb, ub, step = self.constant("index", 0), self.constant("index", trips), self.constant("index", 1)
        op = self.rng.choice(self.unguarded(a.dtype))
        name, k, carried, nxt = self.fresh(), self.fresh("it"), self.fresh("c"), self.fresh()
        self.emit(f"{name} = loop {lb}, {ub}, {step} iter({a.name}) : {self.ty(a.dtype)} {{")
        self.emit(f"^step({k}: index, {carried}: {self.ty(a.dtype)}):")
        self.emit(f"  {nxt} = {op} {carried}, {b.name} : {self.ty(a.dtype)}")
        self.emit(f"  yield {nxt}")
        self.emit("}")
        return self.add(name, a.dtype)

    def branch(self) -> Value | None:
        """An `if` on a scalar condition (the kernel's runtime flag) choosing between two values."""
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        b = self.pick(lambda v: v.dtype == a.dtype) or a
        name = self.fresh()
        self.emit(f"{name} = if %flag : {self.ty(a.dtype)} {{")
        self.emit("^then:")
        self.emit(f"  yield {a.name}")
        self.emit("} {")
        self.emit("^else:")
        self.emit(f"  yield {b.name}")
        self.emit("}")
        return self.add(name, a.dtype)

    # ---- addressing: neighbours, gathers, masks ----------------------------------------
    def column(self) -> str:
        """The column coordinate of the pool's shape (an index scalar in `elems`)."""
        return {"rows": "%cols", "top": "%c", "elems": "%j"}[self.form]

    def index_splat(self, value: int | str) -> str:
        scalar = self.constant("index", value) if isinstance(value, int) else value
        if self.shape == "[]":
            return scalar
        name = self.fresh("s")
        self.emit(f"{name} = broadcast {scalar} : {self.ty('index')}")
        return name

    def neighbour_read(self) -> Value:
        """A read of the column `d` to the right, masked to the row, with a fill."""
        dtype = self.rng.choice(INTS + FLOATS + STORED_ONLY + ["bool"])
        param = f"x{len(self.inputs)}"
        self.params.append(f"%{param}: view<{dtype}, [%M, {self.col_extent}], in>")
        self.inputs[param] = input_array(dtype, (self.rows, self.cols), self.rng)
        shifted, inside, name = self.fresh(), self.fresh(), self.fresh()
        self.emit(f"{shifted} = add {self.column()}, {self.index_splat(self.rng.randint(1, 3))} : {self.ty('index')}")
        self.emit(f"{inside} = lt {shifted}, {self.index_splat(self.extent_value())} : {self.ty('bool')}")
        fill = self.constant(dtype, "true" if dtype == "bool" else 1)
        row = {"rows": "%i", "top": "%r", "elems": "%i"}[self.form]
        self.emit(f"{name} = read %{param} index({row}, {shifted}) mask({inside}) fill({fill}) : {self.ty(dtype)}")
        return self.add(name, dtype)

    def extent_value(self) -> str:
        return "%N" if self.col_extent == "%N" else self.constant("index", self.cols)

    def gather(self) -> Value | None:
        """A read at a data-dependent column: an integer of the pool, modulo the row length."""
        a = self.pick(lambda v: v.dtype in INTS)
        if a is None or self.cols == 0:
            return None
        dtype = self.rng.choice(INTS + FLOATS)
        param = f"x{len(self.inputs)}"
        self.params.append(f"%{param}: view<{dtype}, [%M, {self.col_extent}], in>")
        self.inputs[param] = input_array(dtype, (self.rows, self.cols), self.rng)
        wide, column, name = self.fresh(), self.fresh(), self.fresh()
        self.emit(f"{wide} = cast {a.name} : {self.ty('index')}")
        self.emit(f"{column} = mod {wide}, {self.index_splat(self.extent_value())} : {self.ty('index')}")
        row = {"rows": "%i", "top": "%r", "elems": "%i"}[self.form]
        self.emit(f"{name} = read %{param} index({row}, {column}) : {self.ty(dtype)}")
        return self.add(name, dtype)

    def join_fold(self) -> Value | None:
        """join two values into [..., 2], reshape to [2, ...] and reduce the new axis."""
        if self.form != "rows":
            return None
        a = self.pick(lambda v: self.computable(v) and v.dtype != "bool")
        if a is None:
            return None
        b = self.pick(lambda v: v.dtype == a.dtype) or a
        pair, flipped, name = self.fresh(), self.fresh(), self.fresh()
        self.emit(f"{pair} = join {a.name}, {b.name} : tensor<{a.dtype}, [{self.col_extent}, 2]>")
        self.emit(f"{flipped} = reshape {pair} : tensor<{a.dtype}, [2, {self.col_extent}]>")
        kind = self.rng.choice(["max", "min"])
        self.emit(f"{name} = reduce {flipped} {{axes = [0], kind = {kind}}} : {self.ty(a.dtype)}")
        return self.add(name, a.dtype)

    def contract(self) -> Value | None:
        """A dot of two rows (`rows`) or a batched row dot (`top`), with an explicit accumulator."""
        if self.rank == 0:
            return None
        a = self.pick(lambda v: v.dtype in ACCUMULATORS)
        if a is None:
            return None
        b = self.pick(lambda v: v.dtype == a.dtype) or a
        acc = self.rng.choice(ACCUMULATORS[a.dtype])
        name = self.fresh()
        if self.form == "rows":
            self.emit(f"{name} = dot {a.name}, {b.name} {{acc = {acc}}} : {acc}")
        else:
            self.emit(f"{name} = contract {a.name}, {b.name} {{acc = {acc}, lhs_batch = [0], lhs_contract = [1], "
                      f"rhs_batch = [0], rhs_contract = [1]}} : tensor<{acc}, [%M]>")
        return self.back(name, acc, 1 if self.form == "top" else 0, exact=not is_float(acc))

    def region_scan(self) -> Value | None:
        """A running sum by slices: summarize sums a slice, emit adds the incoming state to the
        slice's own inclusive scan."""
        if self.form != "rows":
            return None
        a = self.pick(lambda v: v.dtype in ("i32", "i64", "u32", "u64", "f32", "f64"))
        if a is None:
            return None
        identity = 0.0 if is_float(a.dtype) else 0
        init = self.constant(a.dtype, identity)
        length, pos, xs, part = self.fresh("len"), self.fresh("pos"), self.fresh("xs"), self.fresh("p")
        left, right, merged = self.fresh("l"), self.fresh("r"), self.fresh("m")
        elen, epos, exs, state = self.fresh("len"), self.fresh("pos"), self.fresh("xs"), self.fresh("st")
        local, spread, out = self.fresh("p"), self.fresh("p"), self.fresh("p")
        final, name = self.fresh(), self.fresh()
        self.emit(f"{final}, {name} = region_scan {a.name} init({init}) {{axis = 0}} : {a.dtype}, {self.ty(a.dtype)} {{")
        self.emit(f"^summarize({length}: index, {pos}: tensor<index, [{length}]>, {xs}: tensor<{a.dtype}, [{length}]>):")
        self.emit(f"  {part} = reduce {xs} {{axes = [0], kind = sum}} : {a.dtype}")
        self.emit(f"  yield {part}")
        self.emit("} {")
        self.emit(f"^combine({left}: {a.dtype}, {right}: {a.dtype}):")
        self.emit(f"  {merged} = add {left}, {right} : {a.dtype}")
        self.emit(f"  yield {merged}")
        self.emit("} {")
        self.emit(f"^emit({elen}: index, {epos}: tensor<index, [{elen}]>, {exs}: tensor<{a.dtype}, [{elen}]>, "
                  f"{state}: {a.dtype}):")
        self.emit(f"  {local} = scan {exs} {{axis = 0, kind = sum}} : tensor<{a.dtype}, [{elen}]>")
        self.emit(f"  {spread} = broadcast {state} : tensor<{a.dtype}, [{elen}]>")
        self.emit(f"  {out} = add {spread}, {local} : tensor<{a.dtype}, [{elen}]>")
        self.emit(f"  yield {out}")
        self.emit("}")
        exact = not is_float(a.dtype)
        self.back(final, a.dtype, 0, exact)
        return self.add(name, a.dtype, exact)

    # ---- effects: scatter_reduce, histogram, atomics -----------------------------------
    def scatter(self) -> Value | None:
        """scatter_reduce of a value into BINS slots of an inout view at data-dependent slots."""
        a = self.pick(lambda v: v.dtype in ATOMIC_TYPES)
        key = self.pick(lambda v: v.dtype in INTS)
        if a is None or key is None:
            return None
        kind = self.rng.choice(["add", "max", "min"] + (LOGIC if a.dtype in INTS else []))
        slot = self.slot_of(key)
        param = self.accumulator_view(a.dtype)
        self.emit(f"scatter_reduce %{param}, {a.name} index({slot}) {{kind = {kind}}}")
        self.outputs[param] = "sum" if is_float(a.dtype) and kind == "add" else "bits"
        return None

    def slot_of(self, key: Value) -> str:
        wide, slot = self.fresh(), self.fresh()
        self.emit(f"{wide} = cast {key.name} : {self.ty('index')}")
        self.emit(f"{slot} = mod {wide}, {self.index_splat(BINS)} : {self.ty('index')}")
        return slot

    def accumulator_view(self, dtype: str) -> str:
        param = f"y{len(self.outputs)}"
        self.params.append(f"%{param}: view<{dtype}, [{BINS}], inout>")
        self.inputs[param] = input_array(dtype, (1, BINS), self.rng).reshape(BINS)
        self.outputs[param] = "bits"
        return param

    def histogram(self) -> Value | None:
        key = self.pick(lambda v: v.dtype in INTS)
        if key is None or self.rank == 0:
            return None
        slot, valid, bins, counts = self.slot_of(key), self.pick(lambda v: v.dtype == "bool"), self.fresh(), self.fresh()
        dtype = self.rng.choice(["i32", "u32", "i64"])
        guard = f" valid({valid.name})" if valid is not None else ""
        self.emit(f"{counts} = histogram {slot}{guard} : tensor<{dtype}, [{BINS}]>")
        self.emit(f"{bins} = iota : tensor<index, [{BINS}]>")
        param = self.accumulator_view(dtype)
        self.emit(f"scatter_reduce %{param}, {counts} index({bins}) {{kind = add}}")
        return None

    def atomic(self) -> Value | None:
        """atomic_rmw of a reduced value into one slot (the old values are not observed)."""
        a = self.pick(lambda v: v.dtype in ATOMIC_TYPES)
        if a is None:
            return None
        kind = self.rng.choice(["add", "max", "min"] + (LOGIC if a.dtype in INTS else []))
        zero, old = self.constant("index", self.rng.randrange(BINS)), self.fresh()
        param = self.accumulator_view(a.dtype)
        self.emit(f"{old} = atomic_rmw %{param}, {a.name} index({zero if self.rank == 0 else self.index_splat(zero)}) "
                  f"{{kind = {kind}, order = {self.rng.choice(['relaxed', 'acq_rel'])}}} : {self.ty(a.dtype)}")
        self.outputs[param] = "sum" if is_float(a.dtype) and kind == "add" else "bits"
        return None

    def reversed_store(self) -> Value | None:
        """A store of a value at the mirrored column: `unique_store` where the verifier can prove
        the mapping injective (a static row length), a plain `write` otherwise."""
        a = self.pick(lambda v: True)
        if a is None or self.form == "elems":
            return None
        param = f"y{len(self.outputs)}"
        self.params.append(f"%{param}: view<{a.dtype}, [%M, {self.col_extent}], out>")
        last, mirrored = self.fresh(), self.fresh()
        self.emit(f"{last} = sub {self.extent_value()}, {self.constant('index', 1)} : index")
        self.emit(f"{mirrored} = sub {self.index_splat(last)}, {self.column()} : {self.ty('index')}")
        row = {"rows": "%i", "top": "%r"}[self.form]
        store = "unique_store" if self.col_extent != "%N" else "write"
        self.emit(f"{store} %{param}, {a.name} index({row}, {mirrored})")
        self.outputs[param] = a.bound
        return None

    def masked_write(self) -> Value | None:
        """A write where a bool value of the pool holds, into an inout view (the rest keeps
        its initial contents)."""
        a = self.pick(lambda v: v.dtype != "bool") or self.pick()
        where = self.pick(lambda v: v.dtype == "bool")
        if a is None or where is None:
            return None
        param = f"y{len(self.outputs)}"
        self.params.append(f"%{param}: view<{a.dtype}, [%M, {self.col_extent}], inout>")
        self.inputs[param] = input_array(a.dtype, (self.rows, self.cols), self.rng)
        self.emit(f"write %{param}, {a.name} index({self.index}) mask({where.name})")
        self.outputs[param] = a.bound
        return None

    def masked_read(self) -> Value | None:
        """A read where a bool value of the pool holds, a fill elsewhere."""
        where = self.pick(lambda v: v.dtype == "bool")
        if where is None:
            return None
        dtype = self.rng.choice(INTS + FLOATS + STORED_ONLY)
        param = f"x{len(self.inputs)}"
        self.params.append(f"%{param}: view<{dtype}, [%M, {self.col_extent}], in>")
        self.inputs[param] = input_array(dtype, (self.rows, self.cols), self.rng)
        name = self.fresh()
        fill = self.constant(dtype, self.rng.choice([0, 1, 2]))
        self.emit(f"{name} = read %{param} index({self.index}) mask({where.name}) fill({fill}) : {self.ty(dtype)}")
        return self.add(name, dtype)

    # ---- outputs --------------------------------------------------------------------------
    def write(self, value: Value) -> None:
        param = f"y{len(self.outputs)}"
        self.params.append(f"%{param}: view<{value.dtype}, [%M, {self.col_extent}], out>")
        self.emit(f"write %{param}, {value.name} index({self.index})")
        self.outputs[param] = value.bound

    def text(self) -> str:
        head = f"kernel @k({', '.join([*self.params, '%flag: bool'])}) {{"
        if self.form == "rows":
            opening = ["  parallel %M {", "  ^row(%i: index):", f"    %cols = iota : tensor<index, [{self.col_extent}]>"]
            closing = ["  }"]
        elif self.nested:
            opening = ["  parallel %M {", "  ^row(%i: index):", f"    parallel {self.grid_cols()} {{",
                       "    ^col(%j: index):"]
            closing = ["    }", "  }"]
            self.body = ["  " + line for line in self.body]
        elif self.form == "elems":
            opening = [f"  parallel %M, {self.grid_cols()} {{", "  ^elem(%i: index, %j: index):"]
            closing = ["  }"]
        else:
            opening = [f"  %r = iota {{axis = 0}} : tensor<index, [%M, {self.col_extent}]>",
                       f"  %c = iota {{axis = 1}} : tensor<index, [%M, {self.col_extent}]>"]
            closing = []
        return "\n".join([*self.helpers, head, *self.prologue, *opening, *self.body, *closing, "}", ""])

    def grid_cols(self) -> str:
        if self.col_extent != "%N":
            return self.constant("index", self.cols)
        return "%N"


def int_limits(dtype: str) -> tuple[int, int]:
    info = np.iinfo(np_dtype(dtype))
    return int(info.min), int(info.max)


def input_array(dtype: str, shape: tuple[int, int], rng: random.Random) -> np.ndarray:
    """Special values of `dtype` and random ones, shuffled into `shape`; sometimes a strided
    view (every other column, reversed columns or rows, a transposed array) rather than a
    contiguous array."""
    generator = np.random.default_rng(rng.randrange(2 ** 32))
    layout = rng.choice(["contiguous"] * 4 + ["every_other", "reversed", "transposed"])
    wide = (shape[0], shape[1] * 2) if layout == "every_other" else shape
    count = wide[0] * wide[1]
    pool = special_values(dtype, generator, max(count, 8))
    array = generator.choice(pool, size=count).reshape(wide)
    if layout == "every_other":
        return array[:, ::2]
    if layout == "reversed":
        return array[::-1, ::-1]
    if layout == "transposed":
        return np.ascontiguousarray(array.T).T
    return array


BUILDERS = ("binary", "binary", "unary", "compare", "logic", "classify", "select", "convert", "convert",
            "reduce", "scan", "arg_reduce", "generic_reduce", "region_fold", "loop", "branch", "neighbour_read",
            "gather", "join_fold", "contract", "region_scan", "scatter", "histogram", "atomic", "reversed_store",
            "arg_pair", "call", "scalar_param", "random", "decode", "approximate", "scratch", "matmul",
            "trip_loop", "masked_write", "masked_read")


def generate(rng: random.Random, max_ops: int = 16) -> Program:
    form = rng.choice(["rows", "rows", "top", "elems", "nested"])
    rows, cols = rng.choice(EXTENTS), rng.choice(EXTENTS)
    if rng.random() < 0.15:            # a long row (segmented and multi-thread paths), few of them
        rows, cols = rng.choice([1, 2, 3]), rng.choice(LONG_EXTENTS)
    elif rng.random() < 0.1:           # many short rows (the grid and thread-pool paths)
        rows, cols = rng.choice([600, 2049]), rng.choice([1, 3, 8])
    builder = KernelBuilder(rng, form, rows, cols, static_cols=rng.random() < 0.3)
    for _ in range(rng.randint(1, 3)):
        builder.read_input()
    written = []
    for _ in range(rng.randint(1, max_ops)):
        made = getattr(builder, rng.choice(BUILDERS))()
        if made is not None and not made.exact:
            written.append(made)
    for value in written + rng.sample(builder.pool, min(len(builder.pool), rng.randint(1, 2))):
        builder.write(value)
    inputs = dict(builder.inputs, flag=np.bool_(rng.random() < 0.5))
    return Program(builder.text(), inputs, builder.outputs, form)
