"""The CTA mapping (docs/gpu.md): which kernels get it and what their PTX holds (here, no
GPU needed), and on the GPU the interpreter's results for every extent around the warp and
CTA sizes; plus the approximate instructions, device-scope atomics and atomic scatters."""
from __future__ import annotations

import json

import numpy as np
import pytest

from differential import assert_close, assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from sample_paths import sample_text

EXTENTS = [0, 1, 31, 33, 1023, 1025, 5000]
CTA_SAMPLES = [("vector_add", "vector_add"), ("row_softmax", "row_softmax"), ("row_sum", "row_sum_f16"),
               ("row_sum", "row_sum_i8"), ("layernorm", "layernorm"), ("saxpy", "saxpy")]


def _ptx(sample: str, kernel: str, text: str | None = None) -> tuple[str, dict]:
    from intentc.driver import compile_kernel
    artifacts = compile_kernel(text or sample_text(sample), kernel, "ptx", "sm_90").artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("sample,kernel", CTA_SAMPLES)
def test_cta_mapping_applies_to_the_target_samples(sample, kernel):
    ptx, launch = _ptx(sample, kernel)
    assert launch["mapping"] == "cta" and launch["block"][0] >= 32
    assert "malloc" not in ptx                      # nothing materialized per thread


@pytest.mark.parametrize("sample,kernel", [("row_softmax", "row_softmax"), ("row_sum", "row_sum_i8"),
                                           ("layernorm", "layernorm")])
def test_reductions_use_warp_shuffles_and_shared_memory(sample, kernel):
    ptx, _ = _ptx(sample, kernel)
    assert "shfl.sync.bfly" in ptx and ".shared" in ptx and "bar.sync" in ptx


@pytest.mark.parametrize("sample,kernel,reason", [
    ("cumsum", "row_cumsum", "scans keep source order"),
    ("histogram_masked", "histogram256", "scatter_reduce"),
    ("atomic_counter", "count_above", "atomics"),
])
def test_other_kernels_fall_back_to_one_thread_per_iteration(sample, kernel, reason):
    _, launch = _ptx(sample, kernel)
    assert launch["mapping"] in ("grid-stride", "single-thread"), reason


def test_approximate_instructions_only_for_approximate_ops():
    approx, _ = _ptx("fast_activations_approx", "fast_silu_gelu")
    assert "ex2.approx" in approx and "tanh.approx.f32" in approx
    for sample, kernel in [("row_softmax", "row_softmax"), ("special_math", None)]:
        text = sample_text(sample)
        name = kernel or text.split("kernel @", 1)[1].split("(", 1)[0]
        exact, _ = _ptx(sample, name, text)
        assert "ex2.approx" not in exact and "tanh.approx" not in exact and "div.approx" not in exact


def test_atomics_and_scatters_are_device_scoped_read_modify_writes():
    ptx, _ = _ptx("histogram_masked", "histogram256")
    assert "atom.add" in ptx or "red.add" in ptx or "atom.global.add" in ptx
    assert ".sys" not in ptx                        # device (gpu) scope, not system scope


# ---- on the GPU -------------------------------------------------------------------------------------
def _rows(rng, rows, cols):
    return rng.standard_normal((rows, cols)).astype(np.float32)


@requires_gpu()
@pytest.mark.parametrize("cols", EXTENTS)
def test_softmax_every_row_extent(cols):
    rng = np.random.default_rng(cols)
    rows = 3 if cols else 0
    x = _rows(rng, rows, cols)
    got, expected = on_gpu_and_interp(sample_text("row_softmax"), "row_softmax", {"x": x, "t": np.float32(0.7)})
    assert_close(got["y"], expected["y"], 1e-6)


@requires_gpu()
@pytest.mark.parametrize("cols", EXTENTS)
def test_row_sum_and_layernorm_every_row_extent(cols):
    rng = np.random.default_rng(cols + 1)
    x = _rows(rng, 4, cols)
    got, expected = on_gpu_and_interp(sample_text("row_sum"), "row_sum_i8",
                                      {"q": rng.integers(-128, 128, (4, cols), dtype=np.int8)})
    assert_same_bits(got["y"], expected["y"])
    if cols == 0:
        return                                       # layernorm divides by N: rows are non-empty
    inputs = {"x": x, "gamma": _rows(rng, 1, cols)[0], "beta": _rows(rng, 1, cols)[0], "eps": np.float32(1e-5)}
    got, expected = on_gpu_and_interp(sample_text("layernorm"), "layernorm", inputs)
    for name in ("y", "mean_out", "rstd_out"):
        assert_close(got[name], expected[name], 1e-5, name)


@requires_gpu()
@pytest.mark.parametrize("n", EXTENTS)
def test_saxpy_every_extent(n):
    rng = np.random.default_rng(n + 2)
    x, y = _rows(rng, 1, n)[0], _rows(rng, 1, n)[0]
    got, expected = on_gpu_and_interp(sample_text("saxpy"), "saxpy", {"a": np.float32(1.5), "x": x, "y": y})
    assert_close(got["y"], expected["y"], 1e-6)       # a*x+y is one fma where fusion-legality allows it
