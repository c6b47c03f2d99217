"""The launch-time pick among a kernel's entries (`runtime/variants.py`): the first variant
whose bound holds the launch's extent, else the kernel's own entry."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.runtime.variants import Entry, EntryTable

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
