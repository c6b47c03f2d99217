"""Host values → the kernel's argument slots (see `intentc.codegen.llvm.abi`).

`bind_copied` reuses the interpreter's launch binding (same checks, same diagnostics, inputs
copied so aliasing views stay aliased and the caller's arrays are untouched, outputs
allocated) and returns the outputs as the interpreter does. `bind_in_place` checks the
same way but points the kernel at the caller's memory — numpy arrays, or any array
`interop.array_ref` reads (torch, CuPy, DLPack), host or GPU — so out/inout views are
written where they lie: no copies, for launching many times.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..interp.aliasing import check_writable_layouts
from ..interp.launch import Launch, View, bind
from ..interp.memory import ViewValue
from ..interp.values import EnumValue, np_dtype
from ..ir import errors
from ..ir.nodes import member_ordinal
from ..ir.types import ConstexprType, ViewType
from ..options import Specialization
from ..driver.specialization import VIEW_FACTS
from . import view_facts
from .interop import ArrayRef, array_ref

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


@dataclass(frozen=True)
class DirectView:
    """A view bound in place: the caller's allocation (as the bytes the view spans), in elements."""
    address: int
    offset: int
    size: int
    strides: tuple[int, ...]
    shape: tuple[int, ...]

    def span(self, itemsize: int) -> tuple[int, int]:
        """The bytes bound: those the view touches (an explicit `View`: its whole base)."""
        return self.address, self.address + self.size * itemsize


def _view_words(view: ViewValue | DirectView) -> list[int]:
    if isinstance(view, DirectView):
        return [view.address, view.offset, view.size, *view.strides, *view.shape]
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
            keep.append(getattr(value, "base", None))
        elif entry.kind == "constexpr":
            words.append(_constexpr_word(launch, param, value))
        else:
            words.append(_scalar_word(value, entry.dtype))
    array = np.array([w if w < 2 ** 63 else w - 2 ** 64 for w in words] or [0], dtype=np.int64)
    return array, keep


def bind_copied(launch: Launch, slots, inputs: dict, constexprs: dict, facts: Specialization | None = None):
    env = bind(launch, dict(inputs), dict(constexprs))
    for param in launch.kernel.params:
        if isinstance(param.type, ViewType) and facts is not None:   # the copies keep the layouts
            view = env[param.name]
            _check_facts(launch, param, DirectView(0, view.offset, view.base.size, view.strides, view.shape), facts)
    return env, *pack(launch, slots, env)


def _direct_view(launch: Launch, param, value, device: str) -> DirectView:
    if isinstance(value, View):
        base = np.asarray(value.base).reshape(-1)
        launch.check_view(param, tuple(value.shape), base.dtype)
        return DirectView((base if base.size else _EMPTY).ctypes.data, int(value.offset), base.size,
                          tuple(int(s) for s in value.strides), tuple(value.shape))
    try:
        ref = array_ref(value)
    except TypeError as problem:
        raise launch.fail(errors.LAUNCH_LAYOUT, f"%{param.name}: {problem}", param) from None
    launch.check_view(param, ref.shape, ref.dtype)
    if ref.device != device:
        raise launch.fail(errors.LAUNCH_LAYOUT, f"%{param.name} is in {ref.device} memory; the kernel runs on "
                          f"{device}", param, f"pass a {device} array (nothing is copied between devices)")
    return _element_view(launch, param, ref)


def _element_view(launch: Launch, param, ref: ArrayRef) -> DirectView:
    view = _element_layout(ref)
    if view is None:
        raise launch.fail(errors.LAUNCH_LAYOUT, f"%{param.name}: strides {ref.strides} are not whole elements",
                          param)
    return view


def _element_layout(ref: ArrayRef) -> DirectView | None:
    """The array as a view of the bytes it spans, in elements; None where its element 0 or
    strides are not whole elements from its first byte."""
    size = ref.dtype.itemsize
    low, high = ref.span()
    if (ref.address - low) % size or any(s % size for s in ref.strides):
        return None
    address = low if high > low else _EMPTY.ctypes.data
    return DirectView(address, (ref.address - low) // size, (high - low) // size,
                      tuple(s // size for s in ref.strides), ref.shape)


def _layout_of(value) -> DirectView | None:
    """A call's argument for a view as the binding will bind it (`_direct_view`, unchecked);
    None where it is no array the binding takes (the binding then reports it)."""
    if isinstance(value, View):
        base = np.asarray(value.base).reshape(-1)
        return DirectView((base if base.size else _EMPTY).ctypes.data, int(value.offset), base.size,
                          tuple(int(s) for s in value.strides), tuple(value.shape))
    try:
        return _element_layout(array_ref(value))
    except (TypeError, ValueError):
        return None


def call_facts(kernel, arrays: dict) -> dict[str, tuple[str, ...]]:
    """The layout facts each view of a call holds (`view_facts.holds`), as the fields of a
    `Specialization` (fact -> view names, sorted): what a compile for this call may assume."""
    facts: dict[str, list[str]] = {fact: [] for fact in VIEW_FACTS}
    for param in kernel.params:
        if isinstance(param.type, ViewType) and param.name in arrays:
            view = _layout_of(arrays[param.name])
            if view is not None:
                for fact in view_facts.holds(view, np_dtype(param.type.dtype).itemsize):
                    facts[fact].append(param.name)
    return {fact: tuple(sorted(names)) for fact, names in facts.items()}


def bind_in_place(launch: Launch, slots, arrays: dict, constexprs: dict, device: str = "cpu",
                  facts: Specialization | None = None):
    """Bind the caller's arrays directly (every view must be given, outputs included); each
    must live on `device` and hold the layout `facts` the kernel was compiled for."""
    env: dict = {}
    kernel = launch.kernel
    names = {p.name for p in kernel.params}
    for name in list(arrays) + list(constexprs):
        if name not in names:
            raise launch.fail(errors.LAUNCH_UNKNOWN_INPUT, f"has no parameter %{name}",
                              hint="parameters: " + ", ".join(f"%{p.name}" for p in kernel.params))
    for param in kernel.params:
        type_ = param.type
        if isinstance(type_, ConstexprType):
            if param.name not in constexprs:
                raise launch.fail(errors.LAUNCH_CONSTEXPR, f"constexpr %{param.name} needs a value", param,
                                  f"pass -D {param.name}=VALUE")
            env[param.name] = launch.constexpr(param, constexprs[param.name])
        elif isinstance(type_, ViewType):
            if param.name not in arrays:
                raise launch.fail(errors.LAUNCH_MISSING_INPUT, f"view %{param.name} ({type_.direction}) needs an "
                                  "array", param)
            env[param.name] = view = _direct_view(launch, param, arrays[param.name], device)
            _check_facts(launch, param, view, facts or Specialization())
        elif param.name not in arrays:
            raise launch.fail(errors.LAUNCH_MISSING_INPUT, f"scalar %{param.name} needs a value", param)
        else:
            env[param.name] = launch.scalar(param, arrays[param.name], type_.dtype)
    for name, (value, source) in launch.extents.items():
        if name in env and not isinstance(env[name], DirectView) and int(np.asarray(env[name])) != value:
            raise launch.fail(errors.LAUNCH_EXTENT, f"extent %{name} is {value} (from %{source}) but the "
                              f"parameter %{name} is {int(np.asarray(env[name]))}")
    launch.check_noalias({p.name: env[p.name].span(np_dtype(p.type.dtype).itemsize) for p in kernel.params
                          if isinstance(p.type, ViewType)})
    check_writable_layouts(launch, env)
    return env, *pack(launch, slots, env)


def _check_facts(launch: Launch, param, view: DirectView, facts: Specialization) -> None:
    """The layout facts a kernel was specialized to are trusted by its code: a view that
    breaks one would be read wrongly, so the launch refuses it (R0108)."""
    itemsize = np_dtype(param.type.dtype).itemsize
    broken = []
    if param.name in facts.unit_stride and not view_facts.unit_stride(view):
        broken.append(f"unit innermost stride (got stride {view.strides[-1]})")
    if param.name in facts.aligned16 and not view_facts.aligned16(view, itemsize):
        broken.append("16-byte alignment")
    if param.name in facts.contiguous and not view_facts.dense(view):
        broken.append(f"dense row-major layout (got strides {list(view.strides)})")
    elif param.name in facts.contiguous and not view_facts.in_allocation(view):
        broken.append(f"a view inside its allocation (offset {view.offset}, {view.size} elements)")
    if broken:
        raise launch.fail(errors.LAUNCH_LAYOUT, f"%{param.name} was compiled for " + " and ".join(broken), param,
                          "pass an array with that layout, or load the kernel without the fact")
