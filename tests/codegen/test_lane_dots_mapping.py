"""The lane-group dot mapping without a GPU (docs/gpu.md, "Lane-group dots"): which kernels the
iteration-dots recognizer accepts and why it refuses others, the plan recorded in launch.json,
and ptxas accepting the PTX (vector path and element path in one entry)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ptxas_report import ptxas_report

import intentc
from intentc.codegen.nvptx.iteration_dots import match_iteration_dots
from intentc.codegen.nvptx.tile_contraction import NoMatch
from intentc.driver import compile_kernel

SAMPLE = (Path(__file__).resolve().parents[2] / "ir_samples" / "decode_attention_scores_contract.kir").read_text()


def _kernel(text: str):
    module = intentc.parse(text, "t.kir")
    intentc.verify_or_raise(module)
    return module.find("decode_scores")


def test_recognizes_decode_scores():
    dots = match_iteration_dots(_kernel(SAMPLE))
    assert (dots.lhs.view, dots.rhs.view, dots.out.view) == ("q", "k", "scores")
    assert dots.lhs.axes == (1, 2) and dots.rhs.axes == (1, 2, 3) and dots.out.axes == (1, 2)
    assert dots.lhs_of_result == (0, None) and dots.rhs_of_result == (1, 0)
    assert (dots.lhs_contract, dots.rhs_contract, dots.depth, dots.scale) == (1, 2, "D", "scale")
    assert dots.operand_dtypes == ("bf16", "bf16") and dots.acc_dtype == "f32"


def test_recognizes_unscaled_and_transposed_operands():
    unscaled = "\n".join(line for line in SAMPLE.replace("write %scores, %sc index", "write %scores, %raw index")
                          .splitlines() if "%scale_b" not in line)
    assert match_iteration_dots(_kernel(unscaled)).scale is None
    swapped = SAMPLE.replace("%qv, %kv {acc = f32, lhs_batch = [0], lhs_contract = [1], rhs_batch = [1], "
                             "rhs_contract = [2]}", "%kv, %qv {acc = f32, lhs_batch = [1], lhs_contract = [2], "
                             "rhs_batch = [0], rhs_contract = [1]}")
    dots = match_iteration_dots(_kernel(swapped))
    assert dots.lhs.view == "k" and dots.lhs_of_result == (1, 0) and dots.rhs_of_result == (0, None)


REFUSED = {
    "a read at another iteration's slice": ("index(%b, %keys, %heads, %dims)", "index(%b, %keys, %heads, %heads)"),
    "a sum after the contraction": ("%sc = mul %raw, %scale_b", "%sc = add %raw, %scale_b"),
    "an f16 output": ("%scores: view<f32, [%B, %H, %S], out>", "%scores: view<f16, [%B, %H, %S], out>"),
}


@pytest.mark.parametrize("why", sorted(REFUSED))
def test_refuses(why):
    old, new = REFUSED[why]
    assert old in SAMPLE
    text = SAMPLE.replace(old, new)
    if why == "an f16 output":
        text = text.replace("%sc = mul %raw, %scale_b : tensor<f32, [%H, %S]>",
                            "%sm = mul %raw, %scale_b : tensor<f32, [%H, %S]>\n"
                            "    %sc = cast %sm : tensor<f16, [%H, %S]>")
    kernel = _kernel(text)          # every variant verifies: the recognizer, not the verifier, refuses it
    with pytest.raises(NoMatch):
        match_iteration_dots(kernel)


@pytest.mark.parametrize("extents", [{}, {"S": 2048, "H": 32, "D": 128}])
def test_launch_json_and_ptxas(extents, tmp_path):
    result = compile_kernel(SAMPLE, "decode_scores", "ptx", "sm_90",
                            specialization={"extents": extents} if extents else None)
    launch = json.loads(result.artifacts["launch.json"])
    assert launch["mapping"] == "lane-dots" and launch["block"] == [256, 1, 1]
    assert launch["plan"]["group_lanes"] == 16 and launch["plan"]["elements_per_load"] == 8
    assert not any("threadsPerWarp = [1" in text for text in launch["layouts"]["encodings"].values())
    ptx = result.artifacts["kernel.ptx"]
    assert "ld.global.v4.b32" in ptx and "shfl.sync.bfly.b32" in ptx and "fma.rn.f32" in ptx
    assert "malloc" not in ptx
    if shutil.which("ptxas"):
        assert "0 bytes spill stores" in ptxas_report(ptx, tmp_path)
