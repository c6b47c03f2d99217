"""Illegal fusion cases are provably untouched: the pass returns the very same module
object (nothing rebuilt) and counts no rewrite. Same for online-reduction under `source`
or with online_reduction off."""
from __future__ import annotations

from pathlib import Path

import pytest

from intentc.ir.nodes import Module
from intentc.options import CompileOptions
from intentc.parse import parse
from intentc.passes import PassContext, parse_pipeline

CASES = Path(__file__).parent / "filecheck"


def _kernel(file: str, name: str) -> Module:
    module = parse((CASES / file).read_text())
    return Module(items=(module.find(name),))


@pytest.mark.parametrize("file, pipeline", [
    ("fusion-contract-add.kir", "fusion-legality{multiply-reduce=false fma=false}"),
    ("fusion-multiply-reduce.kir", "fusion-legality{contract-add=false fma=false}"),
])
def test_illegal_fusions_leave_the_module_identical(file, pipeline):
    module = _kernel(file, "illegal")
    ctx = PassContext()
    (fusion,) = parse_pipeline(pipeline)
    assert fusion.run(module, ctx) is module
    assert sum(ctx.statistics.values()) == 0


@pytest.mark.parametrize("options", [CompileOptions(), CompileOptions(numerics="relaxed_normalization",
                                                                      online_reduction=False)])
def test_online_reduction_never_fires_outside_relaxed_with_online_on(options):
    module = _kernel("online-reduction.kir", "attention_row")
    (online,) = parse_pipeline("online-reduction")
    assert online.run(module, PassContext(options)) is module


def test_online_reduction_fires_when_allowed():
    module = _kernel("online-reduction.kir", "attention_row")
    (online,) = parse_pipeline("online-reduction")
    ctx = PassContext(CompileOptions(numerics="relaxed_normalization"))
    assert online.run(module, ctx) is not module and ctx.statistics["online-reduction.rewritten"] == 1


@pytest.mark.parametrize("pipeline", ["canonicalize", "cse", "dce", "fusion-legality", "address-width"])
def test_second_run_changes_nothing(pipeline):
    (single,) = parse_pipeline(pipeline)
    module = parse((Path(__file__).resolve().parents[2] / "ir_samples" / "layernorm.kir").read_text())
    once = single.run(module, PassContext())
    assert single.run(once, PassContext()) is once
