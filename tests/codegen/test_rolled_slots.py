"""The CTA register form's rolled slots (cta.py `_rolls_slots`): an iteration that keeps
nothing in its slots (every read staged in shared memory, single-use values) runs them as
one rolled loop; launch.json says so (`slots_rolled`). No GPU needed: the plan, the PTX's
one copy of the slot body, ptxas' registers. The GPU runs of these kernels against the
interpreter are tests/gpu/test_cta_tiles.py's dequantize and interleave cases."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from ptxas_report import ptxas_report, spill_store_bytes

from bench.compile import compile_args
from bench.gpu_sample_specs import SPECS
from intentc.driver import compile_kernel

SPEC_BY_ID = {spec.id: spec for spec in SPECS}


def _compiled(ident: str) -> tuple[str, dict]:
    text, kernel, specialization = compile_args(SPEC_BY_ID[ident])
    artifacts = compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


def test_dequantize_q4_k_rolls_its_32_slots(tmp_path):
    """The Q4_K records are staged in shared memory and each decoded value is written once:
    one copy of the decode and its store (32 unrolled ones kept 154 registers a thread, one
    CTA of 256 an SM); ptxas keeps it in few registers, no spills."""
    ptx, launch = _compiled("quantize_q8_k:dequantize_q4_k")
    assert launch["mapping"] == "cta" and launch["slots"] == 32 and launch["slots_rolled"] is True
    assert len(re.findall(r"\bst\.f32\b", ptx)) == 1, "one store: the slot loop is rolled"
    if shutil.which("ptxas"):
        report = ptxas_report(ptx, tmp_path)
        assert spill_store_bytes(report) == [0]
        registers = int(re.search(r"Used (\d+) registers", report).group(1))
        assert registers <= 64, report


@pytest.mark.parametrize("ident", ["vector_add:vector_add", "row_softmax:row_softmax", "layernorm:layernorm"])
def test_iterations_that_keep_their_reads_stay_unrolled(ident):
    """Reads of the iteration's own size are kept in the slots (all of an op's loads in
    flight at once): those slots stay unrolled."""
    _, launch = _compiled(ident)
    assert launch["mapping"] == "cta" and launch["slots"] > 0 and launch["slots_rolled"] is False
