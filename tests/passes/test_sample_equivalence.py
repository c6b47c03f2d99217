"""Each pass on every ir_samples kernel: the output verifies and the kernel's outputs stay
bit-identical under `source` numerics (FMA marks are permissions the interpreter does not
take), or within the documented bound where a §5.3/§5.4 contract rewrite changed rounding.
Inputs come from the interpreter's own sample cases (tests/interp/test_samples.py)."""
from __future__ import annotations

import numpy as np
import pytest
from pass_equivalence import assert_bit_identical, assert_within_rounding_bound, optimized, outputs
from test_samples import CASES, SAMPLES

from intentc.parse import parse
from intentc.passes import DEFAULT_PIPELINE

EXACT_PIPELINES = ["canonicalize", "cse", "dce", "fusion-legality{contract-add=false multiply-reduce=false}",
                   "online-reduction", "address-width"]
REWRITING_PIPELINES = ["fusion-legality", DEFAULT_PIPELINE]
IDS = [f"{c[0]}:{c[1]}" for c in CASES]
_BASELINES: dict = {}


def _baseline(case):
    key = (case[0], case[1])
    if key not in _BASELINES:
        sample, kernel, make = case[:3]
        inputs, constexprs = make(np.random.default_rng(7))
        module = parse((SAMPLES / f"{sample}.kir").read_text())
        _BASELINES[key] = module, inputs, constexprs, outputs(module, kernel, inputs, constexprs, seed=7)
    return _BASELINES[key]


@pytest.mark.parametrize("pipeline", EXACT_PIPELINES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_exact_passes_keep_every_bit(case, pipeline):
    module, inputs, constexprs, before = _baseline(case)
    after_module, _ = optimized(module, pipeline)
    assert_bit_identical(before, outputs(after_module, case[1], inputs, constexprs, seed=7))


@pytest.mark.parametrize("pipeline", REWRITING_PIPELINES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_contract_rewrites_stay_within_bound(case, pipeline):
    module, inputs, constexprs, before = _baseline(case)
    after_module, stats = optimized(module, pipeline)
    after = outputs(after_module, case[1], inputs, constexprs, seed=7)
    rewrites = stats.get("fusion-legality.contract-add", 0) + stats.get("fusion-legality.multiply-reduce", 0)
    if rewrites:
        assert_within_rounding_bound(before, after)
    else:
        assert_bit_identical(before, after)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_relaxed_default_pipeline_stays_within_bound(case):
    module, inputs, constexprs, before = _baseline(case)
    after_module, _ = optimized(module, DEFAULT_PIPELINE, numerics="relaxed_normalization")
    assert_within_rounding_bound(before, outputs(after_module, case[1], inputs, constexprs, seed=7))


def test_fusion_fires_on_samples():
    """The samples exercise the rewrites the bounded tests are about (not only no-ops)."""
    fired = {}
    for sample in ("layernorm", "saxpy"):
        _, stats = optimized(parse((SAMPLES / f"{sample}.kir").read_text()), "fusion-legality")
        fired[sample] = stats
    assert fired["layernorm"]["fusion-legality.multiply-reduce"] == 1
    assert fired["saxpy"]["fusion-legality.fma"] == 1
