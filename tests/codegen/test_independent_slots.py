"""Iterations of independent coordinates (only reads, element-wise ops — per-coordinate ifs
too — and writes): by default, one of cheap ops takes CHEAP_INDEPENDENT_SLOTS slots a thread,
S spread over more threads (the H200 ran them as fast: docs/gpu.md); one with math functions
or Philox keeps the kept-tensor rule, as do iterations with reductions or scans.
`Specialization.independent_slots` asks for K slots in any independent iteration. No GPU
needed: the mapping, ptxas' acceptance (registers, no spills) and the PTX's size."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from ptxas_report import ptxas_report, spill_store_bytes

from bench.compile import compile_args
from bench.gpu_sample_specs import SPECS
from intentc.codegen.nvptx.cta import CHEAP_INDEPENDENT_SLOTS
from intentc.driver import compile_kernel

SPEC_BY_ID = {spec.id: spec for spec in SPECS}
# the samples whose iteration has only reads, element-wise ops (per-coordinate ifs too) and
# writes: cheap ones, and ones with math functions (bias_act's exp and erf) or Philox
CHEAP = ["vector_add:vector_add", "saxpy:saxpy", "reverse_copy_negative_stride:flip_rows",
         "integer_hash_u32:pcg_hash", "f8_rowwise_quant:dequantize_e4m3_rowwise"]
COSTLY = ["activation_enum:bias_act", "philox_dropout:dropout"]
INDEPENDENT = CHEAP + COSTLY


def _compiled(ident: str, slots: int) -> tuple[str, dict]:
    text, kernel, specialization = compile_args(SPEC_BY_ID[ident])
    specialization = specialization.model_copy(update={"independent_slots": slots})
    artifacts = compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("ident", CHEAP)
def test_cheap_independent_iterations_take_few_slots_by_default(ident):
    ptx, launch = _compiled(ident, 0)
    assert launch["mapping"] == "cta"
    assert launch["slots"] == CHEAP_INDEPENDENT_SLOTS or launch["block"][0] == 1024   # T at most 1024
    assert re.search(rf"\.maxntid {launch['block'][0]}\b", ptx)


@pytest.mark.parametrize("ident", COSTLY)
def test_independent_iterations_with_costly_ops_keep_the_kept_tensor_rule(ident):
    assert _compiled(ident, 0)[1]["slots"] >= 8


@pytest.mark.parametrize("ident", INDEPENDENT)
def test_independent_iterations_take_the_slots_asked_for(ident):
    default_ptx, default = _compiled(ident, 0)
    asked = 4 if default["slots"] > 4 else 8
    ptx, launch = _compiled(ident, asked)
    assert launch["mapping"] == default["mapping"] == "cta"
    assert launch["slots"] == asked or launch["block"][0] in (64, 1024)   # T in [64, 1024]
    assert launch["slots"] * launch["block"][0] == default["slots"] * default["block"][0]   # the same S
    if not (launch["trip_slots"] or default["trip_slots"]):   # a loop of trips: its code does not grow with K
        assert (len(ptx.splitlines()) < len(default_ptx.splitlines())) == (asked < default["slots"])
    assert re.search(rf"\.maxntid {launch['block'][0]}\b", ptx)


@pytest.mark.parametrize("ident", ["row_softmax:row_softmax", "row_sum:row_sum_f16", "cumsum:row_cumsum"])
def test_iterations_with_reductions_or_scans_keep_the_kept_tensor_rule(ident):
    assert _compiled(ident, 4)[1] == _compiled(ident, 0)[1]


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
@pytest.mark.parametrize("ident", INDEPENDENT)
def test_ptxas_fits_the_independent_form_without_spills(ident, tmp_path):
    ptx, _ = _compiled(ident, 4)   # the default for the cheap ones
    report = ptxas_report(ptx, tmp_path)
    spills = spill_store_bytes(report)
    assert spills and max(spills) == 0, report
