"""The f32 tiled contraction's vector fragments without a GPU (`nvptx/simt_fragments.py`):
the plan launch.json records, and ptxas keeping the 64 accumulators and the fragments in
registers. The K step's instructions are checked in `filecheck/simt-sgemm.kir`."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intentc.driver import compile_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from mma_cases import variant


def _compiled(arch: str) -> tuple[str, dict]:
    artifacts = compile_kernel(variant("f32", "f32", "f32"), "matmul_tiled", "ptx", arch).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_launch_json_records_the_vector_plan(arch):
    """A 128 x 128 tile, K steps of 16 in a 3-slot ring (48 KiB, static), 256 threads of 8 x 8
    outputs, one CTA an SM; the path is recorded."""
    _, launch = _compiled(arch)
    plan = launch["mma"]
    assert launch["mapping"] == "mma" and launch["block"] == [256, 1, 1]
    assert plan["instruction"] == "fma.f32.v4" and plan["block"] == [128, 128, 16] and plan["warps"] == [8, 1]
    assert plan["stages"] == 3 and plan["resident"] == 1 and plan["shared_bytes"] == 3 * 4 * 16 * 256
    assert launch["layouts"]["encodings"]["#layout0"].startswith("#blocked<{sizePerThread = [4, 4]")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
def test_ptxas_keeps_the_fragments_in_registers(tmp_path):
    ptx, _ = _compiled("sm_90a")
    source = tmp_path / "k.ptx"
    source.write_text(ptx)
    done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(source), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", done.stderr)
    assert spills and all(stores == loads == "0" for stores, loads in spills), done.stderr
