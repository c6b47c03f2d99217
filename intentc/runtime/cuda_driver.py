"""A thin, checked layer over the CUDA driver API (`cuda-bindings`): context, modules,
device memory, copies and launches. Every CUDA error becomes a `CudaError` that names the
call, the error and what to do; nothing here knows about KIR.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np


class CudaError(Exception):
    """A CUDA driver call failed, or CUDA is not available on this machine."""


def _driver():
    try:
        from cuda.bindings import driver  # type: ignore[import-not-found]
    except ImportError:
        raise CudaError("the CUDA driver bindings are not installed: pip install cuda-bindings "
                        "(and run on a machine with an NVIDIA GPU and driver)") from None
    return driver


def _load_driver_library(driver):
    """cuInit, the first call, is where cuda-bindings loads libcuda: on a machine without an
    NVIDIA driver it raises (cuda.pathfinder's DynamicLibNotFoundError, a RuntimeError)
    instead of returning a CUresult."""
    try:
        return driver.cuInit(0)
    except RuntimeError as error:
        raise CudaError(f"the CUDA driver library cannot be loaded ({type(error).__name__}: {error}); "
                        "this machine has no NVIDIA driver") from None


def _check(result, call: str):
    """cuda-bindings returns (CUresult, values...); raise on failure, return the values."""
    status, *values = result if isinstance(result, tuple) else (result,)
    if status != _driver().CUresult.CUDA_SUCCESS:
        raise failure(status, call)
    return values[0] if len(values) == 1 else tuple(values)


def failure(status, call: str) -> CudaError:
    """The error of a call that returned `status` (a CUresult, or its integer)."""
    driver = _driver()
    status = driver.CUresult(status)
    _, name = driver.cuGetErrorName(status)
    _, text = driver.cuGetErrorString(status)
    name = name.decode() if isinstance(name, bytes) else str(name)
    text = text.decode() if isinstance(text, bytes) else str(text)
    return CudaError(f"{call} failed: {name}: {text}")


class Device:
    """The primary context of one GPU, made current on the calling thread."""

    def __init__(self, ordinal: int = 0):
        driver = _driver()
        _check(_load_driver_library(driver), "cuInit")
        count = _check(driver.cuDeviceGetCount(), "cuDeviceGetCount")
        if ordinal >= count:
            raise CudaError(f"no CUDA device {ordinal}: this machine has {count}")
        self.ordinal = ordinal
        self.handle = _check(driver.cuDeviceGet(ordinal), "cuDeviceGet")
        self.context = _check(driver.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        major = _check(driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.handle), "cuDeviceGetAttribute")
        minor = _check(driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.handle), "cuDeviceGetAttribute")
        self.arch = f"sm_{major}{minor}"
        self.sm_count = _check(driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, self.handle), "cuDeviceGetAttribute")
        self._heap_bytes = 0

    def ensure_heap(self, nbytes: int) -> None:
        """Make the device malloc heap at least `nbytes` (set before the kernels that use it)."""
        if nbytes > self._heap_bytes:
            driver = _driver()
            _check(driver.cuCtxSetLimit(driver.CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE, nbytes), "cuCtxSetLimit(heap)")
            self._heap_bytes = nbytes

    def load(self, image: bytes | str) -> Module:
        """Load a cubin (bytes) or PTX (text, JIT-compiled by the driver)."""
        data = image.encode() + b"\0" if isinstance(image, str) else image
        handle = _check(_driver().cuModuleLoadData(data), "cuModuleLoadData")
        return Module(handle)

    def synchronize(self) -> None:
        _check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")


class Module:
    def __init__(self, handle):
        self.handle = handle

    def function(self, name: str):
        return _check(_driver().cuModuleGetFunction(self.handle, name.encode()), f"cuModuleGetFunction({name})")

    @staticmethod
    def max_threads(function) -> int:
        """The most threads a CTA of `function` can have (registers and local memory allowing)."""
        driver = _driver()
        return _check(driver.cuFuncGetAttribute(
            driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function), "cuFuncGetAttribute")

    @staticmethod
    def resident_ctas(function, threads: int, shared_bytes: int) -> int:
        """How many CTAs of `threads` threads (and `shared_bytes` of dynamic shared memory) of
        `function` an SM runs at once (its registers and shared memory allowing)."""
        return _check(_driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads, shared_bytes),
                      "cuOccupancyMaxActiveBlocksPerMultiprocessor")

    @staticmethod
    def allow_shared(function, nbytes: int) -> None:
        """Let launches of `function` ask for `nbytes` of dynamic shared memory (past 48 KiB
        only after this attribute is raised)."""
        driver = _driver()
        _check(driver.cuFuncSetAttribute(
            function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
            "cuFuncSetAttribute")

    def unload(self) -> None:
        _check(_driver().cuModuleUnload(self.handle), "cuModuleUnload")


class DeviceBuffer:
    """Device memory of a fixed byte size; copied to and from numpy arrays."""

    def __init__(self, nbytes: int):
        self.nbytes = max(int(nbytes), 1)
        self.pointer = _check(_driver().cuMemAlloc(self.nbytes), "cuMemAlloc")

    @classmethod
    def from_array(cls, array: np.ndarray) -> DeviceBuffer:
        buffer = cls(array.nbytes)
        buffer.upload(array)
        return buffer

    def upload(self, array: np.ndarray) -> None:
        contiguous = np.ascontiguousarray(array)
        if contiguous.nbytes:
            _check(_driver().cuMemcpyHtoD(self.pointer, contiguous.ctypes.data, contiguous.nbytes), "cuMemcpyHtoD")

    def download(self, array: np.ndarray) -> np.ndarray:
        if not array.flags.c_contiguous:
            raise ValueError("download needs a C-contiguous destination")
        if array.nbytes:
            _check(_driver().cuMemcpyDtoH(array.ctypes.data, self.pointer, array.nbytes), "cuMemcpyDtoH")
        return array

    @property
    def address(self) -> int:
        return int(self.pointer)

    def free(self) -> None:
        if self.pointer is not None:
            _check(_driver().cuMemFree(self.pointer), "cuMemFree")
            self.pointer = None


def launch(function, grid: tuple[int, int, int], block: tuple[int, int, int], arguments: list,
           shared_bytes: int = 0) -> None:
    """Launch with kernel arguments given as numpy scalars or ctypes values (device pointers
    as np.uint64). The driver reads each argument through a pointer, so they are kept alive
    in one array of addresses for the call."""
    holders = [np.array(a) if not isinstance(a, ctypes._SimpleCData) else a for a in arguments]
    addresses = np.array([h.ctypes.data if isinstance(h, np.ndarray) else ctypes.addressof(h) for h in holders],
                         dtype=np.uint64)
    _check(_driver().cuLaunchKernel(function, *grid, *block, shared_bytes, 0, addresses.ctypes.data, 0),
           "cuLaunchKernel")


@functools.cache
def default_device() -> Device:
    return Device(0)


class LaunchShape:
    """What launches of one kernel entry share: the function, grid, CTA and dynamic shared
    memory, and per stream the bound call of libcuda's `cuLaunchKernelEx` (a
    `functools.partial` of plain integers: the configuration, the function, no
    `kernelParams`), made the first time: `by_stream.get(s) or bind(s)`; called with a
    parameter block's `extra` address, it returns the CUresult. A launch converts nothing.
    A configuration is never changed after it is made, so threads launching on different
    streams do not race on it; the driver reads it only during the call."""

    def __init__(self, function, grid: tuple[int, int, int], block: tuple[int, int, int], shared_bytes: int = 0):
        self.function, self.grid, self.block, self.shared_bytes = int(function), grid, block, shared_bytes
        self.by_stream: dict[int, functools.partial] = {}

    def native(self, stream: int) -> tuple[tuple[int, int], functools.partial]:
        """((address of its CUlaunchConfig on `stream`, function), the call that owns the
        configuration): how the native fast path (`native_launch.c`) launches it."""
        call = self.by_stream.get(stream) or self.bind(stream)
        return (ctypes.addressof(call.config), self.function), call      # type: ignore[attr-defined]

    def bind(self, stream: int) -> functools.partial:
        if len(self.by_stream) >= MAX_STREAMS:
            self.by_stream.clear()
        config = _LaunchConfig(self.grid, self.block, self.shared_bytes, stream, None, 0)
        launch = functools.partial(_raw_launch(), ctypes.c_void_p(ctypes.addressof(config)),
                                   ctypes.c_void_p(self.function), None)
        launch.config = config          # type: ignore[attr-defined]  # alive as long as the call that points at it
        self.by_stream[stream] = launch
        return launch


class ParameterBlock:
    """A launch's parameter words (the argument words, then the status address: docs/gpu.md
    "GPU ABI"), followed by the `extra` array that passes them to `cuLaunchKernelEx`:
    [CU_LAUNCH_PARAM_BUFFER_POINTER, &words, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, END, size].
    `new()` makes a copy that points at itself: one memory copy and two stores, a few
    times cheaper than building a ctypes array from Python integers."""

    def __init__(self, words: list[int]):
        self.count = len(words)
        self._type = ctypes.c_uint64 * (self.count + 6)
        self._bytes = bytes(self._type(*words, 1, 0, 2, 0, 0, 8 * self.count))

    def new(self) -> ctypes.Array:
        block = self._type.from_buffer_copy(self._bytes)
        base = ctypes.addressof(block)
        block[self.count + 1], block[self.count + 3] = base, base + 8 * (self.count + 5)
        return block


class PreparedLaunch:
    """One kernel launch with its parameter words fixed (a `ParameterBlock` copy), passed by
    value: the driver copies them into the launch (`extra`), so nothing is uploaded, and
    making one costs a memory copy. Launched by its shape's call bound to the stream:
    `(shape.by_stream.get(s) or shape.bind(s))(extra)`."""

    def __init__(self, shape: LaunchShape, block: ctypes.Array, keep: DeviceBuffer | None = None):
        self.shape, self.block = shape, block
        self.extra = ctypes.c_void_p(ctypes.addressof(block) + 8 * (len(block) - 6))
        self.keep = keep        # device memory a parameter points to (tensor maps), freed with the launch
        self.plans: dict[int, tuple] = {}

    def native_plan(self, stream: int) -> tuple:
        """How the native fast path launches it on `stream` (`native_launch.c`, kept in `plans`):
        (((config address, function, extra address),), what owns them)."""
        (config, function), owner = self.shape.native(stream)
        return remember_plan(self.plans, stream, (((config, function, self.extra.value),), owner))

    @classmethod
    def of(cls, shape: LaunchShape, words: list[int], keep: DeviceBuffer | None = None) -> PreparedLaunch:
        return cls(shape, ParameterBlock(words).new(), keep)

    def __call__(self, stream: int = 0) -> None:
        shape = self.shape
        status = (shape.by_stream.get(stream) or shape.bind(stream))(self.extra)
        if status:
            raise failure(status, "cuLaunchKernelEx")


# Streams a launch shape keeps a bound call for (more are rebound as they come).
MAX_STREAMS = 16


def remember_plan(plans: dict[int, tuple], stream: int, plan: tuple) -> tuple:
    """`plan` kept for `stream` in `plans` (at most MAX_STREAMS: a plan owns what it points at,
    so one dropped here stays valid for a launch that holds it)."""
    if len(plans) >= MAX_STREAMS:
        plans.clear()
    plans[stream] = plan
    return plan


class _LaunchConfig(ctypes.Structure):
    """cuda.h's CUlaunchConfig."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared_bytes", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attributes", ctypes.c_void_p), ("attribute_count", ctypes.c_uint)]


def launch_address() -> int:
    """The address of libcuda's cuLaunchKernelEx (for the native fast path)."""
    address = ctypes.cast(_raw_launch(), ctypes.c_void_p).value
    assert address is not None
    return address


@functools.cache
def _raw_launch():
    """libcuda's cuLaunchKernelEx (the library cuda-bindings loaded: the same driver and context),
    called with `c_void_p` objects (or None) for its four pointers: without `argtypes`, ctypes
    passes them as they are instead of converting each argument at every call."""
    function = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
    function.restype = ctypes.c_int
    return function


def stream_synchronize(stream: int) -> None:
    _check(_driver().cuStreamSynchronize(stream), "cuStreamSynchronize")
