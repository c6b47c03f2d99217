"""`Specialization.independent_slots` (default off, awaiting GPU verification: docs/gpu.md):
an iteration of independent coordinates takes that many register-form slots a thread, S
spread over more threads; other iterations, and the default, keep the kept-tensor rule. No
GPU needed: the mapping, ptxas' acceptance (registers, no spills) and the PTX's size."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from bench.compile import compile_args
from bench.gpu_sample_specs import SPECS
from intentc.driver import compile_kernel

SPEC_BY_ID = {spec.id: spec for spec in SPECS}
# the samples whose iteration has only reads, element-wise ops (per-coordinate ifs too) and writes
INDEPENDENT = ["vector_add:vector_add", "saxpy:saxpy", "activation_enum:bias_act", "philox_dropout:dropout",
               "reverse_copy_negative_stride:flip_rows", "integer_hash_u32:pcg_hash"]


def _compiled(ident: str, slots: int) -> tuple[str, dict]:
    text, kernel, specialization = compile_args(SPEC_BY_ID[ident])
    specialization = specialization.model_copy(update={"independent_slots": slots})
    artifacts = compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("ident", INDEPENDENT)
def test_independent_iterations_take_the_slots_asked_for(ident):
    ptx, launch = _compiled(ident, 4)
    default_ptx, default = _compiled(ident, 0)
    assert launch["mapping"] == default["mapping"] == "cta"
    assert launch["slots"] == 4 < default["slots"] or launch["block"][0] == 1024   # T at most 1024
    assert launch["slots"] * launch["block"][0] == default["slots"] * default["block"][0]   # the same S
    assert len(ptx.splitlines()) < len(default_ptx.splitlines())
    assert re.search(rf"\.maxntid {launch['block'][0]}\b", ptx)


@pytest.mark.parametrize("ident", ["row_softmax:row_softmax", "row_sum:row_sum_f16", "cumsum:row_cumsum"])
def test_iterations_with_reductions_or_scans_keep_the_kept_tensor_rule(ident):
    assert _compiled(ident, 4)[1] == _compiled(ident, 0)[1]


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
@pytest.mark.parametrize("ident", INDEPENDENT)
def test_ptxas_fits_the_independent_form_without_spills(ident, tmp_path):
    ptx, _ = _compiled(ident, 4)
    source = tmp_path / "k.ptx"
    source.write_text(ptx)
    done = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(source), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill stores", done.stderr)]
    assert spills and max(spills) == 0, done.stderr
