"""The CUDA runtime without a GPU: a fake driver (host memory presented as GPU memory,
launches recorded with their parameter words), and arrays that the runtime takes for GPU
arrays or for torch tensors. The binding, the checks and the launch configuration are the
real ones (each test module makes these its fixtures)."""
from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

from intentc.runtime import cuda, cuda_driver, cuda_stages, launch_template, load, native, seen_calls


class FakeGpuArray:
    """A numpy array seen only as a GPU array on device `ordinal`."""

    def __init__(self, array: np.ndarray, ordinal: int = 0):
        self.array = array
        self.device = SimpleNamespace(id=ordinal)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"data": (self.array.__array_interface__["data"][0], False), "shape": self.array.shape,
                "strides": self.array.strides, "typestr": self.array.dtype.str, "version": 3}


class FakeDLPackArray:
    """A numpy array seen only through DLPack, as on CUDA device `ordinal` (a JAX GPU array)."""

    def __init__(self, array: np.ndarray, ordinal: int = 0):
        self.array, self._ordinal = array, ordinal

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return 2, self._ordinal


class FakeTensor(FakeGpuArray):
    """A fake GPU array that the launch fast paths take for a torch tensor (`fake_torch`):
    what they read of one is its data pointer and the layout facts torch's accessors give."""

    def data_ptr(self) -> int:
        return self.array.__array_interface__["data"][0]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    def stride(self) -> tuple[int, ...]:
        return tuple(s // self.array.itemsize for s in self.array.strides)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    def is_neg(self) -> bool:
        return False

    def is_conj(self) -> bool:
        return False


def _fake_data_ptr(value) -> int:
    if not isinstance(value, FakeTensor):
        raise TypeError("not a tensor")      # as torch.Tensor.data_ptr raises for anything else
    return value.data_ptr()


def install_torch(monkeypatch) -> None:
    """Make the launch fast paths take `FakeTensor`s for torch tensors (layouts by accessors)."""
    monkeypatch.setattr(seen_calls, "_tensor_type", lambda: FakeTensor)
    monkeypatch.setattr(seen_calls, "_data_ptr", _fake_data_ptr)
    monkeypatch.setattr(seen_calls, "_tensor_layouts", lambda: seen_calls.AccessorLayouts)


class FakeBuffer:
    """Device memory stood in for by host memory."""

    def __init__(self, nbytes: int):
        self.host = np.zeros(max(int(nbytes), 8) // 8 + 1, np.int64)
        self.address = self.host.ctypes.data
        self.freed = False

    @classmethod
    def from_array(cls, array: np.ndarray) -> FakeBuffer:
        buffer = cls(array.nbytes)
        buffer.upload(array)
        return buffer

    def upload(self, array: np.ndarray) -> None:
        self.host.view(np.uint8)[:array.nbytes] = np.ascontiguousarray(array).view(np.uint8).reshape(-1)

    def free(self) -> None:
        self.freed = True


class FakeDevice:
    arch, sm_count, ordinal = "sm_90", 4, 0
    resident_ctas = 64      # CTAs an SM holds (more than any launch config asks: the config's grid)

    def load(self, image):
        return SimpleNamespace(function=lambda name: 1, max_threads=lambda function: 1024,
                               allow_shared=lambda function, nbytes: None,
                               resident_ctas=lambda function, threads, shared_bytes: self.resident_ctas)

    def ensure_heap(self, nbytes: int) -> None:
        pass

    def synchronize(self) -> None:
        pass


def install_driver(monkeypatch) -> SimpleNamespace:
    """Launches recorded as (grid, block, stream, parameter words) instead of run, and the
    calls bound and checked in full (the others took a fast path)."""
    launches: list = []
    binds: list = []
    prepare = cuda.CudaKernel.prepare

    def counted_prepare(self, arrays, constexprs=None):
        binds.append(sorted(arrays))
        return prepare(self, arrays, constexprs)

    def launch(config: ctypes.c_void_p, function: ctypes.c_void_p, params: None, extra: ctypes.c_void_p) -> int:
        assert all(isinstance(pointer, ctypes.c_void_p) for pointer in (config, function, extra))
        config = cuda_driver._LaunchConfig.from_address(config.value)
        # extra: [CU_LAUNCH_PARAM_BUFFER_POINTER, words, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, END]
        tags = (ctypes.c_uint64 * 5).from_address(extra.value)
        assert params is None and (tags[0], tags[2], tags[4]) == (1, 2, 0)
        size = ctypes.c_uint64.from_address(tags[3]).value
        words = list((ctypes.c_int64 * (size // 8)).from_address(tags[1]))
        launches.append((tuple(config.grid), tuple(config.block), config.stream or 0, words))
        return 0

    # the native fast path (native_launch.c) calls the same fake through a C function pointer
    native_launch = _LAUNCH_TYPE(lambda *pointers: launch(*map(ctypes.c_void_p, pointers[:2]), None,
                                                           ctypes.c_void_p(pointers[3])))
    monkeypatch.setattr(cuda_driver, "launch_address", lambda: ctypes.cast(native_launch, ctypes.c_void_p).value)
    monkeypatch.setattr(load, "_LOADED", {})        # kernels built on this fake driver only
    monkeypatch.setattr(cuda, "default_device", FakeDevice)
    monkeypatch.setattr(cuda, "DeviceBuffer", FakeBuffer)
    monkeypatch.setattr(cuda_stages, "DeviceBuffer", FakeBuffer)
    monkeypatch.setattr(launch_template, "DeviceBuffer", FakeBuffer)
    monkeypatch.setattr(cuda_driver, "_raw_launch", lambda: launch)
    monkeypatch.setattr(cuda.CudaKernel, "prepare", counted_prepare)
    return SimpleNamespace(launches=launches, binds=binds, native_launch=native_launch)


_LAUNCH_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def choose_fast_path(monkeypatch, path: str) -> None:
    """"native": calls on (fake) torch tensors take `native_launch.c` (the default; skipped
    where it cannot be built, saying why); "python": the Python fast path alone
    (`INTENTC_LAUNCH_OFF=native`, and where there is no C compiler)."""
    if path == "python":
        monkeypatch.setenv("INTENTC_LAUNCH_OFF", "native")
        return
    monkeypatch.delenv("INTENTC_LAUNCH_OFF", raising=False)
    if native.fast_call() is None:
        pytest.skip(f"the native fast path cannot be built here: {native.unavailable()}")
