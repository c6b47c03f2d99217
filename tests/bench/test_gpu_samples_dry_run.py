"""`bench/gpu_samples.py --no-gpu` on a few specs: inputs built on the CPU, the kernel run by
the reference interpreter, the equivalents (torch, Triton interpreted) run, the check passes.
Needs torch and triton (the GPU image has both; CI does not, so it skips there)."""
from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is not installed (the GPU benchmark's equivalents need it)")
pytest.importorskip("triton", reason="triton is not installed (the GPU benchmark's Triton baselines need it)")

from bench import gpu_samples
from bench.gpu_sample_specs import SPECS

# a Triton baseline, a negative-stride view, exact Q8_K bytes, an inout view reset before the check
IDS = ["vector_add:vector_add", "reverse_copy_negative_stride:flip_rows", "quantize_q8_k:quantize_q8_k",
       "saxpy:saxpy"]


@pytest.mark.parametrize("ident", IDS)
def test_dry_run_checks_the_interpreter_against_the_equivalents(ident, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    spec = next(s for s in SPECS if s.id == ident)
    row = gpu_samples.measured_row(spec, gpu_samples.parser().parse_args(["--no-gpu"]), "cpu")
    assert row.get("correct") is True, row
    assert set(row["baselines_ran"]) == set(spec.build(spec.sized(spec.smallest, dry_run=True), "cpu").baselines)
    assert all(ran is True for ran in row["baselines_ran"].values()), row
    assert row["mapping"] in ("cta", "grid-stride", "single-thread") and row["bytes"] > 0
