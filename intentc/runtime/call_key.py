"""Recognizing a call seen before, cheaply: the launch fast path (`docs/runtime.md`).

A launch's checks (the interpreter's R0101–R0109, layout facts, R0206) and its argument
words depend on each argument's address, shape, strides, dtype and device, and on each
scalar's type and exact bits — on nothing else (and on torch's lazy negation bit, which the
binding refuses). `call_key` reads exactly those, through an array's cheapest accessors (a
torch tensor's `data_ptr()`, `shape`, `stride()`, `dtype`, `get_device()`, `is_neg()`: a few
times faster than its `__cuda_array_interface__`), so a
call with an equal key passes the same checks and needs the same argument words as the
call that was bound and checked for it.
"""
from __future__ import annotations

import struct

import numpy as np

from ..interp.values import EnumValue
from .interop import array_ref

_DOUBLE = struct.Struct("<d")


def call_key(arguments: dict) -> tuple | None:
    """A flat tuple that equals another call's exactly when every argument has the same name,
    memory, layout, dtype and device (arrays) or the same type and bits (scalars); None when
    an argument is of a kind bound afresh at every call (lists, host DLPack objects, ...).

    Per argument: its name, then for a torch tensor `data_ptr, shape, strides, dtype, device
    index, negative bit` (six items, the first an int), for anything else `type, summary` (two
    items, the first a type): the item after a name says how many follow, so two different
    calls never share a key."""
    parts: list = []
    for name, value in arguments.items():
        if type(value) is _torch_tensor:
            parts += (name, value.data_ptr(), value.shape, value.stride(), value.dtype, value.get_device(),
                      value.is_neg())
        else:
            summary = _summary(value)
            if summary is None:
                return None
            parts += (name, type(value), summary)
    return tuple(parts)


class _NoTorch:
    """Stands for torch.Tensor until a torch tensor is seen (importing torch just to compare
    types would cost a second)."""


_torch_tensor: type = _NoTorch


def _summary(value):
    """What the checks of anything but an exact torch.Tensor depend on."""
    global _torch_tensor
    if type(value).__module__ == "torch":
        import torch
        _torch_tensor = torch.Tensor
        if isinstance(value, torch.Tensor):      # a subclass (Parameter, ...): same accessors
            return (value.data_ptr(), value.shape, value.stride(), value.dtype, value.get_device(), value.is_neg())
    if isinstance(value, float):
        return _DOUBLE.pack(value)               # -0.0 == 0.0 and NaNs differ: compare bits
    if isinstance(value, int):                   # bool too: its type is in the key
        return value
    if isinstance(value, np.generic):
        return value.tobytes()
    if isinstance(value, EnumValue):             # a constexpr enum member: hashable, compared by name
        return value
    if hasattr(value, "__cuda_array_interface__"):
        ref = array_ref(value)
        return (ref.address, ref.shape, ref.strides, ref.dtype, ref.device)
    return None
