"""Loops and ifs lowered per coordinate (codegen/llvm/coordinate_region.py) give the
interpreter's results: the lowering is target-independent, so it is checked here on the host
CPU, whose hooks are told to use it for every region the NVPTX mapping would
(`nvptx/cta.per_coordinate_regions`); the GPU runs the same kernels in tests/gpu."""
from __future__ import annotations

import numpy as np
import pytest

from differential import UNFUSED, assert_same_bits, both
from region_programs import MIX, mix_inputs
from sample_paths import sample_text

from intentc.codegen.cpu.hooks import HostHooks
from intentc.codegen.nvptx.cta import per_coordinate_regions
from intentc.parse import parse


@pytest.fixture
def regions_per_coordinate(monkeypatch):
    """Host hooks that lower the given kernel's per-coordinate regions lazily; returns a
    setter taking the kernel text and name, and the regions it found."""
    def use(text: str, kernel: str) -> frozenset[str]:
        found = per_coordinate_regions(parse(text).find(kernel))
        monkeypatch.setattr(HostHooks, "per_coordinate", lambda self, em, op: op.results[0] in found)
        return found
    return use


@pytest.mark.parametrize("rounds", [0, 1, 4])
@pytest.mark.parametrize("n", [0, 1, 37])
def test_a_loop_with_an_if_per_coordinate_gives_the_interpreters_bits(regions_per_coordinate, rounds, n):
    assert regions_per_coordinate(MIX, "mix") == {"h", "f"}
    got, expected = both(MIX, "mix", mix_inputs(n, np.random.default_rng(n)), {"R": rounds})
    for name in expected:
        assert_same_bits(got[name], expected[name], name)


@pytest.mark.parametrize("iters", [0, 3])
def test_newton_rsqrt_per_coordinate_gives_the_interpreters_bits(regions_per_coordinate, iters):
    text = sample_text("newton_rsqrt_constexpr")
    assert regions_per_coordinate(text, "newton_rsqrt") == {"yn"}
    x = np.random.default_rng(iters).uniform(0.01, 100.0, 101).astype(np.float32)
    got, expected = both(text, "newton_rsqrt", {"x": x}, {"ITERS": iters}, UNFUSED)
    assert_same_bits(got["y"], expected["y"], "y")


@pytest.mark.parametrize("act", ["relu", "silu", "gelu"])
def test_an_if_inside_parallel_iterations_per_coordinate(regions_per_coordinate, act):
    text = sample_text("activation_enum")
    assert regions_per_coordinate(text, "bias_act") == {"out", "other"}
    rng = np.random.default_rng(7)
    inputs = {"x": rng.standard_normal((5, 19)).astype(np.float32), "bias": rng.standard_normal(19).astype(np.float32)}
    got, expected = both(text, "bias_act", inputs, {"act": act}, UNFUSED)
    np.testing.assert_allclose(got["y"], expected["y"], rtol=1e-6, atol=1e-6)   # erf/exp: libm vs interpreter
