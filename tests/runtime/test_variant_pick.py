"""The launch-time pick among a kernel's entries (`runtime/variants.py`): the first variant
whose bound holds the launch's extent, else the kernel's own entry."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.runtime.variants import Entry, EntryTable
from sample_files import ROOT

SOFTMAX = ROOT / "ir_samples" / "row_softmax.kir"

DEFAULT = Entry("dynamic", (264, 1, 1), (512, 1, 1))
SMALL = Entry("s1024", (4224, 1, 1), (64, 1, 1))
LARGE = Entry("s4096", (2112, 1, 1), (128, 1, 1))


@pytest.mark.parametrize("value,expected", [(0, SMALL), (1, SMALL), (1024, SMALL), (1025, LARGE), (4096, LARGE),
                                            (4097, DEFAULT), (1 << 40, DEFAULT)])
def test_the_smallest_bound_that_holds_the_extent(value, expected):
    table = EntryTable(DEFAULT, "N", [(1024, SMALL), (4096, LARGE)])
    assert table.pick({"N": (value, "x"), "M": (7, "x")}, {}) is expected


def test_an_index_parameter_extent_is_read_from_the_bound_scalars():
    table = EntryTable(DEFAULT, "n", [(1024, SMALL)])
    assert table.pick({}, {"n": np.asarray(1000, np.int64)}) is SMALL
    assert table.pick({}, {"n": np.asarray(5000, np.int64)}) is DEFAULT


def test_without_variants_the_kernels_own_entry():
    assert EntryTable(DEFAULT).pick({}, {}) is DEFAULT


def _lazy():
    from intentc.codegen.nvptx.variants import VariantRule
    from intentc.runtime.variants import LazyVariants
    built = []

    def build(bucket):
        built.append(bucket)
        return f"kernel {bucket}"
    return LazyVariants(VariantRule("N", 1, 16, 1, 16 * 1024), build), built


def test_a_lazy_variant_is_built_on_the_first_launch_of_its_bucket_only():
    lazy, built = _lazy()
    picks = [lazy.pick({"N": (n, "x")}, {}) for n in (1000, 1023, 961, 1000, 1024, 2000)]
    assert picks == ["kernel (961, 1023)"] * 4 + ["kernel (1024, 1024)", "kernel (1921, 2047)"]
    assert built == [(961, 1023), (1024, 1024), (1921, 2047)]


def test_empty_and_too_long_rows_take_the_kernels_own_entry():
    lazy, built = _lazy()
    assert lazy.pick({"N": (0, "x")}, {}) is None and lazy.pick({"N": (16 * 1024 + 1, "x")}, {}) is None
    assert built == []


def test_every_entry_point_compiles_variants_lazily_unless_told_otherwise():
    from intentc.driver import front_end
    from intentc.options import Specialization
    assert Specialization().lazy_variants and not Specialization(lazy_variants=False).lazy_variants
    # one variant's compile holds no others: with or without `lazy_variants`, one key
    spelt = [front_end(SOFTMAX.read_text(), "row_softmax", "ptx", "sm_90",
                       specialization={"variant": (961, 1023), "lazy_variants": lazy}).specialization
             for lazy in (False, True)]
    assert spelt[0] == spelt[1] and spelt[0].lazy_variants


def test_a_call_picks_its_variant_from_the_arguments_shapes_before_binding():
    from intentc.parse import parse
    from intentc.runtime.variants import extent_sources
    kernel = parse(ROW_AND_INDEX).find("k")
    lazy, built = _lazy()
    lazy._sources = extent_sources(kernel.params, "N")
    assert lazy._sources == [("x", 1), ("y", 0)]
    assert lazy.pick_unbound({"x": np.zeros((3, 1000), np.float32)}) == "kernel (961, 1023)"
    assert lazy.pick_unbound({"x": np.float32(1), "y": np.zeros(2048, np.float32)}) == "kernel (2048, 2048)"
    assert lazy.pick_unbound({"t": 1.0}) is None          # nothing to read it from: bind, then pick
    assert lazy.pick_unbound({"x": np.zeros((3, 0), np.float32)}) is None     # an empty row: the own entry
    assert extent_sources(kernel.params, "n") == [("n", None)]
    assert built == [(961, 1023), (2048, 2048)]


ROW_AND_INDEX = """
kernel @k(%x: view<f32, [%M, %N], in>, %n: index, %y: view<f32, [%N], out>) {
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%N]>
    %v = read %x index(%i, %cols) : tensor<f32, [%N]>
    write %y, %v index(%cols)
  }
}
"""
