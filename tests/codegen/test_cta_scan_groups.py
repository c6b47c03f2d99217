"""The register form's scans exchange the warps' totals of all slot groups at once
(`nvptx/cta_scan_groups.py`): one barrier pair a scan where the groups' and warps' totals
fit one warp, a pair a group otherwise. No GPU needed (tests/gpu/test_cta_reductions.py
runs these shapes bit for bit against the interpreter)."""
from __future__ import annotations

import pytest

from intentc.driver import compile_kernel
from intentc.options import Specialization
from sample_paths import sample_text


def barriers(cols: int) -> int:
    result = compile_kernel(sample_text("cumsum"), "row_cumsum", "ptx", "sm_90",
                            specialization=Specialization(extents={"N": cols}))
    return result.artifacts["kernel.ptx"].count("bar.sync")


@pytest.mark.parametrize("cols", [512, 513, 1025, 4096])      # 2-4 groups of 64-256 threads
def test_all_groups_share_one_barrier_pair(cols):
    assert barriers(cols) == 2


def test_more_totals_than_a_warp_scans_group_by_group():
    assert barriers(5000) == 2 * 3        # 3 groups of 512 threads: 48 totals
