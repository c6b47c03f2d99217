"""A CUDA tensor read through the DLPack protocol alone (`__dlpack__`, `__dlpack_device__`:
JAX GPU arrays, and any library without `__cuda_array_interface__`), zero-copy.

The capsule `__dlpack__()` returns names a `DLManagedTensor` (dlpack.h); its `DLTensor` gives
the device pointer, shape, strides (in elements; none: row-major) and byte offset. The
capsule is kept, not consumed, as the array's owner: the producer frees the memory only
when the unconsumed capsule is collected (its destructor calls the deleter), after the launch
that points at it has been queued — the same lifetime a `__cuda_array_interface__` owner has.
"""
from __future__ import annotations

import ctypes

import numpy as np

# kDLCUDA, kDLCUDAManaged (unified memory: a device pointer too)
CUDA_DEVICE_TYPES = (2, 13)
# DLDataTypeCode: kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool
_KINDS = {0: "i", 1: "u", 2: "f", 4: "bfloat", 6: "b"}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def read_cuda(value) -> tuple[int, tuple[int, ...], tuple[int, ...] | None, np.dtype, object]:
    """(address of element 0, shape, byte strides or None for row-major, dtype, owner) of a
    CUDA DLPack tensor (its device is `__dlpack_device__`'s); TypeError for a dtype KIR has
    no name for (vector lanes, complex)."""
    capsule = value.__dlpack__()
    tensor = _Tensor.from_address(_capsule_pointer(capsule, b"dltensor"))   # DLTensor leads DLManagedTensor
    dtype = _dtype(tensor.dtype)
    shape = tuple(tensor.shape[axis] for axis in range(tensor.ndim))
    strides = tuple(tensor.strides[axis] * dtype.itemsize for axis in range(tensor.ndim)) if tensor.strides else None
    return (tensor.data or 0) + tensor.byte_offset, shape, strides, dtype, capsule


def _dtype(data_type: _DataType) -> np.dtype:
    kind = _KINDS.get(data_type.code)
    if kind is None or data_type.lanes != 1:
        raise TypeError(f"a DLPack tensor of type code {data_type.code}, {data_type.bits} bits x {data_type.lanes} "
                        "lanes has no KIR dtype")
    if kind == "bfloat":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(bool) if kind == "b" else np.dtype(f"{kind}{data_type.bits // 8}")

