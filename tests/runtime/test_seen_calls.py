"""The launch fast path (`intentc/runtime/seen_calls.py`): a call reuses a prepared launch
only when everything its checks read is unchanged — memory, shape, dtype, strides, device,
torch's negation bit, scalar bits, names. Without a GPU: the CUDA runtime runs on a fake
driver (host memory presented through `__cuda_array_interface__`, launches recorded), so
the binding, the checks and the launch configuration are the real ones."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_cuda import FakeGpuArray, install_driver

import intentc
from intentc.runtime import seen_calls
from intentc.runtime.seen_calls import SeenCalls, call_key

# y += x: a noalias inout view beside an input (shared with tests/gpu/test_load_cuda.py)
ACCUMULATE = (Path(__file__).parent / "accumulate.kir").read_text()


def test_scalars_are_told_apart_by_type_and_bits():
    keys = [call_key({"t": value})[0] for value in (0.0, -0.0, np.float32(0.0), False, 0, np.int64(0))]
    assert len(set(keys)) == len(keys)
    assert call_key({"t": 0.5})[0] == call_key({"t": 0.5})[0]
    assert call_key({"t": [1.0]})[0] is None            # a list is bound afresh every time


@pytest.fixture
def fake_driver(monkeypatch):
    """The CUDA runtime on a fake driver (`fake_cuda.install_driver`)."""
    return install_driver(monkeypatch)


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
        kernel(x=FakeGpuArray(base[0:8]), y=FakeGpuArray(base[32:40]), stream=stream)
    assert len(fake_driver.binds) == 1 and [launch[2] for launch in fake_driver.launches] == [0, 7, 7]
    grid, block, _, words = fake_driver.launches[-1]
    assert grid == kernel.runner.grid() and block == kernel.runner.block
    assert words[0] == base[0:8].ctypes.data     # the first slot: x's address


def test_every_change_a_check_reads_is_bound_and_checked_again(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc")
    base = np.zeros(64, np.float32)
    gpu = FakeGpuArray
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


def test_shape_variants_share_the_fast_path(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc", specialize="auto")
    base = np.zeros(64, np.float32)
    for _ in range(3):
        for n in (8, 16):
            kernel(x=FakeGpuArray(base[0:n]), y=FakeGpuArray(base[32:32 + n]))
    assert len(kernel._variants) == 2 and len(fake_driver.binds) == 2 and len(fake_driver.launches) == 6


def test_diagnostics_are_the_interpreters(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc")
    x, y = np.zeros(8, np.float32), np.zeros(7, np.float32)
    kernel(x=FakeGpuArray(x), y=FakeGpuArray(np.zeros(8, np.float32)))
    ours = _diagnostic(lambda: kernel(x=FakeGpuArray(x), y=FakeGpuArray(y)))
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
