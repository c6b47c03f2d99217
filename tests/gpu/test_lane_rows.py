"""The lane-rows mapping (`nvptx/lane_rows.py`) on the GPU against the interpreter, bit for
bit (an ordered loop keeps its order): `ema_rows` at row counts around the warp's 32 and
row lengths around the window's 64 elements; a loop that reads two views and writes a
third every step and a fourth at the end (four windows: one warp a CTA); a loop that walks its row backwards, so
every step misses the windows (each read refills, each write flushes); `crossing`
(test_cta_buffers.py), whose buffer is rewritten after a tensor read of it.

The interpreter rounds every op on its own; the compile pipeline fuses `mul` + `add` into one
FMA where §5.5 allows it (`add {fma = lhs}`), which moves the last bit. So the comparisons
with the interpreter compile without fusion-legality (`BITS`: the same roundings, the same
bits), and the fused kernel (the default pipeline) is compared with the CPU JIT's fused
kernel: the same FMAs in the same order, the same bits."""
from __future__ import annotations

import json

import numpy as np
import pytest

from differential import assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from intentc.options import CompileOptions
from intentc.passes import DEFAULT_PIPELINE
from intentc.runtime.cpu import compile_cpu
from sample_paths import sample_text
from test_cta_buffers import CROSSING

# the default pipeline without §5.5's FMA fusion: every float op rounds as the interpreter's
BITS = CompileOptions(pipeline=",".join(p for p in DEFAULT_PIPELINE.split(",") if p != "fusion-legality"))

TWO_VIEWS = """
kernel @two_views(%a: view<f32, [%M, %T], in>, %b: view<f32, [%M, %T], in>, %y: view<f32, [%M, %T], out>,
                  %last: view<f32, [%M], out>) {
  %c0 = constant {value = 0} : index
  %c1 = constant {value = 1} : index
  %zero = constant {value = 0.0} : f32
  parallel %M {
  ^row(%i: index):
    %s = loop %c0, %T, %c1 iter(%zero) : f32 {
    ^step(%t: index, %acc: f32):
      %u = read %a index(%i, %t) : f32
      %v = read %b index(%i, %t) : f32
      %p = mul %u, %v : f32
      %n = add %acc, %p : f32
      write %y, %n index(%i, %t)
      yield %n
    }
    write %last, %s index(%i)
  }
}
"""

BACKWARDS = """
kernel @backwards(%x: view<f32, [%M, %T], in>, %y: view<f32, [%M, %T], out>) {
  %c0 = constant {value = 0} : index
  %c1 = constant {value = 1} : index
  %zero = constant {value = 0.0} : f32
  %last = sub %T, %c1 : index
  parallel %M {
  ^row(%i: index):
    %s = loop %c0, %T, %c1 iter(%zero) : f32 {
    ^step(%t: index, %acc: f32):
      %col = sub %last, %t : index
      %v = read %x index(%i, %col) : f32
      %n = add %acc, %v : f32
      write %y, %n index(%i, %col)
      yield %n
    }
  }
}
"""


def _mapping(text: str, kernel: str, extents: dict) -> dict:
    from intentc.driver import compile_kernel
    from intentc.options import Specialization
    result = compile_kernel(text, kernel, "ptx", "sm_90", BITS, specialization=Specialization(extents=extents))
    return json.loads(result.artifacts["launch.json"])


@pytest.mark.parametrize("text,kernel,extents,warps", [(TWO_VIEWS, "two_views", {"T": 100}, 1),
                                                       (BACKWARDS, "backwards", {"T": 100}, 2),
                                                       (CROSSING, "crossing", {"N": 256}, 1)])
def test_the_kernels_here_run_lane_rows(text, kernel, extents, warps):
    config = _mapping(text, kernel, extents)
    assert config["mapping"] == "lane-rows" and config["plan"]["warps_per_cta"] == warps
    if kernel == "crossing":        # its buffer is rewritten after the reversed read: that read is a copy
        assert config["plan"]["reads_at_use"] == []


@requires_gpu()
@pytest.mark.parametrize("m", [1, 33, 70])
@pytest.mark.parametrize("t", [1, 63, 64, 65, 300])
def test_ema_rows_a_lane_each(m, t):
    inputs = _ema_inputs(m, t)
    got, expected = on_gpu_and_interp(sample_text("ema_row_buffer"), "ema_rows", inputs, options=BITS,
                                      extents={"T": t})
    assert_same_bits(got["y"], expected["y"], "y")


@requires_gpu()
@pytest.mark.parametrize("m,t", [(33, 65), (70, 300)])
def test_fused_ema_rows_match_the_cpu_jit(m, t):
    """alpha = 0.3: alpha * x rounds, so the FMA moves bits; both targets take the same FMAs."""
    from intentc.runtime.cuda import compile_cuda
    inputs = _ema_inputs(m, t)
    specialization = {"extents": {"T": t}}
    gpu = compile_cuda(sample_text("ema_row_buffer"), "ema_rows", specialization)
    assert gpu.launch_config.mapping == "lane-rows"
    cpu = compile_cpu(sample_text("ema_row_buffer"), "ema_rows", specialization)
    assert_same_bits(gpu(inputs)["y"], cpu(inputs)["y"], "y")


def _ema_inputs(m: int, t: int) -> dict:
    x = np.random.default_rng(m * 1000 + t).standard_normal((m, t)).astype(np.float32)
    return {"x": x, "alpha": np.float32(0.3), "y": np.zeros_like(x)}


@requires_gpu()
@pytest.mark.parametrize("m,t", [(1, 5), (45, 64), (64, 130), (100, 257)])
def test_three_windows_written_every_step(m, t):
    rng = np.random.default_rng(m + t)
    a, b = (rng.standard_normal((m, t)).astype(np.float32) for _ in range(2))
    inputs = {"a": a, "b": b, "y": np.zeros_like(a), "last": np.zeros(m, np.float32)}
    got, expected = on_gpu_and_interp(TWO_VIEWS, "two_views", inputs, options=BITS, extents={"T": t})
    assert_same_bits(got["y"], expected["y"], "y")
    assert_same_bits(got["last"], expected["last"], "last")


@requires_gpu()
@pytest.mark.parametrize("m,t", [(3, 1), (40, 70), (65, 200)])
def test_a_backward_walk_misses_every_step(m, t):
    x = np.random.default_rng(t).standard_normal((m, t)).astype(np.float32)
    got, expected = on_gpu_and_interp(BACKWARDS, "backwards", {"x": x, "y": np.zeros_like(x)}, options=BITS,
                                      extents={"T": t})
    assert_same_bits(got["y"], expected["y"], "y")


@requires_gpu()
@pytest.mark.parametrize("n", [8, 256, 1000])
def test_crossing_buffer_accesses_a_lane_each(n):
    rng = np.random.default_rng(n)
    x = rng.integers(-8, 8, (45, n)).astype(np.float32)    # small integers: sums are exact
    inputs = {"x": x, "y": np.zeros_like(x), "z": np.zeros(45, np.float32)}
    got, expected = on_gpu_and_interp(CROSSING, "crossing", inputs, options=BITS, extents={"N": n})
    assert_same_bits(got["y"], expected["y"], "y")
    assert_same_bits(got["z"], expected["z"], "z")
