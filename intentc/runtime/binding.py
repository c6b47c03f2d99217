"""Host values → the kernel's argument slots (see `intentc.codegen.llvm.abi`).

`bind_copied` reuses the interpreter's launch binding (same checks, same diagnostics, inputs
copied so aliasing views stay aliased and the caller's arrays are untouched, outputs
allocated) and returns the outputs as the interpreter does. `bind_in_place` checks the
same way but points the kernel at the caller's arrays, so out/inout views are written where
they lie: no copies, for launching many times.
"""
from __future__ import annotations

import numpy as np

from ..interp.aliasing import check_noalias, check_writable_layouts
from ..interp.launch import Launch, View, _span, _start, bind
from ..interp.memory import ViewValue
from ..interp.values import EnumValue, np_dtype
from ..ir import errors
from ..ir.nodes import member_ordinal
from ..ir.types import ConstexprType, ViewType

# A readable dummy element for empty allocations, so that no pointer is ever null.
_EMPTY = np.zeros(2, dtype=np.float64)


def _scalar_word(value, dtype: str) -> int:
    array = np.asarray(value, dtype=np_dtype(dtype))
    raw = array.reshape(1).view(f"u{array.itemsize}")[0]
    return int(raw)


def _constexpr_word(launch: Launch, param, value) -> int:
    if isinstance(value, EnumValue):
        decl = launch.module.find(value.enum)
        return member_ordinal(decl, value.member)
    return _scalar_word(value, param.type.inner.dtype)


def _view_words(view: ViewValue) -> list[int]:
    base = view.base if view.base.size else _EMPTY
    return [base.ctypes.data, int(view.offset), int(view.base.size), *map(int, view.strides), *map(int, view.shape)]


def pack(launch: Launch, slots, env: dict) -> tuple[np.ndarray, list]:
    """The slot array for a bound environment, and the arrays it points into (keep alive)."""
    words: list[int] = []
    keep: list = []
    params = {p.name: p for p in launch.kernel.params}
    for entry in slots:
        value = env[entry.name]
        param = params[entry.name]
        if entry.kind == "view":
            words += _view_words(value)
            keep.append(value.base)
        elif entry.kind == "constexpr":
            words.append(_constexpr_word(launch, param, value))
        else:
            words.append(_scalar_word(value, entry.dtype))
    array = np.array([w if w < 2 ** 63 else w - 2 ** 64 for w in words] or [0], dtype=np.int64)
    return array, keep


def bind_copied(launch: Launch, slots, inputs: dict, constexprs: dict):
    env = bind(launch, dict(inputs), dict(constexprs))
    return env, *pack(launch, slots, env)


def _direct_view(launch: Launch, param, value) -> ViewValue:
    if isinstance(value, View):
        base = np.asarray(value.base).reshape(-1)
        launch.check_view(param, tuple(value.shape), base.dtype)
        return ViewValue(base, int(value.offset), tuple(int(s) for s in value.strides), tuple(value.shape),
                         param.type.dtype, param.type.direction, param.name)
    array = np.asarray(value)
    launch.check_view(param, array.shape, array.dtype)
    size = array.itemsize
    low, high = _span(array)
    if (_start(array) - low) % size or any(s % size for s in array.strides):
        raise launch.fail(errors.LAUNCH_LAYOUT, f"%{param.name}: strides {array.strides} are not whole elements",
                          param)
    flat = np.asarray(_Span(low, high - low)).view(array.dtype) if high > low else np.zeros(0, array.dtype)
    return ViewValue(flat, (_start(array) - low) // size, tuple(s // size for s in array.strides), array.shape,
                     param.type.dtype, param.type.direction, param.name)


class _Span:
    """The live bytes [low, low + n) of the caller's memory, as numpy sees them (writable)."""

    def __init__(self, low: int, n: int):
        self.__array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (low, False), "version": 3}


def bind_in_place(launch: Launch, slots, arrays: dict, constexprs: dict):
    """Bind the caller's arrays directly (every view must be given, outputs included)."""
    env: dict = {}
    kernel = launch.kernel
    names = {p.name for p in kernel.params}
    for name in list(arrays) + list(constexprs):
        if name not in names:
            raise launch.fail(errors.LAUNCH_UNKNOWN_INPUT, f"has no parameter %{name}")
    for param in kernel.params:
        type_ = param.type
        if isinstance(type_, ConstexprType):
            if param.name not in constexprs:
                raise launch.fail(errors.LAUNCH_CONSTEXPR, f"constexpr %{param.name} needs a value", param)
            env[param.name] = launch.constexpr(param, constexprs[param.name])
        elif param.name not in arrays:
            raise launch.fail(errors.LAUNCH_MISSING_INPUT, f"%{param.name} needs a value", param)
        elif isinstance(type_, ViewType):
            env[param.name] = _direct_view(launch, param, arrays[param.name])
        else:
            env[param.name] = launch.scalar(param, arrays[param.name], type_.dtype)
    for name, (value, source) in launch.extents.items():
        if name in env and not isinstance(env[name], ViewValue) and int(np.asarray(env[name])) != value:
            raise launch.fail(errors.LAUNCH_EXTENT, f"extent %{name} is {value} (from %{source}) but the "
                              f"parameter %{name} is {int(np.asarray(env[name]))}")
    check_noalias(launch, env)
    check_writable_layouts(launch, env)
    return env, *pack(launch, slots, env)
