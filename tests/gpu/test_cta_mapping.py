"""The CTA mapping (docs/gpu.md): which kernels get it and what their PTX holds (here, no
GPU needed), and on the GPU the interpreter's results for every extent around the warp and
CTA sizes; plus the approximate instructions, device-scope atomics and atomic scatters."""
from __future__ import annotations

import json
import re

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


def test_approximate_instructions_only_for_approximate_ops():
    approx, _ = _ptx("fast_activations_approx", "fast_silu_gelu")
    assert "ex2.approx" in approx and "tanh.approx.f32" in approx
    for sample, kernel in [("row_softmax", "row_softmax"), ("special_math", None)]:
        text = sample_text(sample)
        name = kernel or text.split("kernel @", 1)[1].split("(", 1)[0]
        exact, _ = _ptx(sample, name, text)
        # libdevice's accurate f32 functions use `ex2.approx.ftz` on a reduced argument
        # (never subnormal) internally; the approximate modes' own forms must not appear.
        assert "ex2.approx.f32" not in exact and "tanh.approx" not in exact and "div.approx" not in exact


def test_histograms_count_in_shared_memory_then_merge_atomically():
    ptx, launch = _ptx("histogram_masked", "histogram256")
    assert launch["mapping"] == "cta" and "atom.shared.add" in ptx and "bar.sync" in ptx


def test_atomics_and_scatters_are_device_scoped_read_modify_writes():
    ptx, _ = _ptx("histogram_masked", "histogram256")
    assert "atom.add" in ptx or "red.add" in ptx or "atom.global.add" in ptx or "red.relaxed.gpu.global.add" in ptx
    assert ".sys" not in ptx                        # device (gpu) scope, not system scope


# ---- on the GPU -------------------------------------------------------------------------------------
def _rows(rng, rows, cols):
    return rng.standard_normal((rows, cols)).astype(np.float32)


def _check_layernorm(rng, x, extents=None):
    cols = x.shape[1]
    inputs = {"x": x, "gamma": _rows(rng, 1, cols)[0], "beta": _rows(rng, 1, cols)[0], "eps": np.float32(1e-5)}
    got, expected = on_gpu_and_interp(sample_text("layernorm"), "layernorm", inputs, extents=extents)
    for name in ("y", "mean_out", "rstd_out"):
        assert_close(got[name], expected[name], 1e-5, name)


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
    _check_layernorm(rng, x)


@requires_gpu()
@pytest.mark.parametrize("n", EXTENTS)
def test_saxpy_every_extent(n):
    rng = np.random.default_rng(n + 2)
    x, y = _rows(rng, 1, n)[0], _rows(rng, 1, n)[0]
    got, expected = on_gpu_and_interp(sample_text("saxpy"), "saxpy", {"a": np.float32(1.5), "x": x, "y": y})
    assert_close(got["y"], expected["y"], 1e-6)       # a*x+y is one fma where fusion-legality allows it


# ---- the register form (static extents: specialized, or literal) -------------------------------------
def _specialized(sample: str, kernel: str, extents: dict) -> tuple[str, dict]:
    from intentc.driver import compile_kernel
    from intentc.options import Specialization
    artifacts = compile_kernel(sample_text(sample), kernel, "ptx", "sm_90",
                               specialization=Specialization(extents=extents)).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("sample,kernel,extents,threads,slots", [
    ("row_softmax", "row_softmax", {"N": 1024}, 64, 16),     # 3 kept tensors: 32 a thread, T at least 64
    ("row_softmax", "row_softmax", {"N": 16384}, 512, 32),
    ("row_softmax", "row_softmax", {"N": 1000}, 64, 16),     # a partial last chunk
    ("row_sum", "row_sum_f16", {"N": 4096}, 128, 32),        # the row length comes through `dim`
    ("vector_add", "vector_add", {}, 256, 4),                 # literal extents; cheap independent coordinates
    ("cumsum", "row_cumsum", {"N": 4096}, 256, 16),          # a scan keeps more
    ("philox_dropout", "dropout", {"N": 8192}, 1024, 8),     # Philox unrolled per coordinate keeps most
])
def test_register_form_when_every_iteration_tensor_has_one_static_shape(sample, kernel, extents, threads, slots):
    ptx, launch = _specialized(sample, kernel, extents)
    assert (launch["mapping"], launch["block"][0], launch["slots"]) == ("cta", threads, slots)
    assert re.search(rf"\.maxntid {threads}\b", ptx)   # ptxas fits registers to the compiled CTA size
    assert "malloc" not in ptx and ".local" not in ptx  # the slots are registers, not stack (in PTX)


def test_view_accesses_are_predicated_instructions_not_branches():
    ptx, _ = _ptx("vector_add", "vector_add")
    assert re.search(r"@%p\d+ ld\.global\.f32", ptx) and re.search(r"@%p\d+ st\.global\.f32", ptx)


def test_dynamic_extents_keep_the_dynamic_form():
    _, launch = _specialized("row_softmax", "row_softmax", {})
    assert launch["mapping"] == "cta" and launch["slots"] == 0


def test_scans_are_block_scans_in_the_register_form():
    ptx, launch = _specialized("cumsum", "row_cumsum", {"N": 1000})
    assert launch["mapping"] == "cta" and "shfl.sync.up" in ptx and "bar.sync" in ptx


REGISTER_EXTENTS = [1, 31, 33, 1000, 1024, 1025, 5000]


@requires_gpu()
@pytest.mark.parametrize("cols", REGISTER_EXTENTS)
def test_register_form_softmax_and_layernorm(cols):
    rng = np.random.default_rng(cols + 10)
    x = _rows(rng, 5, cols)
    got, expected = on_gpu_and_interp(sample_text("row_softmax"), "row_softmax", {"x": x, "t": np.float32(0.7)},
                                      extents={"N": cols})
    assert_close(got["y"], expected["y"], 1e-6)
    _check_layernorm(rng, x, {"N": cols})


@requires_gpu()
@pytest.mark.parametrize("cols", REGISTER_EXTENTS)
def test_register_form_row_sums_bit_exact_for_integers(cols):
    rng = np.random.default_rng(cols + 11)
    q = rng.integers(-128, 128, (6, cols), dtype=np.int8)
    got, expected = on_gpu_and_interp(sample_text("row_sum"), "row_sum_i8", {"q": q}, extents={"N": cols})
    assert_same_bits(got["y"], expected["y"])


def _assert_prefix_sums_close(got, expected, x):
    """Two f32 prefix sums of different parenthesizations (§6 allows any that keeps source
    order) each lie within (k - 1)·u·Σ|x_i| of the exact k-th prefix (u = 2^-24), so they
    differ by at most twice that; NaN prefixes agree exactly."""
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(got), nan)
    k = np.arange(1, x.shape[-1] + 1)
    bound = 2 * (k - 1) * 2.0 ** -24 * np.cumsum(np.abs(np.nan_to_num(x.astype(np.float64))), -1)
    error = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    assert np.all(error[~nan] <= bound[~nan]), error.max()


@requires_gpu()
@pytest.mark.parametrize("cols", REGISTER_EXTENTS)
def test_register_form_cumsum_keeps_every_prefix(cols):
    rng = np.random.default_rng(cols + 12)
    x = _rows(rng, 3, cols)
    x[0, cols // 2] = np.nan if cols > 2 else x[0, 0]          # NaN propagates to every later prefix
    got, expected = on_gpu_and_interp(sample_text("cumsum"), "row_cumsum", {"x": x}, extents={"N": cols})
    _assert_prefix_sums_close(got["y"], expected["y"], x)
    ints = rng.integers(-1000, 1000, (3, cols)).astype(np.int32)
    text = sample_text("cumsum").split("// @exclusive_offsets")[0].replace("f32", "i32")
    exclusive = text.replace("kind = sum}", "exclusive = true, kind = sum}")
    for source in (text, exclusive):
        got, expected = on_gpu_and_interp(source, "row_cumsum", {"x": ints}, extents={"N": cols})
        assert_same_bits(got["y"], expected["y"])


@requires_gpu()
@pytest.mark.parametrize("n", [0, 1, 2047, 2048, 2049, 100_003])
@pytest.mark.parametrize("bins", [256, 1024])
def test_shared_memory_histogram_counts_exactly(n, bins):
    rng = np.random.default_rng(n + bins)
    text = sample_text("histogram_masked").replace("[256]", f"[{bins}]").replace("value = 256", f"value = {bins}")
    values = rng.integers(-8, bins + 40, n).astype(np.int32)
    hist = rng.integers(0, 5, bins).astype(np.int32)           # counts add to what is there
    got, expected = on_gpu_and_interp(text, "histogram256", {"values": values, "hist": hist})
    assert_same_bits(got["hist"], expected["hist"])


@requires_gpu()
@pytest.mark.parametrize("layout", ["strided", "offset by one element"])
def test_vector_groups_fall_back_where_lanes_are_not_contiguous_and_aligned(layout):
    rng = np.random.default_rng(7)
    ints = rng.integers(-1000, 1000, (3, 2 * 1024 + 1)).astype(np.int32)
    x = ints[:, :2048:2] if layout == "strided" else ints[:, 1:1025]
    text = sample_text("cumsum").split("// @exclusive_offsets")[0].replace("f32", "i32")
    got, expected = on_gpu_and_interp(text, "row_cumsum", {"x": x}, extents={"N": 1024})
    assert_same_bits(got["y"], expected["y"])


@requires_gpu()
@pytest.mark.parametrize("cols", REGISTER_EXTENTS)
def test_register_form_philox_dropout_bit_exact(cols):
    rng = np.random.default_rng(cols + 13)
    inputs = {"x": _rows(rng, 3, cols), "seed": np.uint64(99), "offset": 5, "p": np.float32(0.4)}
    got, expected = on_gpu_and_interp(sample_text("philox_dropout"), "dropout", inputs, extents={"N": cols})
    for name in ("y", "keep_out"):
        assert_same_bits(got[name], expected[name], name)
