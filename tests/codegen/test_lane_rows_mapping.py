"""Which kernels the lane-rows mapping takes (`nvptx/lane_rows.py`: an iteration a lane,
for iterations that run an ordered scalar loop over their row) and what launch.json
records, and that the lowering fuses a multiply-add only where §5.5 marks it; no GPU needed
(tests/gpu/test_lane_rows.py runs them)."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from ptxas_report import ptxas_report, spill_store_bytes

from intentc.codegen.nvptx import lane_rows
from intentc.driver import compile_kernel
from intentc.options import CompileOptions, Specialization
from intentc.passes import DEFAULT_PIPELINE
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

DEFAULT = CompileOptions()
# the default pipeline without §5.5's FMA marks
UNFUSED = CompileOptions(pipeline=",".join(p for p in DEFAULT_PIPELINE.split(",") if p != "fusion-legality"))


def compiled(text: str, kernel: str, extents: dict, options: CompileOptions = DEFAULT) -> dict:
    return compile_kernel(text, kernel, "ptx", "sm_90", options, specialization=Specialization(extents=extents)).artifacts


def launch(text: str, kernel: str, extents: dict, options: CompileOptions = DEFAULT) -> dict:
    return json.loads(compiled(text, kernel, extents, options)["launch.json"])


def test_an_ordered_scalar_recurrence_runs_a_row_a_lane_with_its_views_staged():
    config = launch(sample_text("ema_row_buffer"), "ema_rows", {"T": 1024})
    assert config["mapping"] == "lane-rows" and config["block"] == [64, 1, 1]
    assert config["plan"]["windows"] == [{"view": "x", "access": "read"}, {"view": "y", "access": "write"}]
    assert config["plan"]["warps_per_cta"] == 2 and config["grid"] == "ctas_per_sm:32"
    assert config["plan"]["reads_at_use"] == ["smoothed"]      # no write follows: no copy
    assert config["plan"]["tensor_write_chunk"] == lane_rows.CHUNK     # the row's copy out: CHUNK loads in flight


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


@pytest.mark.parametrize("options,fused", [(DEFAULT, 1), (UNFUSED, 0)])
def test_the_recurrence_fuses_only_the_multiply_add_fusion_legality_marked(options, fused):
    """s = alpha·x + beta·prev: `add {fma = lhs}` (§5.5) may be one FMA with alpha·x; beta·prev
    and, without the mark, both products round on their own (mul.rn: ptxas fuses no mul.rn)."""
    ptx = compiled(sample_text("ema_row_buffer"), "ema_rows", {"T": 1024}, options)["kernel.ptx"]
    assert len(re.findall(r"\bfma\.rn\.f32\b", ptx)) == fused
    assert len(re.findall(r"\bmul\.rn\.f32\b", ptx)) == 2 - fused
    assert len(re.findall(r"\badd\.rn\.f32\b", ptx)) == 1 - fused
    assert not re.search(r"\b(fma|mul|add)\.f32\b", ptx)      # no op without a rounding mode: ptxas could fuse it


def test_the_rows_copy_out_loads_a_chunk_before_its_window_stores():
    """ema's row leaves the lane's buffer (local memory) CHUNK elements at a time: CHUNK loads,
    then one vote whether the chunk lies in the windows and its CHUNK stores into them without
    a vote between them (else one by one in a rolled loop over local copies of the stores'
    values and flags, store k at the first's address + 4k, each may flush: one vote in the
    loop)."""
    ptx = compiled(sample_text("ema_row_buffer"), "ema_rows", {"T": 1024})["kernel.ptx"]
    kinds = [line.split()[0] for line in ptx.splitlines() if re.match(r"\s+(ld\.local|st\.shared|vote)", line)]
    sequence = " ".join(kinds) + " "
    chunk = lane_rows.CHUNK
    assert re.search(rf"(ld\.local\.b32 ){{{chunk}}}vote\.sync\.any\.pred vote\.sync\.all\.pred "
                     rf"(st\.shared\.b32 ){{{chunk},}}ld\.local\.b32 ld\.local\.b8 ld\.local\.b64 "
                     r"vote\.sync\.any\.pred st\.shared\.b32 ", sequence), sequence
    assert sequence.count("vote.sync.any.pred") == 4      # the reads' two, the chunk's first store, the loop's


def test_a_chunk_along_the_row_fits_the_windows_by_its_first_store():
    """ema's copy out (of dense rows, as `intentc.load` specializes them) stores
    consecutive elements under one liveness: the chunk fits the windows where its first store
    lies CHUNK - 1 elements before the window's end (one compare, not one a store), and its
    stores go to the first's column + k: one address at immediate offsets."""
    spec = Specialization(extents={"T": 1024}, unit_stride=("x", "y"), contiguous=("x", "y"))
    ptx = compile_kernel(sample_text("ema_row_buffer"), "ema_rows", "ptx", "sm_90",
                         specialization=spec).artifacts["kernel.ptx"]
    fast_path = ptx[ptx.index("vote.sync.all.pred"):]
    stores = re.findall(r"st\.shared\.b32\s+\[(%rd\d+)(?:\+(\d+))?\]", fast_path)[:lane_rows.CHUNK]
    assert len({base for base, _ in stores}) == 1
    assert [int(offset or 0) for _, offset in stores] == [4 * k for k in range(lane_rows.CHUNK)]
    window_end = (lane_rows.WINDOW - lane_rows.CHUNK + 1) * 4
    before_vote = ptx[:ptx.index("vote.sync.all.pred")].splitlines()[-6:]
    assert any(f", {window_end};" in line or f", {window_end - 1};" in line for line in before_vote), before_vote


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
def test_ptxas_accepts_the_lane_rows_kernel_without_spills(tmp_path):
    report = ptxas_report(compiled(sample_text("ema_row_buffer"), "ema_rows", {"T": 1024})["kernel.ptx"], tmp_path)
    spills = spill_store_bytes(report)
    assert spills and max(spills) == 0, report
    # the kernel and one function a window: the refill of x and the flush of y
    assert "intentc_lane_window_refill_x" in report and "intentc_lane_window_flush_y" in report
