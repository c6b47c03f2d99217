"""Which kernels the lane-rows mapping takes (`nvptx/lane_rows.py`: an iteration a lane,
for iterations that run an ordered scalar loop over their row) and what launch.json
records; no GPU needed (tests/gpu/test_lane_rows.py runs them)."""
from __future__ import annotations

import json

import pytest

from intentc.driver import compile_kernel
from intentc.options import Specialization
from sample_paths import sample_text

# A recurrence whose loop bound depends on the row: lanes would leave the loop at
# different steps, so the warp's window refills could not be collective.
ROW_BOUND = """
kernel @row_bound(%x: view<f32, [%M, %T], in>, %y: view<f32, [%M], out>) {
  %c0 = constant {value = 0} : index
  %c1 = constant {value = 1} : index
  %zero = constant {value = 0.0} : f32
  parallel %M {
  ^row(%i: index):
    %steps = minimum %i, %T : index
    %s = loop %c0, %steps, %c1 iter(%zero) : f32 {
    ^step(%t: index, %acc: f32):
      %v = read %x index(%i, %t) : f32
      %a = add %acc, %v : f32
      yield %a
    }
    write %y, %s index(%i)
  }
}
"""

# The same recurrence with an atomic add: an effect on memory other lanes share.
ATOMIC = """
kernel @atomic_rows(%x: view<f32, [%M, %T], in>, %total: view<f32, [1], inout>) {
  %c0 = constant {value = 0} : index
  %c1 = constant {value = 1} : index
  %zero = constant {value = 0.0} : f32
  parallel %M {
  ^row(%i: index):
    %s = loop %c0, %T, %c1 iter(%zero) : f32 {
    ^step(%t: index, %acc: f32):
      %v = read %x index(%i, %t) : f32
      %a = add %acc, %v : f32
      yield %a
    }
    %old = atomic_rmw %total, %s index(%c0) {kind = add, order = relaxed} : f32
  }
}
"""


def launch(text: str, kernel: str, extents: dict) -> dict:
    result = compile_kernel(text, kernel, "ptx", "sm_90", specialization=Specialization(extents=extents))
    return json.loads(result.artifacts["launch.json"])


def test_an_ordered_scalar_recurrence_runs_a_row_a_lane_with_its_views_staged():
    config = launch(sample_text("ema_row_buffer"), "ema_rows", {"T": 1024})
    assert config["mapping"] == "lane-rows" and config["block"] == [64, 1, 1]
    assert config["plan"]["windows"] == [{"view": "x", "access": "read"}, {"view": "y", "access": "write"}]
    assert config["plan"]["warps_per_cta"] == 2 and config["grid"] == "ctas_per_sm:32"
    assert config["plan"]["reads_at_use"] == ["smoothed"]      # no write follows: no copy


def test_a_buffer_sized_at_launch_keeps_the_cta_mapping():
    assert launch(sample_text("ema_row_buffer"), "ema_rows", {})["mapping"] == "cta"


def test_a_buffer_past_a_lanes_stack_keeps_the_cta_mapping():
    assert launch(sample_text("ema_row_buffer"), "ema_rows", {"T": 1 << 14})["mapping"] == "cta"


def test_a_loop_over_tiles_keeps_the_cta_mapping():
    assert launch(sample_text("tuple_record_stats"), "row_stats", {"N": 1024})["mapping"] == "cta"


@pytest.mark.parametrize("text,kernel", [(ROW_BOUND, "row_bound"), (ATOMIC, "atomic_rows")])
def test_lanes_that_could_diverge_or_share_memory_get_no_lane_rows(text, kernel):
    assert launch(text, kernel, {"T": 64})["mapping"] != "lane-rows"
    uniform_bound = text.replace("%steps = minimum %i, %T : index", "%steps = minimum %M, %T : index")
    without_atomic = "\n".join(line for line in uniform_bound.splitlines() if "atomic_rmw" not in line)
    assert launch(without_atomic, kernel, {"T": 64})["mapping"] == "lane-rows"   # the one difference
