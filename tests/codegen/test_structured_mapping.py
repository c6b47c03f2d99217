"""Structured contractions and row mappings without a GPU (docs/gpu.md, "Structured
contractions", "Quantized rows and dot rows"): which kernels the recognizers accept and
why they refuse others, the plans recorded in launch.json, and ptxas accepting the PTX."""
from __future__ import annotations

import json
import shutil

import pytest

from ptxas_report import ptxas_report

import intentc
from intentc.codegen.nvptx.dot_rows import match_dot_rows
from intentc.codegen.nvptx.quantized_rows import match_quantized_rows
from intentc.codegen.nvptx.structured_contraction import match_scaled_contraction, match_sparse_contraction
from intentc.codegen.nvptx.tile_contraction import NoMatch
from intentc.driver import compile_kernel
from sample_paths import sample_text

SAMPLES = {"mxfp4_matmul": "mxfp4_scaled_matmul", "sparse24_matmul": "sparse_2of4_matmul",
           "sparse12_matmul": "sparse_1of2_matmul", "q4k_q8k_matvec": "q4k_q8k_matvec",
           "batched_dot_f16": "dot_f16_f32acc"}


def _kernel(text: str, name: str):
    module = intentc.parse(text, "t.kir")
    intentc.verify_or_raise(module)
    return module.find(name)


def _launch(kernel: str, arch: str = "sm_90", text: str | None = None) -> tuple[str, dict]:
    artifacts = compile_kernel(text or sample_text(SAMPLES[kernel]), kernel, "ptx", arch).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


def test_recognizes_the_mx_sample():
    found = match_scaled_contraction(_kernel(sample_text("mxfp4_scaled_matmul"), "mxfp4_matmul"))
    assert (found.a, found.a_scale, found.b, found.b_scale, found.c) == ("a", "a_scale", "b", "b_scale", "c")
    assert (found.element_format, found.group_size, found.acc_dtype, found.ir_tile) == ("e2m1", 32, "f32", (32, 32))


@pytest.mark.parametrize("sample,kernel,pattern,fields,fill,groups", [
    ("sparse_2of4_matmul", "sparse24_matmul", "two_of_four", ((0, 3), (2, 3)), 4, 16),
    ("sparse_1of2_matmul", "sparse12_matmul", "one_of_two", ((0, None),), 0, 32)])
def test_recognizes_the_sparse_samples(sample, kernel, pattern, fields, fill, groups):
    found = match_sparse_contraction(_kernel(sample_text(sample), kernel))
    assert (found.pattern, found.fields, found.meta_fill, found.step_groups) == (pattern, fields, fill, groups)
    assert found.positions(fill) in ((0, 1), (0,))


MX_REFUSED = {
    "a B scale mask that is not B's column bound": ("%bs_mask = broadcast %col_ok2 :", "%bs_mask = broadcast %row_ok :"),
    "groups of 16": ("group_size = 32", "group_size = 16"),
    "a write at another tile": ("write %c, %c_t index(%rows, %cols)", "write %c, %c_t index(%cols2, %cols)"),
}


@pytest.mark.parametrize("why", sorted(MX_REFUSED))
def test_mx_recognizer_refuses_other_kernels(why):
    old, new = MX_REFUSED[why]
    text = sample_text("mxfp4_scaled_matmul")
    assert old in text
    text = text.replace(old, new)
    if "group_size = 16" in text:       # the verifier wants carriers of one group: 8 bytes
        with pytest.raises((NoMatch, intentc.DiagnosticError)):
            match_scaled_contraction(_kernel(text, "mxfp4_matmul"))
        return
    with pytest.raises(NoMatch):
        match_scaled_contraction(_kernel(text, "mxfp4_matmul"))


SPARSE_REFUSED = {
    "masked metadata that decodes to equal positions": ("%default_meta = constant {value = 4} : u8",
                                                        "%default_meta = constant {value = 5} : u8"),
    "a step that is not added to the carried sum": ("%acc_next = add %acc_in, %part", "%acc_next = sub %acc_in, %part"),
    "a B mask that is not B's bounds": ("%b_mask = and %k_ok_b, %col_ok_b", "%b_mask = and %col_ok_b, %col_ok_b"),
    "metadata fields other than bit fields": ("%second = and %hi, %two_bits", "%second = add %hi, %two_bits"),
}


@pytest.mark.parametrize("why", sorted(SPARSE_REFUSED))
def test_sparse_recognizer_refuses_other_kernels(why):
    old, new = SPARSE_REFUSED[why]
    text = sample_text("sparse_2of4_matmul")
    assert old in text
    with pytest.raises(NoMatch):
        match_sparse_contraction(_kernel(text.replace(old, new), "sparse24_matmul"))


@pytest.fixture
def decoded_sparse(monkeypatch):
    """2:4 with 64-position steps on the decoding path, the one 1:2 and 2:4 with 32-position steps
    take (mma.sp takes it by default: tests/codegen/test_sparse_mma.py)."""
    from intentc.codegen.nvptx import tile_sparse
    monkeypatch.setattr(tile_sparse, "plan_sparse_mma", lambda contraction: None)


@pytest.mark.usefixtures("decoded_sparse")
@pytest.mark.parametrize("kernel,instruction,block", [("mxfp4_matmul", "mma.sync.m16n8k16", [128, 128, 32]),
                                                      ("sparse24_matmul", "mma.sync.m16n8k16", [128, 128, 64]),
                                                      ("sparse12_matmul", "fma.f32", [128, 128, 16])])
@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_launch_json_records_the_structured_plan(kernel, instruction, block, arch):
    ptx, launch = _launch(kernel, arch)
    assert launch["mapping"] == "mma" and launch["block"] == [256, 1, 1] and launch["variants"] == []
    plan = launch["mma"]
    assert plan["instruction"] == instruction and plan["block"] == block and plan["stages"] == 2
    assert plan["structured"] in ("scaled", "sparse") and "combine" in plan and "staging" in plan
    assert ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx) == instruction.startswith("mma")
    assert "tf32" not in ptx and ".ftz" not in ptx
    assert "malloc" not in ptx                      # no device heap: every temporary is a register or shared


def test_mx_decodes_exactly_in_f16_and_scales_in_f32():
    ptx, _ = _launch("mxfp4_matmul")
    assert "mul.rn.f16x2" in ptx or "mul.f16x2" in ptx    # e2m1 · 2^-14 times 2^14: exact
    assert "fma.rn.f32" in ptx


@pytest.mark.usefixtures("decoded_sparse")
def test_sparse_steps_or_their_b_flags_at_the_barrier():
    ptx, _ = _launch("sparse24_matmul")
    assert "bar.red.or.pred" in ptx


@pytest.mark.parametrize("kernel,role", [("q4k_q8k_matvec", "q4_k"), ("batched_dot_f16", "dot")])
def test_rows_map_one_row_a_warp_or_a_lane_group(kernel, role):
    ptx, launch = _launch(kernel)
    assert launch["mapping"] == "warp-rows" and launch["block"] == [256, 1, 1] and launch["variants"] == []
    assert "shfl.sync.bfly" in ptx and "malloc" not in ptx
    if role == "q4_k":
        lanes = launch["plan"]["lanes_per_row"]
        assert lanes == 4 and launch["plan"]["rows_per_cta"] == 8 * 32 // lanes
        assert f"threadsPerWarp = [1, {lanes}]" in str(launch["layouts"])     # a row's lanes (test_layouts.py)
        assert "fma" not in ptx                     # the reference's float sequence: no FMA across roundings
        assert "dp4a.u32.s32" in ptx and "prmt.b32" in ptx      # aux32's members by byte transposes
    else:
        assert launch["plan"]["rows_per_cta"] == 8 and "threadsPerWarp = [32]" in str(launch["layouts"])


@pytest.mark.parametrize("extents,staged", [({}, 0), ({"NB": 16}, 16), ({"NB": 80}, 80), ({"NB": 81}, 0)])
def test_q4k_rows_stage_the_q8k_vector_where_its_blocks_are_known_and_fit(extents, staged):
    """The Q8_K vector goes to shared memory (76 words a block, at most 24 KiB) only with NB
    fixed at compile time; else each lane reads it from global memory and transposes it."""
    artifacts = compile_kernel(sample_text("q4k_q8k_matvec"), "q4k_q8k_matvec", "ptx", "sm_90",
                               specialization={"extents": extents}).artifacts
    plan, ptx = json.loads(artifacts["launch.json"])["plan"], artifacts["kernel.ptx"]
    assert plan["staged_x_blocks"] == staged and plan["lanes_per_row"] == 4
    assert ("bar.sync" in ptx) == bool(staged) and ("ld.shared.v4" in ptx) == bool(staged)
    # the scales (2), the Q4_K side's transposes (16) and, unstaged, the Q8_K side's (32)
    assert ptx.count("prmt.b32") == 2 + 16 + (0 if staged else 32)


def test_row_recognizers_accept_the_samples_and_refuse_others():
    q4k = sample_text("q4k_q8k_matvec")
    assert match_quantized_rows(_kernel(q4k, "q4k_q8k_matvec")).w == "w"
    with pytest.raises(NoMatch):       # a row read at another row
        match_quantized_rows(_kernel(q4k.replace("read %w index(%r, %blocks, %wbytes)",
                                                 "read %w index(%c0, %blocks, %wbytes)").replace(
            "  %blocks = iota", "  %c0 = constant {value = 0} : index\n  %blocks = iota"), "q4k_q8k_matvec"))
    dot = sample_text("dot_f16_f32acc")
    assert match_dot_rows(_kernel(dot, "batched_dot_f16")).writes == (("out", ()), ("out_h", ("f16",)))
    with pytest.raises(NoMatch):       # the product of a row and itself is still a dot, a sum is not
        match_dot_rows(_kernel(dot.replace("%d = dot %xv, %yv {acc = f32} : f32",
                                           "%d = reduce %xv {kind = sum, axes = [0], acc = f32} : f32"),
                               "batched_dot_f16"))


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
@pytest.mark.parametrize("kernel", sorted(SAMPLES))
def test_ptxas_accepts_the_structured_and_row_kernels(kernel, tmp_path):
    ptx, _ = _launch(kernel)
    ptxas_report(ptx, tmp_path)
