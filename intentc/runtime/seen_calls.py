"""Recognizing a call seen before, cheaply: the launch fast path (`docs/runtime.md`).

A launch's checks (the interpreter's R0101–R0109, layout facts, R0206) and its argument
words depend on each argument's address, shape, strides, dtype and device, and on each
scalar's type and exact bits — on nothing else (and on torch's lazy negation bit, which the
binding refuses). A call is looked up in two parts:

- its key: the names in call order, each torch tensor's `data_ptr()`, and a summary of
  every other argument (a scalar's type and bits; an array's address, layout, dtype and
  device);
- for the torch tensors, a layout check: each has the Python type, dtype, device, shape,
  strides and dispatch bits (negation, conjugation) of the tensor the call was bound with.
  That is torch's own C++ tensor check (`torch._C._dynamo.guards.TensorGuards`, what
  `torch.compile` guards its compiled code with) where torch has it: one C call for all the
  tensors instead of six accessor calls a tensor; else the same facts read through the
  accessors.

A call that matches both passes the same checks and needs the same argument words as the
call that was bound and checked for it, so its prepared launch is reused as it is.
"""
from __future__ import annotations

import functools
import struct
import sys
from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from ..interp.values import EnumValue
from .interop import array_ref

_DOUBLE = struct.Struct("<d")


# Layouts remembered for one set of names and scalars (other shapes, strides, dtypes).
LAYOUTS_PER_KEY = 4


class SeenCalls:
    """Prepared launches of calls seen before, by key; an entry is used only when the call's
    tensors pass its layout check (a call with the same key and other layouts replaces it).
    Beside them, launch templates by layout (`launch_template.py`): a call with new data
    pointers but a layout seen before is launched from its template, not bound."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        # key: (its layout check's bound `check`, launch, then for the native fast path the
        # launch's plans by stream and the method that makes one)
        self._entries: dict[tuple, tuple] = {}
        # layout key: [(layout check, plans, plan maker, the template's native form, CallTemplate)], newest first
        self._layouts: dict[tuple, list] = {}

    def find(self, arguments: dict):
        """The launch remembered for a call equal to this one, or set from the template of
        a call with its layout (to launch at once); None if neither."""
        tensors: Collection = arguments.values()
        try:                            # _keys's common kind, inlined (one Python call less)
            key: tuple = (*arguments, *map(_data_ptr, tensors))
        except (TypeError, RuntimeError):
            return self._find_mixed(arguments)
        entry = self._entries.get(key)
        if entry is not None and entry[0](*tensors):
            return entry[1]
        count = len(arguments)
        return self._from_template(key, tensors, key[:count], key[count:])

    def _find_mixed(self, arguments: dict):
        key, tensors, layout_key, pointers, _ = _mixed_keys(arguments)
        if key is None or layout_key is None:
            return None
        entry = self._entries.get(key)
        if entry is not None and entry[0](*tensors):
            return entry[1]
        return self._from_template(key, tensors, layout_key, pointers)

    def _from_template(self, key: tuple, tensors: Collection, layout_key: tuple, pointers: tuple):
        """The launch set from the template of a call with this call's layout (new data
        pointers; this thread's, to launch at once, unless the template's launches are owned:
        those, with tensor maps of their own, are kept as seen calls); None if there is none
        or a pointer check fails."""
        for check, *_, template in self._layouts.get(layout_key, ()):
            if check(*tensors):
                launch = template.launch(pointers)
                if launch is not None and template.owned:
                    self._enter(key, check, launch)
                return launch
        return None

    def remember(self, arguments: dict, launch, template=None) -> None:
        """Use `launch` for calls equal to this one (bound and checked) from now on, and
        `template` (a `LaunchTemplate`) for calls with its layout."""
        key, tensors, layout_key, pointers, moving = _keys(arguments)
        if key is None or layout_key is None or not all(isinstance(t, _tensor_type()) for t in tensors):
            return
        check = (_tensor_layouts()(*tensors) if tensors else _NO_TENSORS).check
        self._enter(key, check, launch)
        if template is not None:
            layouts = self._layouts.get(layout_key)
            if layouts is None:
                if len(self._layouts) >= self.capacity:
                    self._layouts.clear()
                layouts = self._layouts[layout_key] = []
            call = template.for_call(pointers, {name: i for i, name in enumerate(moving)})
            layouts.insert(0, (check, call.plans, call.native_plan, call.native, call))
            del layouts[LAYOUTS_PER_KEY:]

    def _enter(self, key: tuple, check, launch) -> None:
        if len(self._entries) >= self.capacity:
            self._entries.clear()
        self._entries[key] = (check, launch, getattr(launch, "plans", None), getattr(launch, "native_plan", None))

    def native_state(self, outputs: tuple[str, ...], current_stream, on_failure, launch: int) -> tuple | None:
        """The state `native_launch.c`'s `fast_call` takes for these tables, or None while
        torch is not imported (its calls are the only ones it launches)."""
        tensor_type = _tensor_type()
        if not tensor_type or _data_ptr is _no_tensor:
            return None
        return (self._entries, self._layouts, tensor_type, _data_ptr, current_stream, outputs, on_failure, launch)

    def clear(self) -> None:
        self._entries.clear()
        self._layouts.clear()

    def __len__(self) -> int:
        return len(self._entries)


def call_key(arguments: dict) -> tuple[tuple | None, Collection]:
    """(key, tensors). The common call, torch tensors only: the key is the names, then their
    data pointers, and `tensors` are all the arguments. Otherwise the key is per argument its
    name, then for a torch tensor its data pointer (one int), for anything else its type and
    summary (two items, the first a type), so the item after a name says how many follow, and
    `tensors` are the torch tensors. Two different calls never share a key: the item after
    the first name is a name in a key of the first kind (unless there is one argument, where
    both kinds agree), an int or a type in the second. The key is None when an argument is of
    a kind bound afresh at every call (lists, host DLPack objects, ...)."""
    return _keys(arguments)[:2]


def _keys(arguments: dict) -> tuple[tuple | None, Collection, tuple | None, tuple, tuple]:
    """(key, tensors, layout key, pointers, their names): `call_key`'s two, the key without
    the data pointers (the same for calls that differ in them only; a torch tensor's pointer
    is None in a key of the second kind, another array's summary is its layout), and the
    arrays' data pointers (the address of element 0) with their names."""
    values = arguments.values()
    try:
        pointers = (*map(_data_ptr, values),)
    except (TypeError, RuntimeError):      # not all torch tensors; a sparse tensor has no data_ptr
        return _mixed_keys(arguments)
    names = (*arguments,)
    return names + pointers, values, names, pointers, names


def _no_tensor(value):
    raise TypeError("torch is not imported")


# torch.Tensor.data_ptr once torch is imported (as a descriptor it raises TypeError for
# anything but a tensor: one C call a value, no Python frame).
_data_ptr = _no_tensor


def _mixed_keys(arguments: dict) -> tuple[tuple | None, Collection, tuple | None, tuple, tuple]:
    global _data_ptr
    tensor_type = _tensor_type()
    if tensor_type and _data_ptr is _no_tensor:     # torch was imported since: try the first kind again
        _data_ptr = tensor_type.data_ptr
        return _keys(arguments)
    parts: list = []
    layout: list = []
    tensors: list = []
    pointers: list = []
    moving: list = []
    for name, value in arguments.items():
        if isinstance(value, tensor_type):
            try:
                pointer = value.data_ptr()
            except RuntimeError:                 # sparse: bound (and refused) every time
                return None, tensors, None, (), ()
            parts += (name, pointer)
            layout += (name, None)
            tensors.append(value)
        elif (summary := _summary(value)) is not None:      # a number or enum member: by its bits
            parts += (name, type(value), summary)
            layout += (name, type(value), summary)
            continue
        elif (array := _array_layout(value)) is not None:    # another library's GPU array: moves as a tensor
            pointer, *where = array
            parts += (name, type(value), (*where, pointer))
            layout += (name, type(value), tuple(where))
        else:
            return None, tensors, None, (), ()
        pointers.append(pointer)
        moving.append(name)
    return tuple(parts), tensors, tuple(layout), tuple(pointers), tuple(moving)


def _tensor_type():
    """torch.Tensor, or () (an isinstance that is always false) while torch is not imported."""
    torch = sys.modules.get("torch")
    return torch.Tensor if torch is not None else ()


def _summary(value):
    """What the checks of an argument other than a torch tensor depend on."""
    if isinstance(value, float):
        return _DOUBLE.pack(value)               # -0.0 == 0.0 and NaNs differ: compare bits
    if isinstance(value, int):                   # bool too: its type is in the key
        return value
    if isinstance(value, np.generic):
        return value.tobytes()
    if isinstance(value, EnumValue):             # a constexpr enum member: compared by name
        return value
    return None


def _array_layout(value) -> tuple | None:
    """(address of element 0, shape, byte strides, dtype, device) of a GPU array other than a
    torch tensor (`__cuda_array_interface__`, or DLPack: a JAX GPU array), None for anything
    else. Read at every call: its layout is what the checks depend on, the address moves. A
    host array makes no key: a 0-d one may be a scalar argument, whose value can change."""
    if not (hasattr(value, "__cuda_array_interface__") or hasattr(value, "__dlpack__")):
        return None
    try:
        ref = array_ref(value)
    except (TypeError, ValueError, BufferError):     # not an array KIR has a type for: bound (and refused)
        return None
    return None if ref.device == "cpu" else (ref.address, ref.shape, ref.strides, ref.dtype, ref.device)


@functools.cache
def _tensor_layouts():
    """The layout check of a list of torch tensors: `_tensor_layouts()(*tensors).check(*others)`.
    TensorGuards is torch's private API: it is used only if it is there and, tried once on a
    probe tensor, tells an equal layout from another; otherwise the accessors are read."""
    try:
        import torch
        from torch._C._dynamo.guards import TensorGuards
        # The tensors are positional (torch's stub leaves them out).
        guards: Callable[..., Any] = functools.partial(TensorGuards, dynamic_dims_sizes=None,
                                                       dynamic_dims_strides=None)
        probe = torch.zeros(4)
        if guards(probe).check(probe[:]) and not guards(probe).check(probe[::2]):
            return guards
    except Exception:       # any failure of the private API means: not usable here
        pass
    return AccessorLayouts


class AccessorLayouts:
    """The layout check read through the tensors' accessors (a torch without TensorGuards)."""

    def __init__(self, *tensors):
        self._layouts = [_layout(t) for t in tensors]

    def check(self, *tensors) -> bool:
        return [_layout(t) for t in tensors] == self._layouts


def _layout(tensor) -> tuple:
    return (type(tensor), tensor.shape, tensor.stride(), tensor.dtype, tensor.device, tensor.is_neg(),
            tensor.is_conj())


class _NoTensors:
    @staticmethod
    def check() -> bool:
        return True


_NO_TENSORS = _NoTensors()
