"""Logical buffers in CTA-mapped iterations (`nvptx/cta_buffers.py`): the buffer in shared
memory, every access after a barrier. Which kernels get the mapping and what launch.json
says need no GPU; on the GPU, the interpreter's results for `ema_rows` and for a kernel
whose buffer accesses cross threads every way (a tensor write read back by scalar reads at
other coordinates, a scalar recurrence over it, a reversed tensor read, a tensor rewrite
after it, a scalar read of that). Static buffers that fit a lane's stack (2048 f32) run
lane-rows instead (`nvptx/lane_rows.py`, test_lane_rows.py): those that pass it keep the CTA."""
from __future__ import annotations

import json

import numpy as np
import pytest

from differential import assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from sample_paths import sample_text

CROSSING = """
kernel @crossing(%x: view<f32, [%M, %N], in>, %y: view<f32, [%M, %N], out>, %z: view<f32, [%M], out>) {
  %c1 = constant {value = 1} : index
  %c7 = constant {value = 7} : index
  %zero = constant {value = 0.0} : f32
  %last = sub %N, %c1 : index
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%N]>
    %zeros = full {value = 0.0} : tensor<f32, [%N]>
    %buf = buffer init(%zeros) : buffer<f32, [%N]>
    %row = read %x index(%i, %cols) : tensor<f32, [%N]>
    write %buf, %row index(%cols)
    %total = loop %c1, %N, %c1 iter(%zero) : f32 {
    ^step(%t: index, %acc: f32):
      %t1 = sub %t, %c1 : index
      %before = read %buf index(%t1) : f32
      %here = read %buf index(%t) : f32
      %sum = add %before, %here : f32
      write %buf, %sum index(%t)
      %acc2 = add %acc, %sum : f32
      yield %acc2
    }
    %lasts = broadcast %last : tensor<index, [%N]>
    %rev = sub %lasts, %cols : tensor<index, [%N]>
    %backwards = read %buf index(%rev) : tensor<f32, [%N]>
    write %y, %backwards index(%i, %cols)
    %twice = add %row, %row : tensor<f32, [%N]>
    write %buf, %twice index(%cols)
    %seventh = read %buf index(%c7) : f32
    %out = add %seventh, %total : f32
    write %z, %out index(%i)
  }
}
"""


def _launch(text: str, kernel: str, extents: dict) -> dict:
    from intentc.driver import compile_kernel
    from intentc.options import Specialization
    result = compile_kernel(text, kernel, "ptx", "sm_90", specialization=Specialization(extents=extents))
    return json.loads(result.artifacts["launch.json"])


@pytest.mark.parametrize("sample,kernel,extents", [("ema_row_buffer", "ema_rows", {"T": 4096}),
                                                   (None, "crossing", {"N": 4096})])
def test_iterations_with_static_buffers_get_the_cta_mapping(sample, kernel, extents):
    launch = _launch(sample_text(sample) if sample else CROSSING, kernel, extents)
    assert launch["mapping"] == "cta" and launch["iterations_per_cta"] == 1   # barriers: a CTA an iteration
    buffer = "scratch" if sample else "buf"
    assert launch["layouts"]["values"][buffer].startswith("#shared")


def test_buffers_sized_at_launch_use_the_ctas_scratch():
    launch = _launch(sample_text("ema_row_buffer"), "ema_rows", {})
    assert launch["mapping"] == "cta" and launch["slots"] == 0        # the dynamic form
    assert "scratch" not in launch["layouts"]["values"]               # device memory, not #shared
    big = _launch(sample_text("ema_row_buffer"), "ema_rows", {"T": 16384})   # 64 KiB: past shared memory
    assert big["mapping"] == "cta" and "scratch" not in big["layouts"]["values"]


@requires_gpu()
@pytest.mark.parametrize("t", [0, 1, 40, 1024, 5000])
@pytest.mark.parametrize("form", ["specialized", "dynamic"])
def test_ema_rows(t, form):
    rng = np.random.default_rng(t)
    rows = 37 if t <= 1024 else 3           # the interpreter runs each step of the loop in Python
    x = rng.standard_normal((rows, t)).astype(np.float32)
    inputs = {"x": x, "alpha": np.float32(0.25), "y": np.zeros_like(x)}
    got, expected = on_gpu_and_interp(sample_text("ema_row_buffer"), "ema_rows", inputs,
                                      extents={"T": t} if form == "specialized" else None)
    assert_same_bits(got["y"], expected["y"], "y")       # a loop keeps its order: the same bits


@requires_gpu()
@pytest.mark.parametrize("n", [8, 256, 1000, 20000])
@pytest.mark.parametrize("form", ["specialized", "dynamic"])
def test_buffer_accesses_across_threads(n, form):
    rng = np.random.default_rng(n)
    rows = 29 if n <= 1000 else 3           # the interpreter's cost grows with rows x n
    x = rng.integers(-8, 8, (rows, n)).astype(np.float32)    # small integers: sums are exact
    inputs = {"x": x, "y": np.zeros_like(x), "z": np.zeros(rows, np.float32)}
    got, expected = on_gpu_and_interp(CROSSING, "crossing", inputs, extents={"N": n} if form == "specialized" else None)
    assert_same_bits(got["y"], expected["y"], "y")
    assert_same_bits(got["z"], expected["z"], "z")
