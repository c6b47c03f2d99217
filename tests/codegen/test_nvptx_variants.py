"""Register-form variants for dynamic row extents (docs/gpu.md, "Variants for dynamic
extents"), without a GPU: which kernels get them, what launch.json records, the PTX
entries, and the check-site numbering every entry shares. `tests/gpu/test_dynamic_variants.py`
runs them against the interpreter."""
from __future__ import annotations

import json
import re

import pytest

from sample_paths import sample_text

from intentc.codegen.nvptx.variants import VARIANT_SIZES
from intentc.driver import compile_kernel
from intentc.options import Specialization


def _compiled(text: str, kernel: str, extents: dict | None = None) -> tuple[str, dict]:
    """PTX and launch.json of the eager module (`lazy_variants` False: every variant in it)."""
    artifacts = compile_kernel(text, kernel, "ptx", "sm_90",
                               specialization={"extents": extents or {}, "lazy_variants": False}).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("sample,kernel", [("row_softmax", "row_softmax"), ("philox_dropout", "dropout"),
                                           ("cumsum", "row_cumsum")])
def test_each_variant_is_the_register_plan_of_its_bound(sample, kernel):
    """A variant for S ≤ B runs the CTA size and slots a static S = B gets."""
    ptx, launch = _compiled(sample_text(sample), kernel)
    variants = launch["variants"]
    assert variants and [v["max"] for v in variants] == sorted(v["max"] for v in variants)
    assert {v["max"] for v in variants} <= set(VARIANT_SIZES)
    for variant in variants:
        _, specialized = _compiled(sample_text(sample), kernel, {"N": variant["max"]})
        assert (variant["block"], variant["slots"]) == (specialized["block"][0], specialized["slots"])
        assert variant["extent"] == "N" and variant["ctas_per_sm"] == specialized["ctas_per_sm"]
        entry = re.search(rf"\.entry {variant['entry']}\(.*?\)\s*\.maxntid (\d+)", ptx, re.S)
        assert entry and int(entry.group(1)) == variant["block"]
    assert re.search(rf"\.entry {launch['kernel']}\(", ptx)     # the fallback above the largest bound


def test_a_row_length_through_dim_selects_by_the_views_extent():
    _, launch = _compiled(sample_text("row_sum"), "row_sum_f16")
    assert {v["extent"] for v in launch["variants"]} == {"N"}


INDEX_EXTENT = """
kernel @scale_rows(%x: view<f32, [%M, %n], in>, %n: index, %y: view<f32, [%M, %n], out>) {
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%n]>
    %v = read %x index(%i, %cols) : tensor<f32, [%n]>
    %s = reduce %v {axes = [0], kind = sum} : f32
    %s_b = broadcast %s : tensor<f32, [%n]>
    %w = div %v, %s_b : tensor<f32, [%n]>
    write %y, %w index(%i, %cols)
  }
}
"""

TWO_DYNAMIC_EXTENTS = """
kernel @tiles(%x: view<f32, [%M, %R, %C], in>, %y: view<f32, [%M, %R, %C], out>) {
  parallel %M {
  ^tile(%i: index):
    %r = iota {axis = 0} : tensor<index, [%R, %C]>
    %c = iota {axis = 1} : tensor<index, [%R, %C]>
    %v = read %x index(%i, %r, %c) : tensor<f32, [%R, %C]>
    write %y, %v index(%i, %r, %c)
  }
}
"""


def test_an_index_parameter_extent_selects_variants():
    _, launch = _compiled(INDEX_EXTENT, "scale_rows")
    assert {v["extent"] for v in launch["variants"]} == {"n"}


@pytest.mark.parametrize("text,kernel,extents,why", [
    (sample_text("row_softmax"), "row_softmax", {"N": 1000}, "a static row: the register form itself"),
    (sample_text("vector_add"), "vector_add", {}, "literal extents"),
    (sample_text("histogram_masked"), "histogram256", {}, "static rows"),
    (TWO_DYNAMIC_EXTENTS, "tiles", {}, "the row length is a product of two dynamic extents"),
    (sample_text("segment_sum_scatter_reduce"), None, {}, "the body does not fit the register form"),
])
def test_no_variants(text, kernel, extents, why):
    kernel = kernel or text.split("kernel @", 1)[1].split("(", 1)[0]
    ptx, launch = _compiled(text, kernel, extents)
    assert launch["variants"] == [], why
    assert len(re.findall(r"\.entry ", ptx)) == 1


def test_every_entry_numbers_the_check_sites_alike():
    """The entries raise their checks in different orders; a lowering given another's sites
    keeps their ids, so one abi.json decodes the status of every entry."""
    from intentc.codegen.llvm.kernel import lower_kernel
    from intentc.codegen.nvptx.hooks import NvptxHooks
    from intentc.codegen.nvptx.mapping import plan_mapping
    from intentc.codegen.nvptx.variants import eager_variants, variant_rule
    from intentc.parse import parse
    module = parse(sample_text("philox_dropout"))
    kernel = module.find("dropout")
    base = plan_mapping(kernel)
    first = lower_kernel(module, "dropout", NvptxHooks(base))
    rule = variant_rule(kernel, base, None)
    assert rule is not None
    (_, variant_mapping), *_ = eager_variants(kernel, base, rule, None)
    alone = lower_kernel(module, "dropout", NvptxHooks(variant_mapping))
    shared = lower_kernel(module, "dropout", NvptxHooks(variant_mapping), sites=first.sites)
    assert alone.sites != first.sites and set(alone.sites) == set(first.sites)   # another order alone
    assert shared.sites == first.sites


def _rule(sample: str, kernel: str):
    from intentc.codegen.nvptx.variants import VariantRule
    artifacts = compile_kernel(sample_text(sample), kernel, "ptx", "sm_90").artifacts     # lazy: the default
    return artifacts["kernel.ptx"], VariantRule(**json.loads(artifacts["launch.json"])["variant_rule"])


def test_a_lazy_compile_holds_only_the_kernels_entry_and_the_rule():
    ptx, rule = _rule("row_softmax", "row_softmax")
    assert len(re.findall(r"\.entry ", ptx)) == 1
    assert (rule.extent, rule.factor, rule.slots, rule.vector, rule.largest) == ("N", 1, 32, 1, 32 * 1024)
    assert rule.bucket(0) is None and rule.bucket(rule.largest + 1) is None


@pytest.mark.parametrize("sample,kernel,slots", [("row_softmax", "row_softmax", 32), ("philox_dropout", "dropout", 8),
                                                 ("cumsum", "row_cumsum", 16), ("layernorm", "layernorm", 16)])
def test_buckets_partition_the_row_lengths(sample, kernel, slots):
    """Every row length lies in exactly one bucket, spanning less than one group of slots
    (T·V elements), and every length in a bucket maps to that bucket."""
    from intentc.codegen.nvptx.variants import register_bucket
    _, rule = _rule(sample, kernel)
    assert rule.slots == slots
    lengths = sorted({*range(1, 2100), *range(2100, rule.largest + 1, 37), rule.largest})
    for length in lengths:
        fewest, most = rule.bucket(length)
        assert fewest <= length <= most and most - fewest < 1024 * rule.vector
        assert rule.bucket(fewest) == rule.bucket(most) == (fewest, most)
        assert register_bucket(most, rule.slots, rule.vector) == (fewest, most)


@pytest.mark.parametrize("sample,kernel,cols", [("row_softmax", "row_softmax", 1000), ("row_softmax", "row_softmax", 1536),
                                                ("row_softmax", "row_softmax", 1024), ("philox_dropout", "dropout", 2048),
                                                ("philox_dropout", "dropout", 1500), ("cumsum", "row_cumsum", 3000),
                                                ("row_sum", "row_sum_f16", 3000)])
def test_a_variant_runs_the_specialized_plan_of_its_row_length(sample, kernel, cols):
    """The variant compiled for a bucket has one entry with the CTA size and slots that the
    kernel specialized to a row length of the bucket gets, and guards only its last group
    of slots (the plan's full slots: those below the bucket's fewest), none where the row
    fills its groups exactly."""
    from intentc.codegen.nvptx.cta import known_extents, masked_plan
    from intentc.parse import parse
    _, rule = _rule(sample, kernel)
    bucket = rule.bucket(cols)
    artifacts = compile_kernel(sample_text(sample), kernel, "ptx", "sm_90", specialization={"variant": bucket}).artifacts
    launch = json.loads(artifacts["launch.json"])
    _, specialized = _compiled(sample_text(sample), kernel, {"N": cols})
    assert len(re.findall(r"\.entry ", artifacts["kernel.ptx"])) == 1
    assert (launch["mapping"], launch["block"], launch["slots"]) == ("cta", specialized["block"], specialized["slots"])
    assert launch["variants"] == [] and launch["variant_rule"] == {}
    kernel_ir = parse(sample_text(sample)).find(kernel)
    plan = masked_plan(kernel_ir, known_extents(kernel_ir, Specialization()), *bucket, Specialization())
    exact = bucket[0] == bucket[1] == cols       # the groups fill the row: no guard at all
    assert plan.masked and plan.full_slots == plan.slots - (0 if exact else plan.vector)


def test_eager_variants_guard_only_the_slots_above_the_previous_bound():
    from intentc.codegen.nvptx.mapping import plan_mapping
    from intentc.codegen.nvptx.variants import eager_variants, variant_rule
    from intentc.parse import parse
    kernel = parse(sample_text("row_softmax")).find("row_softmax")
    base = plan_mapping(kernel)
    rule = variant_rule(kernel, base, None)
    assert rule is not None
    variants = eager_variants(kernel, base, rule, None)
    assert [(v.min, v.max) for v, _ in variants] == [(1, 1024), (1025, 2048), (2049, 4096), (4097, 8192),
                                                     (8193, 16384)]
    for variant, mapping in variants:
        plan = mapping.cta
        assert plan.fewest == variant.min and plan.full_slots == (variant.min - 1) // plan.threads


@pytest.mark.parametrize("sample,kernel,variant", [("row_softmax", "row_softmax", (960, 1023)),
                                                   ("row_softmax", "row_softmax", (0, 0)),
                                                   ("row_softmax", "row_softmax", (40000, 40000)),
                                                   ("vector_add", "vector_add", (961, 1023))])
def test_a_variant_that_is_no_bucket_is_a_diagnostic(sample, kernel, variant):
    from intentc.diagnostics import DiagnosticError
    with pytest.raises(DiagnosticError) as raised:
        compile_kernel(sample_text(sample), kernel, "ptx", "sm_90", specialization={"variant": variant})
    assert raised.value.diagnostics[0].code == "E0066"


@pytest.mark.parametrize("sample,kernel,cols", [("row_softmax", "row_softmax", 1024), ("cumsum", "row_cumsum", 4096),
                                                ("row_sum", "row_sum_f16", 2048)])
def test_a_one_length_bucket_is_the_specialized_kernel(sample, kernel, cols):
    """A bucket of one row length (the groups fill it exactly) is launched only with the
    extent bound to that length, so it is lowered with the extent fixed: the PTX of the
    kernel specialized to it, under the same launch facts; launch.json says it serves that
    length alone."""
    views = ("x", "y")
    facts = {"unit_stride": views, "aligned16": views, "contiguous": views}
    _, rule = _rule(sample, kernel)
    assert rule.bucket(cols) == (cols, cols)
    variant = compile_kernel(sample_text(sample), kernel, "ptx", "sm_90",
                             specialization={"variant": (cols, cols), **facts}).artifacts
    specialized = compile_kernel(sample_text(sample), kernel, "ptx", "sm_90",
                                 specialization={"extents": {"N": cols}, **facts}).artifacts
    assert variant["kernel.ptx"] == specialized["kernel.ptx"]
    serves = json.loads(variant["launch.json"])["serves"]
    assert (serves["min"], serves["max"]) == (cols, cols)
