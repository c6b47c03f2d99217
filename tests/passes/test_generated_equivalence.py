"""Each pass on generated programs (pass_programs.py): output verifies; `source` numerics keep
every bit except where a contract rewrite changed rounding (then within the bound);
relaxed_normalization (online folds) stays within the bound, empty rows included."""
from __future__ import annotations

import pytest
from pass_equivalence import assert_bit_identical, assert_within_rounding_bound, optimized, outputs
from pass_programs import random_inputs, random_program

from intentc.parse import parse
from intentc.passes import DEFAULT_PIPELINE

SEEDS = range(24)
EXACT = ["canonicalize", "cse", "dce", "fusion-legality{contract-add=false multiply-reduce=false}",
         "online-reduction", "address-width", "canonicalize,cse,dce"]


def _run(text: str, seed: int, module=None):
    module = module or parse(text)
    return outputs(module, "g", random_inputs(seed), {}, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_exact_passes_on_generated_programs(seed):
    module = parse(random_program(seed))
    before = _run("", seed, module)
    for pipeline in EXACT:
        after_module, _ = optimized(module, pipeline)
        assert_bit_identical(before, _run("", seed, after_module))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("numerics", ["source", "relaxed_normalization"])
def test_default_pipeline_on_generated_programs(seed, numerics):
    module = parse(random_program(seed))
    before = _run("", seed, module)
    after_module, stats = optimized(module, DEFAULT_PIPELINE, numerics)
    if numerics == "source":
        assert "online-reduction.rewritten" not in stats
    assert_within_rounding_bound(before, _run("", seed, after_module))


def test_generated_programs_exercise_every_rewrite():
    totals: dict[str, int] = {}
    for seed in SEEDS:
        _, stats = optimized(parse(random_program(seed)), DEFAULT_PIPELINE, "relaxed_normalization")
        for key, value in stats.items():
            totals[key] = totals.get(key, 0) + value
    for key in ("cse.merged", "dce.removed", "canonicalize.folded", "fusion-legality.contract-add",
                "fusion-legality.multiply-reduce", "fusion-legality.fma", "online-reduction.rewritten"):
        assert totals.get(key, 0) > 0, key
