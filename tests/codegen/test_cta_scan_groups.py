"""A register-form path off by default (docs/gpu.md, "Paths awaiting GPU verification"), on
only where a compile names it (`CompileOptions.gpu_paths`): scans that exchange the warps'
totals of all slot groups at once (`grouped-scans`, `nvptx/cta_scan_groups.py`: one
barrier pair a scan where the groups' and warps' totals fit one warp, a pair a group
otherwise). No GPU needed; tests/gpu/test_grouped_scans.py runs these shapes against the
interpreter with the path on."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from intentc.driver import compile_kernel
from intentc.options import CompileOptions, Specialization
from sample_paths import sample_text

GROUPED = CompileOptions(gpu_paths=("grouped-scans",))


def cumsum(cols: int, options: CompileOptions = GROUPED) -> dict:
    return compile_kernel(sample_text("cumsum"), "row_cumsum", "ptx", "sm_90", options,
                          specialization=Specialization(extents={"N": cols})).artifacts


@pytest.mark.parametrize("cols", [512, 513, 1025, 4096])      # 2-4 groups of 64-256 threads
def test_all_groups_share_one_barrier_pair(cols):
    assert cumsum(cols)["kernel.ptx"].count("bar.sync") == 2
    assert cumsum(cols, CompileOptions())["kernel.ptx"].count("bar.sync") > 2      # the verified path


def test_more_totals_than_a_warp_scans_group_by_group():
    assert cumsum(5000)["kernel.ptx"].count("bar.sync") == 2 * 3        # 3 groups of 512 threads: 48 totals


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
def test_ptxas_accepts_the_grouped_scan(tmp_path):
    source = tmp_path / "cumsum.ptx"
    source.write_text(cumsum(4096)["kernel.ptx"])
    done = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(source), "-o", str(tmp_path / "cumsum.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "0 bytes spill stores" in done.stderr, done.stderr


def _reductions_cases():
    """The generic and tile scans of tests/gpu/test_cta_reductions.py (its text only)."""
    from pathlib import Path
    text = (Path(__file__).parents[1] / "gpu" / "test_cta_reductions.py").read_text()
    found = {}
    for name in ("AFFINE_SCAN", "TILE_SCAN"):
        found[name] = re.search(name + r' = """(.*?)"""', text, re.S).group(1)
    return found


@pytest.mark.parametrize("flags", ["", ", exclusive = true", ", reverse = true", ", exclusive = true, reverse = true"])
@pytest.mark.parametrize("case,kernel,extents", [("AFFINE_SCAN", "affine_scan", {"N": 500}),   # 8 groups of 1
                                                 ("TILE_SCAN", "tile_scan", {"R": 7, "C": 300})])   # 3 of 4
def test_generic_and_segmented_scans_group_at_once(case, kernel, extents, flags):
    text = _reductions_cases()[case].replace("FLAGS", flags)

    def barriers(options):
        return compile_kernel(text, kernel, "ptx", "sm_90", options, specialization=Specialization(extents=extents)
                              ).artifacts["kernel.ptx"].count("bar.sync")
    assert barriers(GROUPED) == 2 and barriers(CompileOptions()) > 2
