"""The native fast path (`intentc/runtime/native_launch.c`): calls on torch tensors seen
before, or with a layout seen before, are launched from C with the words the Python path
(and a full binding) gives; everything else goes to the Python path. On the fake driver of
`fake_cuda.py` (its launches reach it through a C function pointer), `FakeTensor`s taken for
torch tensors. The checks themselves are tested on both paths in test_new_pointer_calls.py."""
from __future__ import annotations

import ctypes
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from fake_cuda import FakeTensor, choose_fast_path, install_driver, install_torch

import intentc
from intentc.runtime import cuda_driver, load, seen_calls
from intentc.runtime.cuda_driver import CudaError

ACCUMULATE = (Path(__file__).parent / "accumulate.kir").read_text()     # y += x, y noalias
SCALE = (Path(__file__).parent / "scale.kir").read_text()
CUMSUM = (Path(__file__).parent / "cumsum.kir").read_text()


@pytest.fixture
def fake_driver(monkeypatch):
    """The fake driver, with `SeenCalls.find` (the Python path's lookup) counted."""
    install_torch(monkeypatch)
    choose_fast_path(monkeypatch, "native")
    driver = install_driver(monkeypatch)
    driver.finds = []
    find = seen_calls.SeenCalls.find
    monkeypatch.setattr(seen_calls.SeenCalls, "find", lambda self, call: driver.finds.append(call) or find(self, call))
    return driver


def _loaded(source: str, name: str):
    return intentc.load(source, name, target="cuda", arch="sm_90")


def _full_binding_words(kernel, arguments: dict, fake_driver) -> list[int]:
    kernel.runner.seen.clear()
    kernel(**arguments)
    return fake_driver.launches[-1][3]


def test_seen_calls_and_new_memory_are_launched_natively_with_a_full_bindings_words(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc")
    first, second = np.zeros(64, np.float32), np.zeros(64, np.float32)
    calls = [{"x": FakeTensor(first[1:17:2]), "y": FakeTensor(first[40:48])},        # bound
             {"x": FakeTensor(first[1:17:2]), "y": FakeTensor(first[40:48])},        # seen
             {"x": FakeTensor(second[1:17:2]), "y": FakeTensor(second[40:48])},      # new memory
             {"x": FakeTensor(second[9:25:2]), "y": FakeTensor(first[32:40])}]       # new memory
    words, finds = [], []
    for arguments in calls:
        outputs = kernel(**arguments)
        assert outputs == {"y": arguments["y"]}
        words.append(fake_driver.launches[-1][3])
        finds.append(len(fake_driver.finds))
    assert len(fake_driver.binds) == 1 and len(set(finds)) == 1, "only the first call left C"
    for arguments, launched in zip(calls[2:], words[2:]):
        assert launched == _full_binding_words(kernel, arguments, fake_driver)
    assert words[1] == words[0]


def test_python_numbers_are_keyed_natively_by_type_and_bits(fake_driver):
    kernel = _loaded(SCALE, "scale")
    x, y = np.zeros(16, np.float32), np.zeros(16, np.float32)
    for value in (0.0, -0.0, 1, 1.0, 0.5):
        kernel(x=FakeTensor(x[0:8]), t=value, y=FakeTensor(y[0:8]))               # bound: a new scalar
        finds = len(fake_driver.finds)
        kernel(x=FakeTensor(x[0:8]), t=value, y=FakeTensor(y[0:8]))               # seen
        kernel(x=FakeTensor(x[8:16]), t=value, y=FakeTensor(y[8:16]))             # new memory
        assert len(fake_driver.finds) == finds, value
        assert fake_driver.launches[-1][3][5] == np.float32(value).view(np.uint32), value    # t's word
    assert len(fake_driver.binds) == 5, "each scalar's type and bits bound once"
    kernel(x=FakeTensor(x[0:8]), t=np.float32(0.5), y=FakeTensor(y[0:8]))          # a numpy scalar: Python's key
    assert len(fake_driver.finds) == finds + 2 and len(fake_driver.binds) == 6


def test_what_the_native_path_does_not_take_goes_to_the_python_path(fake_driver):
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    accumulate = _loaded(ACCUMULATE, "acc")
    arguments = {"x": FakeTensor(x), "y": FakeTensor(y)}
    accumulate(**arguments)
    finds = len(fake_driver.finds)
    accumulate(**arguments, stream=7)                          # a stream not launched on yet: its plan made
    accumulate(**arguments, stream=7)
    accumulate(**arguments, stream=type("Stream", (), {"cuda_stream": 7})())    # a stream object: Python
    assert [launch[2] for launch in fake_driver.launches[-3:]] == [7, 7, 7]
    assert len(fake_driver.finds) == finds + 1


def test_a_failed_launch_raises_the_drivers_error(fake_driver, monkeypatch):
    kernel = _loaded(ACCUMULATE, "acc")
    arguments = {"x": FakeTensor(np.zeros(8, np.float32)), "y": FakeTensor(np.zeros(8, np.float32))}
    kernel(**arguments)
    failing = ctypes.CFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * 4)(lambda *pointers: 700)
    monkeypatch.setattr(cuda_driver, "launch_address", lambda: ctypes.cast(failing, ctypes.c_void_p).value)
    monkeypatch.setattr(load, "failure", lambda status, call: CudaError(f"{call} failed: {status}"))
    kernel._native = kernel._native_state()
    finds = len(fake_driver.finds)
    with pytest.raises(intentc.DiagnosticError) as error:
        kernel(**arguments)
    assert error.value.diagnostics[0].code == "E0090" and "cuLaunchKernelEx failed: 700" in str(error.value)
    assert len(fake_driver.finds) == finds, "raised from the native path"


def test_threads_launch_their_own_new_memory(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc")
    memory = np.zeros(4096, np.float32)
    kernel(x=FakeTensor(memory[0:8]), y=FakeTensor(memory[8:16]))

    def call(start: int) -> tuple[int, int]:
        kernel(x=FakeTensor(memory[start:start + 8]), y=FakeTensor(memory[start + 8:start + 16]))
        return memory[start:].ctypes.data, memory[start + 8:].ctypes.data
    with ThreadPoolExecutor(4) as pool:
        expected = list(pool.map(call, range(16, 4000, 16)))
    launched = {(words[0], words[5]) for _, _, _, words in fake_driver.launches[1:]}     # x's and y's address
    assert launched == set(expected) and len(fake_driver.binds) == 1


def test_the_switch_turns_it_off(fake_driver, monkeypatch):
    """With `INTENTC_LAUNCH_OFF=native` (for diagnosis) every call takes the Python path."""
    monkeypatch.setenv("INTENTC_LAUNCH_OFF", "native")
    kernel = _loaded(ACCUMULATE, "acc")
    arguments = {"x": FakeTensor(np.zeros(8, np.float32)), "y": FakeTensor(np.zeros(8, np.float32))}
    for _ in range(3):
        kernel(**arguments)
    assert kernel._native is None and len(fake_driver.finds) == 2 + 2 and len(fake_driver.binds) == 1


def test_a_staged_kernel_is_launched_natively_with_its_streams_scratch(fake_driver):
    """Seen and on new memory: every stage in order, the words a full binding gives but the
    scratch word, which is the stream's own scratch memory (launches on one stream share it)."""
    kernel = _loaded(CUMSUM, "cumsum")
    stages = len(kernel.launch_config.stages)
    assert stages > 1, "cumsum is a staged program"
    first, second = np.zeros((2, 4096), np.float32), np.zeros((2, 4096), np.float32)
    kernel(x=FakeTensor(first[0]), y=FakeTensor(first[1]), stream=5)             # bound
    finds = len(fake_driver.finds)
    for memory, stream in ((first, 5), (second, 5), (second, 6)):                  # seen, new, new
        kernel(x=FakeTensor(memory[0]), y=FakeTensor(memory[1]), stream=stream)
    assert len(fake_driver.finds) == finds and len(fake_driver.binds) == 1
    launches = fake_driver.launches
    assert len(launches) == 4 * stages and [launch[2] for launch in launches[::stages]] == [5, 5, 5, 6]
    calls = [launches[i * stages:(i + 1) * stages] for i in range(4)]
    assert all(len({tuple(launch[3]) for launch in call}) == 1 for call in calls), "one set of words a call"
    words = [call[0][3] for call in calls]
    assert words[1] == words[0] and words[2][-2] == words[0][-2] != words[3][-2]     # scratch by stream
    bound = _full_binding_words(kernel, {"x": FakeTensor(second[0]), "y": FakeTensor(second[1])}, fake_driver)
    assert words[2][:-2] == words[3][:-2] == bound[:-2] and words[2][-1] == bound[-1]
