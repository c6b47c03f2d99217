"""CUDA tensors through DLPack alone (`intentc/runtime/dlpack.py`): the capsule's DLTensor read
for the address, shape, strides and dtype, zero-copy. Without a GPU, on numpy's own capsules
presented as CUDA memory (the reading is the same; `tests/gpu/test_load_cuda.py` runs it on
the GPU)."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.runtime.dlpack import read_cuda
from intentc.runtime.interop import array_ref


class DLPackOnCuda:
    """A host array that says it lies on CUDA device `ordinal` and has nothing but DLPack."""

    def __init__(self, array: np.ndarray, ordinal: int = 0):
        self._array, self._ordinal = array, ordinal

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return 2, self._ordinal


@pytest.mark.parametrize("view", [lambda a: a, lambda a: a[3:], lambda a: a.reshape(6, 4)[1:, ::2],
                                  lambda a: a.reshape(4, 6).T])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint64, np.bool_])
def test_a_dlpack_tensor_reads_as_its_memory(view, dtype):
    array = view(np.arange(24).astype(dtype))
    address, shape, strides, got, owner = read_cuda(DLPackOnCuda(array))
    assert (address, shape, got) == (array.__array_interface__["data"][0], array.shape, array.dtype)
    assert strides in (array.strides, None if array.flags.c_contiguous else array.strides)
    assert owner is not None


def test_a_cuda_dlpack_tensor_is_a_gpu_array_on_its_device():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:]
    ref = array_ref(DLPackOnCuda(array, ordinal=1))
    assert ref.device == "cuda:1" and ref.strides == array.strides and ref.address == array.ctypes.data


def test_a_dlpack_tensor_on_another_device_is_refused():
    class Elsewhere(DLPackOnCuda):
        def __dlpack_device__(self):
            return 14, 0            # kDLOneAPI
    with pytest.raises(TypeError, match="neither in host nor in CUDA memory"):
        array_ref(Elsewhere(np.zeros(3)))
