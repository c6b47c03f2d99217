"""Arrays from any library as (address, shape, byte strides, dtype, device), without copying.

Accepted: numpy arrays (`__array_interface__`), objects with `__cuda_array_interface__`
(torch and CuPy GPU tensors: their device pointer), and objects with `__dlpack__`: on the
host (torch CPU tensors, JAX CPU arrays) through `numpy.from_dlpack`, on a CUDA device (JAX
GPU arrays) through the capsule's `DLTensor` (`dlpack.py`), both zero-copy.
Anything else goes through `numpy.asarray` (lists, scalars) and is a fresh host array.
A GPU array's device is `cuda:<ordinal>`: torch's and CuPy's say which GPU; an object with
only `__cuda_array_interface__` (which names none) is taken to be on GPU 0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dlpack import CUDA_DEVICE_TYPES, read_cuda

CPU = "cpu"
# DLPack device types (dlpack.h): kDLCPU and kDLCUDAHost are host memory.
_DLPACK_HOST = (1, 3)


@dataclass(frozen=True)
class ArrayRef:
    address: int                    # the byte address of element [0, ..., 0]
    shape: tuple[int, ...]
    strides: tuple[int, ...]        # in bytes, any sign
    dtype: np.dtype
    device: str                     # "cpu" or "cuda:<ordinal>"
    owner: object                   # keeps the memory alive while the launch uses it

    def span(self) -> tuple[int, int]:
        """[low, high): the bytes the array touches."""
        if 0 in self.shape:
            return self.address, self.address
        low = self.address + sum(min(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        high = self.address + sum(max(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        return low, high + self.dtype.itemsize


def array_ref(value) -> ArrayRef:
    if type(value).__module__ == "torch":
        return _torch_ref(value)
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return _from_interface(interface, cuda_device(getattr(getattr(value, "device", None), "id", 0)), value)
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
        device_type, ordinal = value.__dlpack_device__()
        if device_type in CUDA_DEVICE_TYPES:
            address, shape, strides, dtype, owner = read_cuda(value)
            return ArrayRef(address, shape, strides or _c_strides(shape, dtype.itemsize), dtype, cuda_device(ordinal),
                            owner)
        if device_type not in _DLPACK_HOST:
            raise TypeError(f"a DLPack tensor on device type {device_type} is neither in host nor in CUDA memory")
        value = np.from_dlpack(value)
    array = np.asarray(value)
    return _from_interface(array.__array_interface__, CPU, array)


def cuda_device(ordinal: int) -> str:
    return f"cuda:{ordinal}"


def _torch_ref(tensor) -> ArrayRef:
    """A torch tensor read through its accessors: a few times faster per call than building
    its `__cuda_array_interface__` (which is what launch overhead is made of). Only dense
    (strided) tensors in host or CUDA memory are arrays; a tensor with torch's lazy negation
    bit (`c.conj().imag`) is refused too: its memory holds the negated values."""
    device = tensor.device
    if device.type not in (CPU, "cuda") or str(tensor.layout) != "torch.strided":
        raise TypeError(f"a {tensor.layout} tensor on {device} is not a dense array in host or GPU memory")
    if tensor.is_neg():
        raise TypeError("the tensor has torch's negative bit set (its memory holds the negated values); "
                        "pass tensor.resolve_neg()")
    dtype = _TORCH_DTYPES.get(tensor.dtype)
    if dtype is None:
        dtype = _TORCH_DTYPES[tensor.dtype] = _numpy_dtype(str(tensor.dtype).rpartition(".")[2])
    itemsize = dtype.itemsize
    return ArrayRef(tensor.data_ptr(), tuple(tensor.shape), tuple(s * itemsize for s in tensor.stride()), dtype,
                    CPU if device.type == CPU else cuda_device(device.index), tensor)


_TORCH_DTYPES: dict = {}


def _numpy_dtype(name: str) -> np.dtype:
    """numpy's dtype of a torch dtype name (`float32`; `bfloat16` and `float8_*` from ml_dtypes)."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def _from_interface(interface: dict, device: str, owner) -> ArrayRef:
    dtype = np.dtype(interface["typestr"])
    shape = tuple(int(n) for n in interface["shape"])
    strides = interface.get("strides")
    if strides is None:
        strides = _c_strides(shape, dtype.itemsize)
    return ArrayRef(int(interface["data"][0]), shape, tuple(int(s) for s in strides), dtype, device, owner)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))

