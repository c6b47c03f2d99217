"""Session 9's compile-time choices for the CTA-mapped, grid and lane-rows samples (issue
#13, docs/gpu.md "Compile pipeline"), as the PTX and launch.json show them; no GPU needed
(bench/cta_pipeline_ab.py times each against its alternative on the H200)."""
from __future__ import annotations

import json
import re

from intentc.codegen.nvptx import outlined_math
from intentc.driver import compile_kernel
from intentc.options import Specialization
from sample_paths import sample_text



def _compiled(sample: str, kernel: str, extents: dict | None = None) -> tuple[str, dict]:
    artifacts = compile_kernel(sample_text(sample), kernel, "ptx", "sm_90",
                               specialization=Specialization(extents=extents or {})).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


def test_long_libdevice_functions_are_one_function_called_from_every_slot():
    ptx, launch = _compiled("special_math", "special_math")
    assert launch["mapping"] == "grid" and launch["outlined_math"]
    assert re.search(r"\.func\s+\(\.param \.b32 func_retval0\) intentc_lgammaf\b", ptx)   # over OUTLINE_INSTRUCTIONS
    assert len(re.findall(r"call\.uni \(retval0\), intentc_lgammaf,", ptx)) == launch["slots"]
    for name in ("erfcf", "log1pf", "asinf", "logf", "expf", "sqrtf"):     # shorter: inline
        assert f"intentc_{name}" not in ptx, name
    assert outlined_math.long_function("__nv_lgammaf") and not outlined_math.long_function("__nv_erfcf")


def test_kernels_without_math_functions_call_nothing():
    ptx, launch = _compiled("vector_add", "vector_add")
    assert "call" not in ptx and not launch["lean_pipeline"]


def test_lane_rows_take_the_lean_pipeline_and_cta_iterations_keep_o1():
    _, dropout = _compiled("philox_dropout", "dropout", {"N": 2048})
    _, bias_act = _compiled("activation_enum", "bias_act", {"N": 1024})
    _, nan_max = _compiled("nan_max_vs_maximum_num", "nan_max", {"N": 2048})     # row reductions
    _, ema = _compiled("ema_row_buffer", "ema_rows", {"T": 1024})
    assert ema["mapping"] == "lane-rows" and ema["lean_pipeline"]
    assert not nan_max["lean_pipeline"] and not dropout["lean_pipeline"]    # dropout ran 11% slower lean
    assert bias_act["mapping"] == "cta" and not bias_act["lean_pipeline"]


def test_an_iteration_that_combines_nothing_keeps_at_most_16_slots():
    _, rank1 = _compiled("rank1_update_outer", "rank1_update")
    assert rank1["mapping"] == "cta" and rank1["slots"] == 16 and rank1["block"] == [256, 1, 1]
    _, nan_max = _compiled("nan_max_vs_maximum_num", "nan_max", {"N": 2048})
    assert nan_max["slots"] == 32        # a reduction's barrier amortizes more slots


def test_staged_programs_keep_loop_strength_reduction():
    """(Element-wise grid programs calling libdevice run without it since session 10:
    tests/codegen/test_group_loop.py.)"""
    from intentc.codegen.nvptx.stages import stage_plan
    from intentc.parse import parse
    kernel = parse(sample_text("cumsum")).find("exclusive_offsets")
    assert stage_plan(kernel).strength_reduce is True
