"""The evaluator: an environment of SSA values and the registry of op implementations.

SSA names are unique within a kernel or helper, so one flat dict per invocation holds every
value; a region binds its arguments into the same dict each time it runs. Op code lives in
one module per op family, named like the family's module in `intentc.ir.ops`, and registers
itself with `@IMPLS.register(name, ...)`; an op whose definition is `multi_result` returns a
list of results.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.nodes import Helper, Module, Op, Region
from ..ir.optable import ops_where
from ..ir.registry import Registry
from ..ir.types import TensorType
from ..ir import errors
from .errors import InterpError
from .races import RaceTracker
from .values import np_dtype

Impl = Callable[["Machine", Op], object]


# The interpreter runs every op but region terminators, which `run_ops` handles.
IMPLS: Registry[Impl] = Registry("interpreter", "intentc.interp", exempt=lambda op: op.terminator)
MULTI_RESULT = ops_where(lambda op: op.multi_result)
# Element-wise ops also run on values with extra leading (batch) axes: regions made only of
# these are evaluated once for many combines.
BATCHABLE = ops_where(lambda op: op.elementwise or op.terminator)


class Machine:
    def __init__(self, module: Module, file: str = "<input>", source: str | None = None, seed: int = 0):
        self.module = module
        self.file = file
        self.source = source
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.env: dict[str, object] = {}
        self.batched = 0          # >0 while a region runs on batched values
        self.iterations: list[tuple[str, tuple[int, ...]]] = []
        self.races = RaceTracker()
        self._batchable_cache: dict[int, bool] = {}

    # ---- values --------------------------------------------------------------------
    def value(self, name: str):
        return self.env[name]

    def operands(self, op: Op) -> list:
        env = self.env
        return [env[name] for name in op.operands]

    def group(self, op: Op, key: str) -> list | None:
        names = op.group(key)
        return None if names is None else [self.env[n] for n in names]

    def extent(self, extent) -> int:
        if isinstance(extent, int):
            return extent
        value = int(self.env[extent])
        if value < 0:
            raise InterpError(errors.NEGATIVE_EXTENT, f"extent %{extent} is negative ({value})")
        return value

    def shape(self, type_) -> tuple[int, ...]:
        return tuple(self.extent(e) for e in type_.shape)

    def result_shape(self, op: Op, index: int = 0) -> tuple[int, ...]:
        return self.shape(op.result_types[index])

    def result_dtype(self, op: Op, index: int = 0) -> str:
        return op.result_types[index].dtype

    # ---- evaluation ----------------------------------------------------------------
    def run_ops(self, ops) -> list | None:
        """Run a block; return the yielded values, or None when it ends without `yield`."""
        for op in ops:
            if op.name == "yield":
                return [self.env[name] for name in op.operands]
            self.run_op(op)
        return None

    def run_op(self, op: Op) -> None:
        impl = IMPLS.get(op.name) if op.registered else None
        if impl is None:
            raise self.error(op, errors.UNSUPPORTED, f"the interpreter cannot run op `{op.name}`")
        try:
            out = impl(self, op)
        except InterpError as problem:
            raise self.error(op, problem.code, problem.message, problem.hint) from None
        results = op.results
        if not results:
            return
        if op.name in MULTI_RESULT:
            values = list(out)
        else:
            values = [out]
        if len(values) != len(results):
            raise self.error(op, errors.RESULT_TYPE,
                             f"op produced {len(values)} results but names {len(results)}")
        for name, value, type_ in zip(results, values, op.result_types):
            if not self.batched and isinstance(type_, TensorType):
                value = self._conform(op, value, type_)
            self.env[name] = value

    def _conform(self, op: Op, value, type_: TensorType) -> np.ndarray:
        if not isinstance(value, np.ndarray):
            value = np.asarray(value)
        expected_shape = self.shape(type_)
        if value.shape != expected_shape or value.dtype != np_dtype(type_.dtype):
            raise self.error(op, errors.RESULT_TYPE,
                             f"op produced {value.dtype}{list(value.shape)} but its written type is "
                             f"{type_.dtype}{list(expected_shape)}")
        return value

    def run_region(self, region: Region, args) -> list | None:
        env = self.env
        for param, value in zip(region.args, args):
            env[param.name] = value
        return self.run_ops(region.ops)

    def call_helper(self, helper: Helper, args) -> list:
        saved = self.env
        self.env = {p.name: a for p, a in zip(helper.params, args)}
        # Extent names in the helper's parameter types are bound per call, by the arguments'
        # shapes (the verifier binds them the same way, verify/rules/control.py `_bind`),
        # counted from the right: a batched region's values carry leading iteration axes.
        for param, arg in zip(helper.params, args):
            shape = getattr(param.type, "shape", ())
            for axis, extent in enumerate(shape):
                if isinstance(extent, str) and extent not in self.env:
                    self.env[extent] = np.int64(np.shape(arg)[axis - len(shape)])
        try:
            return self.run_ops(helper.body) or []
        finally:
            self.env = saved

    # ---- batched regions ------------------------------------------------------------
    def batchable(self, region: Region) -> bool:
        """Whether every op of the region (and of helpers it calls) works element by element."""
        key = id(region)
        if key not in self._batchable_cache:
            self._batchable_cache[key] = self._ops_batchable(region.ops, set())
        return self._batchable_cache[key]

    def _ops_batchable(self, ops, seen: set[str]) -> bool:
        for op in ops:
            if op.name == "call":
                callee = op.attributes["callee"].name
                helper = self.module.find(callee)
                if callee in seen or not isinstance(helper, Helper):
                    return False
                if not self._ops_batchable(helper.body, seen | {callee}):
                    return False
            elif op.name not in BATCHABLE or op.regions:
                return False
        return True

    def run_region_batched(self, region: Region, args) -> list:
        self.batched += 1
        try:
            return self.run_region(region, args)
        finally:
            self.batched -= 1

    # ---- diagnostics ----------------------------------------------------------------
    def error(self, op: Op, code: str, message: str, hint: str = "") -> DiagnosticError:
        line, col = (op.loc.line, op.loc.col) if op.loc else (1, 1)
        where = "".join(f" in {label} iteration {list(c)}" for label, c in self.iterations)
        text = f"`{op.name}`: {message}{where}"
        return DiagnosticError([Diagnostic(code, text, line, col, self.file, hint)], self.source)
