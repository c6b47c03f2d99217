"""Layout facts inferred at each call (`intentc.load(..., launch_facts=True)`, the default;
docs/runtime.md, "Launch facts"): the kernel's own compile assumes every view dense and
16-byte aligned; a call whose views break a fact runs the variant compiled (once) for the
facts they hold, on every path (a full binding, a seen call, new memory of a seen layout);
no call runs code assuming a fact its views break. On the cpu target with numpy views
offset by one element, and on the fake driver of `fake_cuda.py` for the launch fast paths."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_cuda import FakeGpuArray, FakeTensor, choose_fast_path, install_driver, install_torch

import intentc
from intentc.interp.launch import View
from intentc.runtime.binding import call_facts

SAMPLES = Path(__file__).parents[2] / "ir_samples"
ADD = (SAMPLES / "vector_add.kir").read_text()
CUMSUM = (SAMPLES / "cumsum.kir").read_text()
ALL = ("x", "y", "z")


def aligned_floats(n: int, shift: int = 0) -> np.ndarray:
    """n float32 zeros whose first lies `shift` elements past a 16-byte boundary."""
    block = np.zeros(n + 8, np.float32)
    start = (-block.ctypes.data % 16) // 4
    return block[start + shift:start + shift + n]


def facts_of(kernel) -> dict:
    spec = kernel.specialization
    return {fact: getattr(spec, fact) for fact in ("unit_stride", "aligned16", "contiguous")}


def test_the_facts_a_call_holds():
    from intentc.parse import parse
    add = parse(ADD).find("vector_add")
    dense, shifted = aligned_floats(64), aligned_floats(64, 1)
    assert call_facts(add, {"x": dense, "y": dense, "z": dense}) == dict.fromkeys(
        ("unit_stride", "aligned16", "contiguous"), ALL)
    held = call_facts(add, {"x": shifted, "y": aligned_floats(128)[::2], "z": dense})
    assert held == {"unit_stride": ("x", "z"), "aligned16": ("y", "z"), "contiguous": ("x", "z")}
    past_its_base = View(np.zeros(8, np.float32), 4, (1,), (8,))     # reaches past its allocation
    assert call_facts(add, {"x": past_its_base})["contiguous"] == ()
    assert call_facts(add, {"x": [1.0, 2.0]})["contiguous"] == ("x",)     # a list: numpy's array of it


def test_aligned_dense_calls_run_the_own_compile_and_shifted_ones_a_variant():
    kernel = intentc.load(ADD, "vector_add")
    assert facts_of(kernel.runner) == dict.fromkeys(("unit_stride", "aligned16", "contiguous"), ALL)
    rng = np.random.default_rng(0)
    for shift in (0, 1, 0, 1, 2):
        x, y, z = (aligned_floats(1000, shift) for _ in range(3))
        x[:], y[:] = rng.standard_normal(1000), rng.standard_normal(1000)
        kernel(x=x, y=y, z=z)
        np.testing.assert_array_equal(z, x + y)
    (variant,) = kernel._variants.values()        # shifts 1 and 2 hold the same facts: one compile
    assert facts_of(variant) == {"unit_stride": ALL, "aligned16": (), "contiguous": ALL}


def test_a_compile_assuming_a_fact_never_binds_a_view_that_breaks_it():
    kernel = intentc.load(ADD, "vector_add")
    x, y, z = (aligned_floats(100, 1) for _ in range(3))
    with pytest.raises(intentc.DiagnosticError) as error:
        kernel.runner.launch(None, x=x, y=y, z=z)          # the own compile, bound directly
    assert error.value.diagnostics[0].code == "R0108" and "16-byte alignment" in error.value.diagnostics[0].message


def test_strided_views_get_their_facts_and_callers_facts_still_bind():
    kernel = intentc.load(CUMSUM, "row_cumsum", facts={"unit_stride": ["x"]})
    x = np.random.default_rng(1).standard_normal((6, 20)).astype(np.float32)
    y = np.zeros((6, 40), np.float32)[:, ::2]            # strided output: not contiguous, no unit stride
    kernel(x=x, y=y)
    np.testing.assert_allclose(y, np.cumsum(x, axis=1), rtol=1e-5, atol=1e-5)
    (variant,) = kernel._variants.values()
    assert facts_of(variant)["contiguous"] == ("x",) and facts_of(variant)["unit_stride"] == ("x",)
    with pytest.raises(intentc.DiagnosticError) as error:     # the caller's fact is a promise: refused
        kernel(x=np.zeros((6, 40), np.float32)[:, ::2], y=np.zeros((6, 20), np.float32))
    assert error.value.diagnostics[0].code == "R0108"


def test_without_launch_facts_the_code_assumes_only_the_callers():
    kernel = intentc.load(ADD, "vector_add", launch_facts=False)
    assert facts_of(kernel.runner) == {"unit_stride": (), "aligned16": (), "contiguous": ()}
    x, y, z = (aligned_floats(100, 1) for _ in range(3))
    kernel(x=x, y=y, z=z)
    assert not kernel._variants


@pytest.mark.parametrize("path", ["native", "python"])
def test_new_memory_that_breaks_a_fact_is_bound_to_its_variant(monkeypatch, path):
    """A layout seen before, on new memory 4 bytes off alignment: the template's alignment
    re-check fails, the call is bound in full and runs the variant without `aligned16`."""
    install_torch(monkeypatch)
    choose_fast_path(monkeypatch, path)
    fake = install_driver(monkeypatch)
    kernel = intentc.load(ADD, "vector_add", target="cuda", arch="sm_90")
    for wrap in (FakeTensor, FakeGpuArray):
        for shift in (0, 0, 1, 1, 0):
            arrays = {name: wrap(aligned_floats(256, shift)) for name in ALL}
            kernel(**arrays)
            words = fake.launches[-1][3]
            assert words[0] % 16 == 4 * shift          # x's address word: the call's own memory
    (variant,) = kernel._variants.values()
    assert facts_of(variant)["aligned16"] == () and variant.abi.slots == kernel.runner.abi.slots


def _layouts(shape: tuple[int, ...], dtype) -> dict:
    """numpy arrays of `shape`: dense and aligned, one element off alignment, every other column."""
    rng = np.random.default_rng(7)
    count = int(np.prod(shape))

    def shifted():
        block = np.zeros(count + 16, dtype)
        start = (-block.ctypes.data % 16) // block.itemsize + 1
        return block[start:start + count].reshape(shape)
    layouts = {"dense": lambda: np.zeros(shape, dtype), "shifted": shifted,
               "strided": lambda: np.zeros((*shape[:-1], 2 * shape[-1]), dtype)[..., ::2]}
    return {name: (lambda make=make: _filled(make(), rng)) for name, make in layouts.items()}


def _filled(array: np.ndarray, rng) -> np.ndarray:
    array[...] = rng.standard_normal(array.shape).astype(array.dtype)
    return array


@pytest.mark.parametrize(("text", "kernel", "shape", "out_shape", "dtype"), [
    (ADD, "vector_add", (300,), (300,), np.float32),
    ((SAMPLES / "row_sum.kir").read_text(), "row_sum_f16", (5, 64), (5,), np.float16),
    (CUMSUM, "row_cumsum", (5, 64), (5, 64), np.float32)], ids=["vector_add", "row_sum_f16", "cumsum"])
def test_every_layout_runs_its_variant_and_matches_the_interpreter(text, kernel, shape, out_shape, dtype):
    loaded = intentc.load(text, kernel)
    views = [p.name for p in loaded.kernel.params if getattr(p.type, "direction", None)]
    for layout in ("dense", "shifted", "strided", "dense"):
        arrays = {name: _layouts(shape, dtype)[layout]() for name in views[:-1]}
        out = _layouts(out_shape, np.float32)[layout]()
        loaded(**arrays, **{views[-1]: out})
        expected = intentc.run(text, kernel, arrays)[views[-1]]
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5, err_msg=layout)
    assert len(loaded._variants) == 2        # shifted and strided: each its facts' compile


@pytest.mark.parametrize("shape,strides", [((0, 3), (0, 0)), ((4, 0), (0, 0)), ((0,), (0,))])
def test_an_empty_view_holds_every_fact_whatever_strides_its_array_reports(shape, strides):
    """CUDA array interfaces report stride 0 for empty tensors (the H200 suite, session 8):
    an empty view reaches no element, so no fact it was compiled for can be broken."""
    from types import SimpleNamespace

    from intentc.runtime import view_facts
    empty = SimpleNamespace(address=4, offset=0, size=0, strides=strides, shape=shape)
    assert view_facts.holds(empty, 4) == ("unit_stride", "aligned16", "contiguous")
    assert not view_facts.unit_stride(SimpleNamespace(address=0, offset=0, size=6, strides=(0, 0), shape=(2, 3)))
