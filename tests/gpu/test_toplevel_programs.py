"""Top-level programs and iterations with loops and ifs that run per coordinate, and
grid-stride kernels whose prologue reads views (docs/gpu.md): the mapping each gets, as
launch.json records it (no GPU needed), and on the GPU the interpreter's results for
extents 0, 1, odd, larger than a CTA and larger than the grid."""
from __future__ import annotations

import json

import numpy as np
import pytest

from differential import assert_close, assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from region_programs import MIX, WRITES_IN_LOOP, mix_inputs
from sample_paths import sample_text

# larger than 132 SMs x 8 CTAs x 256 threads, so threads take several coordinates
EXTENTS = [0, 1, 33, 1000, 600_001]


def _compiled(text: str, kernel: str, specialization: dict | None = None) -> tuple[str, dict]:
    from intentc.driver import compile_kernel
    artifacts = compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("text,kernel,mapping,regions", [
    (sample_text("newton_rsqrt_constexpr"), "newton_rsqrt", "grid", ["yn"]),
    (MIX, "mix", "grid", ["f", "h"]),
    (sample_text("activation_enum"), "bias_act", "cta", ["other", "out"]),
])
def test_element_wise_regions_run_per_coordinate(text, kernel, mapping, regions):
    ptx, launch = _compiled(text, kernel)
    assert launch["mapping"] == mapping and launch["per_coordinate"] == regions
    assert "malloc" not in ptx                     # no tensor carried in per-thread memory


def test_bias_act_specialized_gets_the_register_form():
    _, launch = _compiled(sample_text("activation_enum"), "bias_act", {"extents": {"N": 1024}})
    assert launch["mapping"] == "cta" and launch["slots"] > 0


def test_a_loop_with_effects_stays_in_order_on_one_thread_and_says_why():
    _, launch = _compiled(WRITES_IN_LOOP, "writes")
    assert launch["per_coordinate"] == [] and launch["mapping"] == "single-thread"
    assert launch["reason"].startswith("`loop` at 8:3") and "effects outside `parallel`" in launch["reason"]


@pytest.mark.parametrize("sample,kernel,mapping,views", [("q4k_q8k_matvec", "q4k_q8k_matvec", "warp-rows", ["x"])])
def test_a_prologue_that_reads_views_reads_them_at_each_use(sample, kernel, mapping, views):
    _, launch = _compiled(sample_text(sample), kernel)
    assert launch["mapping"] == mapping and launch["lazy_views"] == views


@requires_gpu()
@pytest.mark.parametrize("n", EXTENTS)
@pytest.mark.parametrize("rounds", [0, 1, 4])
def test_a_loop_with_an_if_per_coordinate_on_the_gpu(n, rounds):
    got, expected = on_gpu_and_interp(MIX, "mix", mix_inputs(n, np.random.default_rng(n)), {"R": rounds})
    for name in expected:
        assert_same_bits(got[name], expected[name], name)


@requires_gpu()
@pytest.mark.parametrize("n", EXTENTS)
@pytest.mark.parametrize("iters", [0, 1, 3])
def test_newton_rsqrt_on_the_gpu(n, iters):
    x = np.random.default_rng(n + iters).uniform(1e-3, 1e3, n).astype(np.float32)
    got, expected = on_gpu_and_interp(sample_text("newton_rsqrt_constexpr"), "newton_rsqrt", {"x": x},
                                      {"ITERS": iters})
    if iters == 0:
        assert_same_bits(got["y"], expected["y"], "y")      # the bit trick alone: integer ops
    else:                                                   # fusion-legal FMAs round once
        np.testing.assert_allclose(got["y"], expected["y"], rtol=1e-6)


@requires_gpu()
@pytest.mark.parametrize("act", ["relu", "silu", "gelu"])
@pytest.mark.parametrize("m,n,specialize", [(0, 5, False), (1, 1, False), (3, 33, False), (7, 1025, False),
                                            (1100, 40, False), (5, 1024, True), (600, 333, True)])
def test_bias_act_on_the_gpu(act, m, n, specialize):
    rng = np.random.default_rng(m * 7 + n)
    inputs = {"x": rng.standard_normal((m, n)).astype(np.float32) * 3,
              "bias": rng.standard_normal(n).astype(np.float32)}
    got, expected = on_gpu_and_interp(sample_text("activation_enum"), "bias_act", inputs, {"act": act},
                                      extents={"N": n} if specialize else None)
    if act == "relu":
        assert_same_bits(got["y"], expected["y"], "y")
    else:                                                   # libdevice f32 exp/erf bounds
        assert_close(got["y"], expected["y"], 1e-5, "y")
