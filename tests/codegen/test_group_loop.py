"""The register form's slot groups as a rolled loop of trips (nvptx/cta_group_loop.py):
which iterations take it (independent coordinates with costly ops, every group full,
nothing kept across iterations), what it does to the code (one copy of the costly code a
trip, no local memory, Philox's products 32-bit, 4 consecutive counters sharing blocks),
against the unrolled form of the same plan; and the grid programs calling libdevice, which
keep their unrolled slots. No GPU needed; tests/gpu/test_group_loop_cuda.py runs the trips
against the unrolled form and the interpreter."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from ptxas_report import ptxas_report, spill_store_bytes

from bench.common import attributes
from bench.compile import compile_args
from bench.gpu_sample_specs import SPECS
from intentc.codegen.nvptx import cta_group_loop
from intentc.driver import compile_kernel

SPEC_BY_ID = {spec.id: spec for spec in SPECS}
ROLLED = ["gelu_helper_call:gelu_fwd", "philox_dropout:dropout", "activation_enum:bias_act"]
# cheap coordinates (loads in flight are their speed), reductions, a costly top-level window;
# grid programs
UNROLLED = ["vector_add:vector_add", "row_softmax:row_softmax", "f8_rowwise_quant:quantize_e5m2_rowwise",
            "kaiser_window_i0:kaiser_frames", "integer_hash_u32:murmur3_bucket", "float_sign_bitcast:sign_ops",
            "stochastic_rounding_bf16:stochastic_round_bf16", "fast_activations_approx:fast_silu_gelu"]
SPECIAL_MATH = "special_math:special_math"


def _compiled(ident: str, rolled: bool = True) -> tuple[str, dict]:
    text, kernel, specialization = compile_args(SPEC_BY_ID[ident])
    with attributes(cta_group_loop, ROLL_GROUPS=rolled, SHARE_PHILOX=rolled):
        artifacts = compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("ident", ROLLED)
def test_independent_costly_iterations_loop_over_their_slot_groups(ident):
    ptx, launch = _compiled(ident)
    unrolled_ptx, unrolled = _compiled(ident, rolled=False)
    assert launch["mapping"] == unrolled["mapping"] == "cta"
    # the same coordinates a thread (T and K): only the code's shape differs
    assert (launch["block"], launch["slots"]) == (unrolled["block"], unrolled["slots"])
    trip = launch["trip_slots"]
    assert trip and launch["slots"] % trip == 0 and trip < launch["slots"] and not unrolled["trip_slots"]
    assert len(ptx.splitlines()) * 2 < len(unrolled_ptx.splitlines())
    assert ".local" not in ptx          # a trip's slots are registers


@pytest.mark.parametrize("ident", UNROLLED)
def test_other_iterations_keep_their_form(ident):
    assert _compiled(ident) == _compiled(ident, rolled=False)


def test_a_trip_of_4_consecutive_counters_runs_2_philox_blocks_in_32_bit_products():
    ptx, launch = _compiled("philox_dropout:dropout")
    unrolled_ptx, unrolled = _compiled("philox_dropout:dropout", rolled=False)
    # a trip is one group of 4 consecutive coordinates (V = 4), whose counters lie in the
    # first's Philox block or the next: 2 blocks of 10 rounds (2 products each) a trip
    assert launch["trip_slots"] == 4 and "sizePerThread = [4]" in launch["layouts"]["encodings"]["#layout0"]
    assert 20 < len(re.findall(r"\bmul\.hi\.u32\b", ptx)) <= 2 * 2 * 10
    assert len(re.findall(r"\bmul\.hi\.u32\b", unrolled_ptx)) > (unrolled["slots"] - 1) * 2 * 10   # a block a slot
    assert not re.search(r"\bmul\.(lo|wide)\.[su]64\b.*-766435501", ptx)


@pytest.mark.parametrize("ident", ["gelu_helper_call:gelu_fwd", "activation_enum:bias_act"])
def test_a_trip_inlines_each_math_function_once_a_slot(ident):
    ptx, launch = _compiled(ident)
    unrolled_ptx, _ = _compiled(ident, rolled=False)
    # erff's polynomial constant, once a coordinate of a trip rather than of the thread
    marker = "0f3E0375D3"
    assert ptx.count(marker) * launch["slots"] == unrolled_ptx.count(marker) * launch["trip_slots"] > 0


def test_grid_math_programs_predicate_their_guarded_reads_and_run_without_lsr():
    """special_math (a grid program calling libdevice): 2 coordinates a thread a chunk
    (`stages.MATH_GRID_SLOTS`), its writes unrolled (rolled a slot a trip, the H200 ran it
    28 % slower: docs/gpu.md), its guarded chunk's reads predicated loads rather than a branch
    each, and its code generation without Loop Strength Reduction (`StagePlan.strength_reduce`)."""
    from intentc.codegen.nvptx.stages import stage_plan
    from intentc.parse import parse
    from sample_paths import sample_text
    ptx, launch = _compiled(SPECIAL_MATH)
    assert launch["mapping"] == "grid" and launch["slots"] == 2 and not launch["trip_slots"]
    assert len(re.findall(r"@%p\d+ ld\.global\.f32", ptx)) == 4 * 2
    assert stage_plan(parse(sample_text("special_math")).find("special_math")).strength_reduce is False
    murmur = parse(sample_text("integer_hash_u32")).find("murmur3_bucket")
    assert stage_plan(murmur).strength_reduce is True        # no math functions: LSR kept


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
@pytest.mark.parametrize("ident", [*ROLLED, SPECIAL_MATH])
def test_ptxas_fits_the_loops_without_spills(ident, tmp_path):
    report = ptxas_report(_compiled(ident)[0], tmp_path)
    spills = spill_store_bytes(report)
    assert spills and max(spills) == 0, report
