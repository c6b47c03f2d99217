"""compile runs the pass pipeline between verification and lowering and times each pass."""
from __future__ import annotations

from pathlib import Path

import pytest

from intentc.diagnostics import DiagnosticError
from intentc.driver import compile_kernel
from intentc.options import CompileOptions

SAXPY = (Path(__file__).resolve().parents[2] / "ir_samples" / "saxpy.kir").read_text()


def test_compile_runs_the_default_pipeline_and_records_timings():
    result = compile_kernel(SAXPY, "saxpy", "kir")
    assert "{fma = lhs}" in result.artifacts["kernel.kir"]
    for name in ("canonicalize", "cse", "fusion-legality", "online-reduction", "dce", "address-width"):
        assert f"pass:{name}" in result.timings


def test_compile_honours_an_explicit_pipeline():
    result = compile_kernel(SAXPY, "saxpy", "kir", options=CompileOptions(pipeline="dce"))
    assert [k for k in result.timings if k.startswith("pass:")] == ["pass:dce"]
    assert "fma" not in result.artifacts["kernel.kir"]


def test_a_bad_pipeline_in_options_is_bad_input():
    with pytest.raises(DiagnosticError) as caught:
        compile_kernel(SAXPY, "saxpy", "kir", options=CompileOptions(pipeline="cse{x=1}"))
    assert caught.value.diagnostics[0].code == "E0072"
