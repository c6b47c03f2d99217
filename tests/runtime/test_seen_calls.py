"""The launch fast path (`intentc/runtime/seen_calls.py`): a call reuses a prepared launch
only when everything its checks read is unchanged — memory, shape, dtype, strides, device,
torch's negation bit, scalar bits, names. Without a GPU: the CUDA runtime runs on a fake
driver (host memory presented through `__cuda_array_interface__`, launches recorded), so
the binding, the checks and the launch configuration are the real ones."""
from __future__ import annotations

import ctypes
import weakref
from types import SimpleNamespace

import numpy as np
import pytest

import intentc
from intentc.runtime import cuda, cuda_driver, load, seen_calls
from intentc.runtime.seen_calls import SeenCalls, call_key

ACCUMULATE = """kernel @acc(%x: view<f32, [%N], in>, %y: view<f32, [%N], inout, noalias>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %u = read %y index(%i) : tensor<f32, [%N]>
  %w = add %v, %u : tensor<f32, [%N]>
  write %y, %w index(%i)
}
"""


def test_scalars_are_told_apart_by_type_and_bits():
    keys = [call_key({"t": value})[0] for value in (0.0, -0.0, np.float32(0.0), False, 0, np.int64(0))]
    assert len(set(keys)) == len(keys)
    assert call_key({"t": 0.5})[0] == call_key({"t": 0.5})[0]
    assert call_key({"t": [1.0]})[0] is None            # a list is bound afresh every time


# ---- the CUDA runtime on a fake driver -------------------------------------------------------

class _FakeGpuArray:
    """A numpy array seen only as a GPU array on device `ordinal`."""

    def __init__(self, array: np.ndarray, ordinal: int = 0):
        self.array = array
        self.device = SimpleNamespace(id=ordinal)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"data": (self.array.__array_interface__["data"][0], False), "shape": self.array.shape,
                "strides": self.array.strides, "typestr": self.array.dtype.str, "version": 3}


class _FakeBuffer:
    """Device memory stood in for by host memory."""

    def __init__(self, nbytes: int):
        self.host = np.zeros(max(int(nbytes), 8) // 8 + 1, np.int64)
        self.address = self.host.ctypes.data
        self.freed = False

    @classmethod
    def from_array(cls, array: np.ndarray) -> _FakeBuffer:
        buffer = cls(array.nbytes)
        buffer.upload(array)
        return buffer

    def upload(self, array: np.ndarray) -> None:
        self.host.view(np.uint8)[:array.nbytes] = np.ascontiguousarray(array).view(np.uint8).reshape(-1)

    def free(self) -> None:
        self.freed = True


class _FakeDevice:
    arch, sm_count, ordinal = "sm_90", 4, 0

    def load(self, image):
        return SimpleNamespace(function=lambda name: 1, max_threads=lambda function: 1024)

    def ensure_heap(self, nbytes: int) -> None:
        pass

    def synchronize(self) -> None:
        pass


@pytest.fixture
def fake_driver(monkeypatch):
    """Launches recorded as (grid, block, stream, argument words) instead of run, and the
    calls bound and checked in full (the others took the fast path)."""
    launches: list = []
    binds: list = []
    prepare = cuda.CudaKernel.prepare

    def counted_prepare(self, arrays, constexprs=None):
        binds.append(sorted(arrays))
        return prepare(self, arrays, constexprs)

    def launch(config_address: int, function: int, params: int, extra) -> int:
        config = cuda_driver._LaunchConfig.from_address(config_address)
        arguments = ctypes.c_uint64.from_address(ctypes.c_uint64.from_address(params).value).value
        words = np.ctypeslib.as_array((ctypes.c_int64 * 4).from_address(arguments)).tolist()
        launches.append((tuple(config.grid), tuple(config.block), config.stream or 0, words))
        return 0

    monkeypatch.setattr(load, "_LOADED", {})        # kernels built on this fake driver only
    monkeypatch.setattr(cuda, "default_device", _FakeDevice)
    monkeypatch.setattr(cuda, "DeviceBuffer", _FakeBuffer)
    monkeypatch.setattr(cuda_driver, "_raw_launch", lambda: launch)
    monkeypatch.setattr(cuda.CudaKernel, "prepare", counted_prepare)
    return SimpleNamespace(launches=launches, binds=binds)


def _loaded(source: str, name: str, **options):
    return intentc.load(source, name, target="cuda", arch="sm_90", **options)


def _diagnostic(work, *arguments, **keywords):
    with pytest.raises(intentc.DiagnosticError) as error:
        work(*arguments, **keywords)
    return error.value.diagnostics[0]


def test_a_call_seen_before_is_launched_without_binding(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc")
    base = np.zeros(64, np.float32)
    for stream in (0, 7, 7):
        kernel(x=_FakeGpuArray(base[0:8]), y=_FakeGpuArray(base[32:40]), stream=stream)
    assert len(fake_driver.binds) == 1 and [launch[2] for launch in fake_driver.launches] == [0, 7, 7]
    grid, block, _, words = fake_driver.launches[-1]
    assert grid == kernel.runner.grid() and block == kernel.runner.block
    assert words[0] == base[0:8].ctypes.data     # the first slot: x's address


def test_every_change_a_check_reads_is_bound_and_checked_again(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc")
    base = np.zeros(64, np.float32)
    gpu = _FakeGpuArray
    kernel(x=gpu(base[0:8]), y=gpu(base[32:40]))
    changed = {
        "R0109": {"x": gpu(base[0:8]), "y": gpu(base[4:12])},                 # offset: overlapping now
        "R0105": {"x": gpu(base[0:8]), "y": gpu(base[32:39])},                # shape
        "R0103": {"x": gpu(base[0:16].view(np.int32)[0:8]), "y": gpu(base[32:40])},  # dtype, same memory
        "R0108": {"x": gpu(base[0:8], ordinal=1), "y": gpu(base[32:40])},     # device
    }
    for code, arguments in changed.items():
        assert _diagnostic(kernel, **arguments).code == code
    assert "cuda:1 memory" in _diagnostic(kernel, **changed["R0108"]).message
    kernel(x=gpu(base[0:16:2]), y=gpu(base[32:40]))                     # strides: their own argument words
    assert fake_driver.launches[-1][3][3] == 2                          # x's stride slot
    assert len(fake_driver.binds) == 1 + len(changed) + 1 + 1


def test_recycled_argument_buffers_live_as_long_as_a_launch_holding_them(fake_driver, monkeypatch):
    """After MAX_ARGUMENT_BUFFERS argument sets the buffers are recycled; a launch another
    thread still holds (found just before) keeps its buffer until it is dropped."""
    monkeypatch.setattr(cuda, "MAX_ARGUMENT_BUFFERS", 2)
    kernel = _loaded(ACCUMULATE, "acc")
    base = np.zeros(64, np.float32)
    calls = [{"x": _FakeGpuArray(base[0:8]), "y": _FakeGpuArray(base[8 * i + 16:8 * i + 24])} for i in range(3)]
    kernel(**calls[0])
    kernel(**calls[1])
    held = kernel.runner.seen.find(calls[0])
    dropped = weakref.ref(kernel.runner.seen.find(calls[1]))
    buffers = [held._arguments, dropped()._arguments]
    kernel(**calls[2])                                  # the third set recycles the first two
    assert kernel.runner.seen.find(calls[0]) is None and dropped() is None
    assert [b.freed for b in buffers] == [False, True]
    held(0)                                             # still launchable
    del held
    assert buffers[0].freed


def test_shape_variants_share_the_fast_path(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc", specialize="auto")
    base = np.zeros(64, np.float32)
    for _ in range(3):
        for n in (8, 16):
            kernel(x=_FakeGpuArray(base[0:n]), y=_FakeGpuArray(base[32:32 + n]))
    assert len(kernel._variants) == 2 and len(fake_driver.binds) == 2 and len(fake_driver.launches) == 6


def test_diagnostics_are_the_interpreters(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc")
    x, y = np.zeros(8, np.float32), np.zeros(7, np.float32)
    kernel(x=_FakeGpuArray(x), y=_FakeGpuArray(np.zeros(8, np.float32)))
    ours = _diagnostic(lambda: kernel(x=_FakeGpuArray(x), y=_FakeGpuArray(y)))
    reference = _diagnostic(lambda: intentc.run(ACCUMULATE, "acc", {"x": x, "y": y}))
    assert (ours.code, ours.message) == (reference.code, reference.message)


# ---- torch tensors: keyed by data pointer, layouts checked by TensorGuards or accessors ------

@pytest.fixture(params=["TensorGuards", "accessors"])
def torch_seen(request, monkeypatch):
    torch = pytest.importorskip("torch", reason="torch tensors (torch is not a dependency)")
    if request.param == "accessors":
        monkeypatch.setattr(seen_calls, "_tensor_layouts", lambda: seen_calls.AccessorLayouts)
    return torch, SeenCalls(8)


def test_torch_calls_are_found_only_with_the_same_layouts(torch_seen):
    torch, seen = torch_seen
    base = torch.zeros(64)
    seen.remember({"x": base[0:8], "y": base[32:40]}, "prepared")
    assert seen.find({"x": base[0:8], "y": base[32:40]}) == "prepared"    # new tensor objects, same memory
    complex_base = torch.zeros(8, dtype=torch.cfloat)
    seen.remember({"x": complex_base.imag, "y": base[32:40]}, "imag")
    empty = torch.zeros(0)
    seen.remember({"x": empty, "y": base[32:40]}, "empty")
    assert empty.data_ptr() == torch.zeros(0, device="meta").data_ptr() == 0
    misses = {
        "offset": {"x": base[1:9], "y": base[32:40]},
        "shape": {"x": base[0:7], "y": base[32:40]},
        "strides": {"x": base[0:16:2], "y": base[32:40]},
        "dtype": {"x": base.view(torch.int32)[0:8], "y": base[32:40]},
        "device": {"x": torch.zeros(0, device="meta"), "y": base[32:40]},
        "negation bit": {"x": complex_base.conj().imag, "y": base[32:40]},
        "names": {"y": base[32:40], "x": base[0:8]},
        "a scalar": {"x": base[0:8], "y": base[32:40], "t": 1.0},
    }
    for change, arguments in misses.items():
        assert seen.find(arguments) is None, change
    assert seen.find({"x": complex_base.imag, "y": base[32:40]}) == "imag"


def test_torch_and_other_arguments_mix(torch_seen):
    torch, seen = torch_seen
    x = torch.zeros(8)
    seen.remember({"x": x, "t": 0.5}, "prepared")
    assert seen.find({"x": x, "t": 0.5}) == "prepared"
    assert seen.find({"x": x, "t": np.float32(0.5)}) is None
    assert seen.find({"x": x, "t": -0.5}) is None
