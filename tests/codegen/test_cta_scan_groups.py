"""Two register-form paths that await GPU verification (docs/gpu.md, "Paths awaiting GPU
verification"), on only where a compile names them (`CompileOptions.gpu_paths`): scans
that exchange the warps' totals of all slot groups at once (`grouped-scans`,
`nvptx/cta_scan_groups.py`: one barrier pair a scan where the groups' and warps' totals
fit one warp, a pair a group otherwise), and groups of four 32-bit elements moved by a
predicated `ld/st.global.v4` with no branch between groups (`predicated-vectors`,
`nvptx/vector_access.py`). No GPU needed; tests/gpu/test_cta_reductions.py runs these
shapes against the interpreter with the paths on."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from intentc.driver import compile_kernel
from intentc.options import CompileOptions, Specialization
from sample_paths import sample_text

BOTH = CompileOptions(gpu_paths=("grouped-scans", "predicated-vectors"))


def cumsum(cols: int, options: CompileOptions = BOTH) -> dict:
    return compile_kernel(sample_text("cumsum"), "row_cumsum", "ptx", "sm_90", options,
                          specialization=Specialization(extents={"N": cols})).artifacts


@pytest.mark.parametrize("cols", [512, 513, 1025, 4096])      # 2-4 groups of 64-256 threads
def test_all_groups_share_one_barrier_pair(cols):
    assert cumsum(cols)["kernel.ptx"].count("bar.sync") == 2
    assert cumsum(cols, CompileOptions())["kernel.ptx"].count("bar.sync") > 2      # the verified path


def test_more_totals_than_a_warp_scans_group_by_group():
    assert cumsum(5000)["kernel.ptx"].count("bar.sync") == 2 * 3        # 3 groups of 512 threads: 48 totals


def test_groups_move_in_predicated_vector_accesses_without_branches():
    ptx = cumsum(4096)["kernel.ptx"]
    assert len(re.findall(r"@p ld\.global\.v4\.b32", ptx)) == 4 and len(re.findall(r"@%p\d+ st\.global\.v4\.b32", ptx)) == 4
    assert json.loads(cumsum(4096)["launch.json"])["gpu_paths"] == ["grouped-scans", "predicated-vectors"]
    assert "@p ld.global.v4" not in cumsum(4096, CompileOptions())["kernel.ptx"]


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
def test_ptxas_accepts_both_paths(tmp_path):
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
    assert barriers(BOTH) == 2 and barriers(CompileOptions()) > 2
