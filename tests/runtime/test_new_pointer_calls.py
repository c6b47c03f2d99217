"""The new-pointer fast path (`intentc/runtime/launch_template.py`): a call whose layout was
bound and checked before, on other memory, is launched from that call's template without
binding — with exactly the words a full binding gives — and every change of what the checks
read other than the data pointers (shape, dtype, strides, offset into aliasing, device,
scalar value and kind, names) is bound and checked again with the interpreter's diagnostics.
On the fake driver of `fake_cuda.py`, with `FakeTensor`s taken for torch tensors."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from fake_cuda import FakeDLPackArray, FakeGpuArray, FakeTensor, choose_fast_path, install_driver, install_torch

import intentc

ACCUMULATE = (Path(__file__).parent / "accumulate.kir").read_text()     # y += x, y noalias
SCALE = (Path(__file__).parent / "scale.kir").read_text()
CUMSUM = (Path(__file__).parent / "cumsum.kir").read_text()



@pytest.fixture(params=["native", "python"])
def fake_driver(monkeypatch, request):
    """The CUDA runtime on a fake driver, taking `FakeTensor`s for torch tensors (`fake_cuda.py`),
    their calls served by the native fast path or by the Python one."""
    install_torch(monkeypatch)
    choose_fast_path(monkeypatch, request.param)
    return install_driver(monkeypatch)


def _loaded(source: str, name: str, **options):
    return intentc.load(source, name, target="cuda", arch="sm_90", **options)


def _code(work, **arguments) -> str:
    with pytest.raises(intentc.DiagnosticError) as error:
        work(**arguments)
    return error.value.diagnostics[0].code


def _bound_words(kernel, arguments: dict, fake_driver) -> list[int]:
    """The words of the call bound and checked in full (the fast paths' tables emptied)."""
    kernel.runner.seen.clear()
    binds = len(fake_driver.binds)
    kernel(**arguments)
    assert len(fake_driver.binds) == binds + 1
    return fake_driver.launches[-1][3]


LAYOUTS = {
    "contiguous": lambda a: a[0:8],
    "offset": lambda a: a[3:11],
    "strided": lambda a: a[1:17:2],
    "reversed": lambda a: a[10:2:-1],
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_new_pointers_with_a_seen_layout_launch_the_words_a_full_binding_gives(fake_driver, layout):
    kernel = _loaded(ACCUMULATE, "acc")
    view = LAYOUTS[layout]
    first, second = np.zeros(64, np.float32), np.zeros(80, np.float32)
    kernel(x=FakeTensor(view(first)), y=FakeTensor(first[40:48]))
    calls = [{"x": FakeTensor(view(second)), "y": FakeTensor(second[40:48])},
             {"x": FakeTensor(view(second[16:])), "y": FakeTensor(first[32:40])}]
    for arguments in calls:
        binds = len(fake_driver.binds)
        kernel(**arguments)
        assert len(fake_driver.binds) == binds, "a layout seen before is not bound again"
        assert fake_driver.launches[-1][3] == _bound_words(kernel, arguments, fake_driver)


def test_every_change_but_the_pointers_is_bound_and_checked_again(fake_driver):
    """A seen layout on new memory binds nothing; each other change binds (and, where
    illegal, reports the interpreter's diagnostic)."""
    kernel = _loaded(ACCUMULATE, "acc")
    base, other = np.zeros(64, np.float32), np.zeros(64, np.float32)
    tensor = FakeTensor
    kernel(x=tensor(base[0:8]), y=tensor(base[32:40]))
    kernel(x=tensor(other[0:8]), y=tensor(other[32:40]))                 # new pointers: the template
    assert len(fake_driver.binds) == 1
    illegal = {
        "R0109": {"x": tensor(other[0:8]), "y": tensor(other[4:12])},           # offset: aliasing a noalias view
        "R0105": {"x": tensor(other[0:8]), "y": tensor(other[32:39])},          # shape
        "R0103": {"x": tensor(other[0:16].view(np.int32)[0:8]), "y": tensor(other[32:40])},   # dtype
        "R0108": {"x": tensor(other[0:8], ordinal=1), "y": tensor(other[32:40])},   # device
    }
    for code, arguments in illegal.items():
        assert _code(kernel, **arguments) == code, code
    assert len(fake_driver.binds) == 1 + len(illegal)
    kernel(x=tensor(other[8:24:2]), y=tensor(other[32:40]))              # strides: legal, bound once
    assert fake_driver.launches[-1][3][3] == 2                           # x's stride word
    kernel(x=tensor(base[8:24:2]), y=tensor(base[32:40]))                # that layout on other memory: templated
    kernel(y=tensor(base[32:40]), x=tensor(base[0:8]))                   # other names' order: bound
    assert len(fake_driver.binds) == 1 + len(illegal) + 2


def test_scalars_are_part_of_the_layout(fake_driver):
    kernel = _loaded(SCALE, "scale")
    x, y = np.zeros(16, np.float32), np.zeros(16, np.float32)
    kernel(x=FakeTensor(x[0:8]), t=0.5, y=FakeTensor(y[0:8]))
    kernel(x=FakeTensor(x[8:16]), t=0.5, y=FakeTensor(y[8:16]))          # new pointers, same scalar
    assert len(fake_driver.binds) == 1
    for value in (0.25, -0.0, 1.0, 1, np.float32(0.5)):                # value, bits and kind
        kernel(x=FakeTensor(x[8:16]), t=value, y=FakeTensor(y[8:16]))
        assert fake_driver.launches[-1][3][5] == np.float32(value).view(np.uint32), value   # t's word
    assert len(fake_driver.binds) == 1 + 5
    assert _code(lambda: kernel(x=FakeTensor(x[0:8]), t=1e39, y=FakeTensor(y[0:8]))) == "R0103"   # overflow (§3)


def test_the_alignment_fact_is_checked_on_new_pointers(fake_driver):
    kernel = _loaded(ACCUMULATE, "acc", facts={"aligned16": ["x"]})
    base = np.zeros(64, np.float32)
    start = (-base.ctypes.data % 16) // 4                                # an element on a 16-byte boundary
    kernel(x=FakeTensor(base[start:start + 8]), y=FakeTensor(base[40:48]))
    kernel(x=FakeTensor(base[start + 4:start + 12]), y=FakeTensor(base[40:48]))     # aligned: templated
    assert len(fake_driver.binds) == 1
    assert _code(lambda: kernel(x=FakeTensor(base[start + 1:start + 9]), y=FakeTensor(base[40:48]))) == "R0108"


def test_a_staged_kernel_has_scratch_memory_per_stream(fake_driver):
    """Two launches of one staged call on two streams may run at once: each stream gets its
    own scratch; launches on one stream (in order) share it."""
    kernel = _loaded(CUMSUM, "cumsum")
    assert kernel.launch_config.stages, "cumsum is a staged program"
    x, y = np.zeros(4096, np.float32), np.zeros(4096, np.float32)
    for stream in (5, 6, 5):
        kernel(x=FakeTensor(x), y=FakeTensor(y), stream=stream)
    stages = len(kernel.launch_config.stages)
    scratch = {launch[2]: launch[3][-2] for launch in fake_driver.launches}     # the word before status
    assert len(fake_driver.launches) == 3 * stages and len(fake_driver.binds) == 1
    assert scratch[5] != scratch[6]
    assert {launch[3][-2] for launch in fake_driver.launches if launch[2] == 5} == {scratch[5]}


def test_a_template_sets_one_launch_a_thread_and_allocates_nothing(fake_driver):
    """New-memory calls reuse their thread's launch of the template (the driver copies the
    parameters during the launch); another thread has its own."""
    from concurrent.futures import ThreadPoolExecutor
    kernel = _loaded(ACCUMULATE, "acc")
    memory = np.zeros(256, np.float32)
    kernel(x=FakeTensor(memory[0:8]), y=FakeTensor(memory[8:16]))

    def new_memory_call(start: int):
        call = {"x": FakeTensor(memory[start:start + 8]), "y": FakeTensor(memory[start + 8:start + 16])}
        launch = kernel.runner.seen.find(call)
        return launch, launch.block[0]
    first, first_x = new_memory_call(32)
    second, second_x = new_memory_call(64)
    assert first is second and (first_x, second_x) == (memory[32:].ctypes.data, memory[64:].ctypes.data)
    with ThreadPoolExecutor(1) as pool:
        other, _ = pool.submit(new_memory_call, 96).result()
    assert other is not first and len(fake_driver.binds) == 1


@pytest.mark.parametrize("array", [FakeGpuArray, FakeDLPackArray])
def test_other_gpu_arrays_and_scalars_take_the_new_memory_path_too(fake_driver, array):
    """`__cuda_array_interface__` arrays (CuPy) and DLPack-only ones (JAX), beside a torch
    tensor and a scalar: new memory with a seen layout binds nothing and gets a full binding's
    words; a change of layout or scalar, or memory overlapping a noalias view, is bound again."""
    kernel = _loaded(ACCUMULATE.replace("%x: view<f32, [%N], in>", "%x: view<f32, [%N], in>, %t: f32"), "acc")
    first, second = np.zeros(64, np.float32), np.zeros(64, np.float32)
    kernel(x=array(first[1:17:2]), t=2.0, y=FakeTensor(first[40:48]))
    calls = [{"x": array(first[1:17:2]), "t": 2.0, "y": FakeTensor(first[40:48])},        # seen
             {"x": array(second[1:17:2]), "t": 2.0, "y": FakeTensor(second[40:48])},      # new memory
             {"x": array(second[3:19:2]), "t": 2.0, "y": FakeTensor(first[32:40])}]       # new memory
    for arguments in calls:
        binds = len(fake_driver.binds)
        kernel(**arguments)
        assert len(fake_driver.binds) == binds, "a call or layout seen before is not bound again"
        assert fake_driver.launches[-1][3] == _bound_words(kernel, arguments, fake_driver)
    changed = [{"x": array(second[0:16:2]), "t": 2.5, "y": FakeTensor(second[40:48])},    # scalar
               {"x": array(second[0:8]), "t": 2.0, "y": FakeTensor(second[40:48])}]       # strides
    for arguments in changed:
        binds = len(fake_driver.binds)
        kernel(**arguments)
        assert len(fake_driver.binds) == binds + 1
    assert _code(kernel, x=array(second[40:56:2]), t=2.0, y=FakeTensor(second[44:52])) == "R0109"


def test_a_kernel_fed_by_tensor_maps_encodes_them_again_for_new_memory(fake_driver, monkeypatch):
    """wgmma fed by the copy engine (`mma.tma`): its maps hold the views' addresses, so new
    memory with a seen layout gets maps of its own (not a full binding), kept with that call's
    launch for its next calls; a view the copy engine cannot describe there is bound in full
    (the cp.async fallback entry)."""
    import ctypes

    from intentc.runtime import tensor_maps

    def encode(request):        # the driver's encoding stood in for: what it was asked for
        return np.array([request.address, *request.extents, request.pitch], np.uint64).tobytes().ljust(128, b"\0")
    monkeypatch.setattr(tensor_maps, "encode", encode)
    kernel = intentc.load(Path(__file__).parents[2] / "ir_samples" / "tiled_matmul.kir", "matmul_tiled",
                          target="cuda", arch="sm_90a")
    tma = kernel.launch_config.mma["tma"]
    memory = [np.zeros(128 * 64 * 2 + 8, np.float16) for _ in range(3)]

    def operands(block, start=0):
        return {"a": FakeTensor(block[start:start + 128 * 64].reshape(128, 64)),
                "b": FakeTensor(block[start + 128 * 64:start + 2 * 128 * 64].reshape(64, 128)),
                "c": FakeTensor(np.zeros((128, 128), np.float16))}

    def maps_of(words) -> list[int]:       # each map's address, as `encode` wrote it
        maps = np.frombuffer(ctypes.string_at(words[tma["word"]], 128 * len(tma["maps"])), np.uint64)
        return [int(maps[16 * i]) for i in range(len(tma["maps"]))]
    kernel(**operands(memory[0]))
    assert len(fake_driver.binds) == 1
    new = operands(memory[1])
    kernel(**new)
    assert len(fake_driver.binds) == 1, "new memory, a seen layout: not bound"
    words = fake_driver.launches[-1][3]
    assert maps_of(words) == [new["a"].data_ptr(), new["b"].data_ptr()]
    bound = _bound_words(kernel, new, fake_driver)
    assert [w for i, w in enumerate(words) if i != tma["word"]] == [w for i, w in enumerate(bound) if i != tma["word"]]
    other = operands(memory[2])
    kernel(**other)                                                      # new memory: maps of its own, kept
    kernel(**other)
    assert fake_driver.launches[-1][3] == fake_driver.launches[-2][3], "the same launch, maps and all"
    assert maps_of(fake_driver.launches[-1][3]) == [other["a"].data_ptr(), other["b"].data_ptr()]
    kernel(**new)                                                        # still the full binding's launch
    assert fake_driver.launches[-1][3] == bound
    binds = len(fake_driver.binds)
    kernel(**operands(memory[2], start=1))                               # 2 bytes in: no maps
    assert len(fake_driver.binds) == binds + 1


def test_python_numbers_round_to_nearest_even_and_out_of_range_ones_are_refused_every_time(fake_driver):
    """§3's literal rules on the fast paths too: a number is rounded to the nearest f32 (ties
    to even, ints too); one past its range is R0103 at every call (a refused call is never
    remembered)."""
    kernel = _loaded(SCALE, "scale")
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    for value, word in ((0.1, np.float32(0.1)), (1 + 2.0 ** -24, np.float32(1.0)),            # a tie: to even
                        (1 + 3 * 2.0 ** -24, np.float32(1 + 2.0 ** -22)), (2 ** 24 + 1, np.float32(2 ** 24))):
        for _ in range(2):
            kernel(x=FakeTensor(x), t=value, y=FakeTensor(y))
            assert fake_driver.launches[-1][3][5] == word.view(np.uint32), value
    for value in (10 ** 400, 1e39, -1e39):
        for _ in range(2):
            assert _code(kernel, x=FakeTensor(x), t=value, y=FakeTensor(y)) == "R0103", value


def test_with_tma_templates_off_new_memory_for_a_tensor_map_kernel_is_bound_in_full(fake_driver, monkeypatch):
    from intentc.runtime import tensor_maps
    monkeypatch.setattr(tensor_maps, "encode", lambda request: bytes(128))
    monkeypatch.setenv("INTENTC_LAUNCH_OFF", ",".join(filter(None, (os.environ.get("INTENTC_LAUNCH_OFF"), "tma_templates"))))
    kernel = intentc.load(Path(__file__).parents[2] / "ir_samples" / "tiled_matmul.kir", "matmul_tiled",
                          target="cuda", arch="sm_90a")
    for block in (np.zeros(2 * 128 * 64, np.float16), np.zeros(2 * 128 * 64, np.float16)):
        kernel(a=FakeTensor(block[:128 * 64].reshape(128, 64)), b=FakeTensor(block[128 * 64:].reshape(64, 128)),
               c=FakeTensor(np.zeros((128, 128), np.float16)))
    assert len(fake_driver.binds) == 2
