"""Binding a kernel's parameters to host values, running it, and collecting its outputs.

A view parameter takes a numpy array of any strides (negative slicing, broadcast zero
strides, `as_strided`) or an explicit `View(base, offset, strides, shape)`. Arrays that share
memory are copied once together, so aliasing views stay aliased and the caller's arrays are
never modified. Extents are bound from the arrays: a static extent must match, a dynamic
extent name binds on first use and must match everywhere else.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..diagnostics import DiagnosticError
from ..ir.dtypes import representable
from ..ir.nodes import Kernel, Module, Param
from ..ir.types import ConstexprType, EnumType, TensorType, ViewType
from ..ir import errors
from .errors import launch_error
from .machine import Machine
from .memory import ViewValue
from .aliasing import check_writable_layouts
from .values import EnumValue, np_dtype


@dataclass(frozen=True)
class View:
    """An explicit view: flat `base`, element `offset`, element `strides`, logical `shape`."""
    base: np.ndarray
    offset: int
    strides: tuple[int, ...]
    shape: tuple[int, ...]


class Launch:
    def __init__(self, module: Module, kernel: Kernel, file: str, source: str | None,
                 fixed_extents: dict[str, int] | None = None):
        """`fixed_extents`: extents a compiled kernel was specialized to; arrays must match."""
        self.module, self.kernel, self.file, self.source = module, kernel, file, source
        # name -> (value, which parameter bound it; None: fixed at compile time)
        self.extents: dict[str, tuple[int, str | None]] = {
            name: (value, None) for name, value in (fixed_extents or {}).items()}

    def fail(self, code: str, message: str, param: Param | None = None, hint: str = "") -> DiagnosticError:
        loc = (param.loc if param is not None and param.loc else None) or self.kernel.loc
        line, col = (loc.line, loc.col) if loc else (1, 1)
        return launch_error(code, f"kernel @{self.kernel.name}: {message}", self.file, line, col, self.source, hint)

    # ---- scalars and constexprs -------------------------------------------------------------
    def scalar(self, param: Param, value, dtype: str) -> np.ndarray:
        array = self._scalar(param, value, dtype)
        fixed = self.extents.get(param.name)
        if fixed is not None and fixed[1] is None and int(array) != fixed[0]:
            raise self.fail(errors.LAUNCH_EXTENT, f"the kernel was compiled for %{param.name} = {fixed[0]}; got "
                            f"{int(array)}", param, "compile it for this value, or leave it dynamic")
        return array

    def _scalar(self, param: Param, value, dtype: str) -> np.ndarray:
        if isinstance(value, (np.ndarray, np.generic)):
            array = np.asarray(value)
            if array.shape != ():
                raise self.fail(errors.LAUNCH_RANK, f"%{param.name} is a {dtype} scalar; got shape {list(array.shape)}",
                                param, "pass a 0-d array")
            if array.dtype != np_dtype(dtype):
                raise self.fail(errors.LAUNCH_DTYPE, f"%{param.name} is {dtype}; got a {array.dtype} array", param)
            return array.copy()
        if isinstance(value, (bool, int, float)) and representable(value, dtype):
            return np.asarray(value, dtype=np_dtype(dtype))
        raise self.fail(errors.LAUNCH_DTYPE, f"%{param.name}: {value!r} is not a {dtype} value", param)

    def constexpr(self, param: Param, value):
        inner = param.type.inner
        if isinstance(inner, EnumType):
            decl = self.module.find(inner.name)
            members = [m.name for m in decl.members] if decl is not None else []
            member = value.member if isinstance(value, EnumValue) else str(value).rsplit(".", 1)[-1]
            if member not in members:
                raise self.fail(errors.LAUNCH_CONSTEXPR, f"%{param.name}: `{value}` is not a member of @{inner.name} "
                                f"({', '.join(members)})", param)
            return EnumValue(inner.name, member)
        return self.scalar(param, value, inner.dtype)

    # ---- extents --------------------------------------------------------------------------
    def bind_extent(self, param: Param, axis: int, declared, actual: int) -> None:
        if isinstance(declared, int):
            if declared != actual:
                raise self.fail(errors.LAUNCH_EXTENT, f"axis {axis} of %{param.name} must be {declared}; got {actual}",
                                param)
            return
        bound = self.extents.get(declared)
        if bound is None:
            self.extents[declared] = (actual, param.name)
        elif bound[0] != actual:
            if bound[1] is None:
                raise self.fail(errors.LAUNCH_EXTENT, f"the kernel was compiled for extent %{declared} = {bound[0]}, "
                                f"but axis {axis} of %{param.name} is {actual}", param,
                                "compile it for this extent, or leave the extent dynamic")
            raise self.fail(errors.LAUNCH_EXTENT,
                            f"extent %{declared} is {bound[0]} (from %{bound[1]}) but axis {axis} of %{param.name} "
                            f"is {actual}", param, "the same extent name means the same extent")

    # ---- views ----------------------------------------------------------------------------
    def check_view(self, param: Param, shape: tuple[int, ...], dtype: np.dtype) -> None:
        view_type: ViewType = param.type
        if dtype != np_dtype(view_type.dtype):
            raise self.fail(errors.LAUNCH_DTYPE, f"%{param.name} holds {view_type.dtype}; got a {dtype} array", param)
        if len(shape) != len(view_type.shape):
            raise self.fail(errors.LAUNCH_RANK,
                            f"%{param.name} has rank {len(view_type.shape)}; got an array of shape {list(shape)}", param)
        for axis, (declared, actual) in enumerate(zip(view_type.shape, shape)):
            self.bind_extent(param, axis, declared, actual)


    # ---- alias constraints (§8, §13) ------------------------------------------------------
    def check_noalias(self, spans: dict[str, tuple[int, int]]) -> None:
        """`noalias` is a precondition the caller must meet (§8), not a hint: the memory a
        noalias view spans ([low, high) bytes; an explicit `View`: its whole base) shares no
        byte with another view argument's."""
        params = {p.name: p for p in self.kernel.params}
        for name, (low, high) in spans.items():
            if not params[name].type.noalias:
                continue
            for other, (other_low, other_high) in spans.items():
                if other != name and low < other_high and other_low < high:
                    raise self.fail(errors.LAUNCH_NOALIAS, f"%{name} is noalias, but its memory overlaps that of "
                                    f"%{other}", params[name], "pass separate memory, or drop `noalias`")


def _span(array: np.ndarray) -> tuple[int, int]:
    """[low, high) byte addresses an array touches."""
    start = array.__array_interface__["data"][0]
    if array.size == 0:
        return start, start
    low = start + sum(min(0, (n - 1) * s) for n, s in zip(array.shape, array.strides))
    high = start + sum(max(0, (n - 1) * s) for n, s in zip(array.shape, array.strides)) + array.itemsize
    return low, high


def _base_span(base: np.ndarray) -> tuple[int, int]:
    start = _start(base)
    return start, start + base.nbytes


def _root(array: np.ndarray):
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _copy_bytes(low: int, high: int, dtype: np.dtype) -> np.ndarray:
    """A fresh flat array holding the bytes [low, high) of live numpy memory."""
    class Span:
        __array_interface__: ClassVar[dict] = {"shape": (high - low,), "typestr": "|u1", "data": (low, True), "version": 3}
    return np.array(Span(), copy=True).view(dtype)


def _start(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _element_view(base: np.ndarray, low: int, array: np.ndarray) -> ViewValue:
    size = array.itemsize
    return ViewValue(base, (_start(array) - low) // size, tuple(s // size for s in array.strides),
                     array.shape, "", "")


def _allocations(arrays: dict[str, np.ndarray]) -> dict[str, ViewValue]:
    """Copy the memory behind the arrays, one allocation per group of arrays sharing a root."""
    groups: dict[int, list[str]] = {}
    for name, array in arrays.items():
        groups.setdefault(id(_root(array)), []).append(name)
    views: dict[str, ViewValue] = {}
    for names in groups.values():
        members = [arrays[n] for n in names]
        size = members[0].itemsize
        spans = [_span(a) for a in members]
        low, high = min(s[0] for s in spans), max(s[1] for s in spans)
        aligned = all(a.dtype == members[0].dtype and (_start(a) - low) % size == 0
                      and all(s % size == 0 for s in a.strides) for a in members) and (high - low) % size == 0
        if aligned:
            base = _copy_bytes(low, high, members[0].dtype)
            for name, array in zip(names, members):
                views[name] = _element_view(base, low, array)
        else:   # views of one memory in different element types: give each its own copy
            for name, array in zip(names, members):
                views[name] = ViewValue(np.ascontiguousarray(array).reshape(-1).copy(), 0, _c_strides(array.shape),
                                        array.shape, "", "")
    return views


def _c_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


# Key prefix of an explicit View's base among the arrays grouped into allocations.
_BASE = "\0base:"


def bind(launch: Launch, inputs: dict, constexprs: dict) -> dict[str, object]:
    kernel = launch.kernel
    env: dict[str, object] = {}
    names = {p.name for p in kernel.params}
    for name in list(inputs) + list(constexprs):
        if name not in names:
            raise launch.fail(errors.LAUNCH_UNKNOWN_INPUT, f"has no parameter %{name}",
                              hint="parameters: " + ", ".join(f"%{p.name}" for p in kernel.params))
    arrays: dict[str, np.ndarray] = {}
    explicit: dict[str, View] = {}
    pending_outputs: list[Param] = []
    for param in kernel.params:
        type_ = param.type
        if isinstance(type_, ConstexprType):
            if param.name not in constexprs:
                raise launch.fail(errors.LAUNCH_CONSTEXPR, f"constexpr %{param.name} needs a value", param,
                                  f"pass -D {param.name}=VALUE")
            env[param.name] = launch.constexpr(param, constexprs[param.name])
        elif isinstance(type_, ViewType):
            value = inputs.get(param.name)
            if value is None:
                if type_.direction == "out":
                    pending_outputs.append(param)
                    continue
                raise launch.fail(errors.LAUNCH_MISSING_INPUT, f"view %{param.name} ({type_.direction}) needs an array",
                                  param)
            if isinstance(value, View):
                launch.check_view(param, tuple(value.shape), np.asarray(value.base).dtype)
                explicit[param.name] = value
            else:
                array = np.asarray(value)
                launch.check_view(param, array.shape, array.dtype)
                arrays[param.name] = array
        elif isinstance(type_, TensorType):
            if param.name not in inputs:
                raise launch.fail(errors.LAUNCH_MISSING_INPUT, f"scalar %{param.name} needs a value", param)
            if type_.shape:
                array = np.asarray(inputs[param.name])
                if array.dtype != np_dtype(type_.dtype) or array.ndim != len(type_.shape):
                    raise launch.fail(errors.LAUNCH_DTYPE, f"%{param.name} needs a {type_.dtype} tensor of rank "
                                      f"{len(type_.shape)}; got {array.dtype}{list(array.shape)}", param)
                for axis, (declared, actual) in enumerate(zip(type_.shape, array.shape)):
                    launch.bind_extent(param, axis, declared, actual)
                env[param.name] = array.copy()
            else:
                env[param.name] = launch.scalar(param, inputs[param.name], type_.dtype)
        else:
            raise launch.fail(errors.UNSUPPORTED, f"parameter %{param.name} has a type a launch cannot bind", param)
    for name, (value, source) in launch.extents.items():
        if name in env:
            if int(np.asarray(env[name])) != value:
                raise launch.fail(errors.LAUNCH_EXTENT, f"extent %{name} is {value} (from %{source}) but the "
                                  f"parameter %{name} is {int(np.asarray(env[name]))}")
        else:
            env[name] = np.asarray(value, dtype=np.int64)
    launch.check_noalias({**{name: _span(array) for name, array in arrays.items()},
                          **{name: _base_span(np.asarray(view.base)) for name, view in explicit.items()}})
    views = _allocations({**arrays, **{_BASE + name: np.asarray(view.base).reshape(-1)
                                       for name, view in explicit.items()}})
    for name, view in explicit.items():     # one copy per allocation: Views on one base alias
        base = views.pop(_BASE + name)
        views[name] = ViewValue(base.base, base.offset + int(view.offset), tuple(int(s) for s in view.strides),
                                tuple(view.shape), "", "")
    for param in pending_outputs:
        shape = []
        for declared in param.type.shape:
            if isinstance(declared, str) and declared not in env:
                raise launch.fail(errors.LAUNCH_MISSING_INPUT,
                                  f"output %{param.name} needs an array: nothing else binds its extent %{declared}", param)
            shape.append(declared if isinstance(declared, int) else int(env[declared]))
        flat = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype=np_dtype(param.type.dtype))
        views[param.name] = ViewValue(flat, 0, _c_strides(shape), tuple(shape), "", "")
    for param in kernel.params:
        if param.name in views:
            view = views[param.name]
            view.dtype, view.direction, view.name = param.type.dtype, param.type.direction, param.name
            env[param.name] = view
    check_writable_layouts(launch, env)
    return env


def run_kernel(module: Module, kernel_name: str, inputs: dict, constexprs: dict | None = None,
               seed: int = 0, file: str = "<input>", source: str | None = None) -> dict[str, np.ndarray]:
    kernel = module.find(kernel_name)
    if not isinstance(kernel, Kernel):
        kernels = [item.name for item in module.items if isinstance(item, Kernel)]
        raise launch_error(errors.LAUNCH_NO_KERNEL, f"no kernel @{kernel_name} in the module", file, 1, 1, source,
                           "kernels: " + ", ".join(f"@{k}" for k in kernels) if kernels else "the module has no kernels")
    launch = Launch(module, kernel, file, source)
    env = bind(launch, dict(inputs), dict(constexprs or {}))
    machine = Machine(module, file, source, seed)
    machine.env = env
    with np.errstate(all="ignore"):
        machine.run_ops(kernel.body)
    return {p.name: env[p.name].logical() for p in kernel.params
            if isinstance(p.type, ViewType) and p.type.direction in ("out", "inout")}
