"""On the GPU: CTA iterations whose slot groups run as a loop of trips
(nvptx/cta_group_loop.py) give the unrolled form's bits, and the interpreter's (bit for bit
where the spec fixes them: Philox, the keep mask; within libdevice's bounds for erf and
exp), at row lengths whose every group is full (the trips) and ones with a partial group
(unrolled)."""
from __future__ import annotations

import numpy as np
import pytest

from differential import assert_close, assert_same_bits
from gpu_required import requires_gpu
from sample_paths import sample_text

from bench.common import attributes
from intentc.api import run
from intentc.codegen.nvptx import cta_group_loop
from intentc.parse import parse
from intentc.runtime.binding import call_facts


def _both_forms(source: str, kernel: str, inputs: dict, constexprs: dict, extents: dict) -> list:
    """[(launch config, outputs)] of the kernel compiled with its slot loops and unrolled, for
    the layout facts the inputs hold (as `intentc.load` compiles: vector groups where proven)."""
    from intentc.runtime.cuda import compile_cuda
    held = call_facts(parse(source).find(kernel), inputs)
    found = []
    for rolled in (True, False):
        with attributes(cta_group_loop, ROLL_GROUPS=rolled, SHARE_PHILOX=rolled):
            compiled = compile_cuda(source, kernel, {"constexprs": constexprs, "extents": extents, **held})
        found.append((compiled.launch_config, compiled(inputs, constexprs)))
    return found


def _check(source, kernel, inputs, constexprs, extents, trips: bool, exact: bool):
    (rolled, got), (unrolled, reference) = _both_forms(source, kernel, inputs, constexprs, extents)
    assert bool(rolled.trip_slots) == trips and not unrolled.trip_slots
    assert (rolled.block, rolled.slots) == (unrolled.block, unrolled.slots)
    expected = run(source, kernel, inputs, constexprs)
    for name in expected:
        assert_same_bits(got[name], reference[name], name)
        if exact or np.asarray(expected[name]).dtype.kind in "iub":
            assert_same_bits(got[name], expected[name], name)
        else:
            assert_close(got[name], expected[name], 1e-5, name)


@requires_gpu()
@pytest.mark.parametrize("cols,trips", [(1024, True), (2048, True), (4096, True), (1000, False)])
def test_dropout_trips_draw_the_interpreters_bits(cols, trips):
    rng = np.random.default_rng(cols)
    inputs = {"x": rng.standard_normal((5, cols)).astype(np.float32), "seed": np.uint64(7), "offset": 3,
              "p": np.float32(0.3)}
    _check(sample_text("philox_dropout"), "dropout", inputs, {}, {"N": cols}, trips, exact=True)


@requires_gpu()
@pytest.mark.parametrize("offset", [0, 1, 2, 7])
def test_dropout_trips_share_philox_blocks_at_every_offset(offset):
    """A trip's 4 consecutive counters draw from the first's Philox block and the next
    (rng.philox_word): every position of the first within its block."""
    rng = np.random.default_rng(offset)
    inputs = {"x": rng.standard_normal((3, 2048)).astype(np.float32), "seed": np.uint64(2 ** 40 + offset),
              "offset": offset, "p": np.float32(0.5)}
    _check(sample_text("philox_dropout"), "dropout", inputs, {}, {"N": 2048}, True, exact=True)


@requires_gpu()
@pytest.mark.parametrize("n", [1, 1024, 5000])
def test_gelu_helper_trips(n):
    x = (np.random.default_rng(n).standard_normal(n) * 4).astype(np.float32)
    _check(sample_text("gelu_helper_call"), "gelu_fwd", {"x": x}, {}, {}, True, exact=False)


@requires_gpu()
@pytest.mark.parametrize("act", ["silu", "gelu"])
@pytest.mark.parametrize("n,trips", [(1024, True), (2048, True), (333, False)])
def test_bias_act_trips(act, n, trips):
    rng = np.random.default_rng(n)
    inputs = {"x": rng.standard_normal((9, n)).astype(np.float32) * 3, "bias": rng.standard_normal(n).astype(np.float32)}
    _check(sample_text("activation_enum"), "bias_act", inputs, {"act": act}, {"N": n}, trips, exact=False)
