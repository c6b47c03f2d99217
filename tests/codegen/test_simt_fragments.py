"""The f32 tiled contraction's vector fragments without a GPU (`nvptx/simt_fragments.py`, the
default f32 plan `fma.f32.v4` since session 7): the plan launch.json records, the K step's instructions
(FileCheck lines in `simt_fragments.check`) and ptxas keeping the 64 accumulators and the
fragments in registers."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lit_runner import filecheck

from intentc.driver import compile_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from mma_cases import variant

CHECKS = Path(__file__).parent / "simt_fragments.check"


def _compiled(arch: str) -> tuple[str, dict]:
    artifacts = compile_kernel(variant("f32", "f32", "f32"), "matmul_tiled", "ptx", arch).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_launch_json_records_the_vector_plan(arch):
    """The default f32 plan: a 128 x 128 tile, K steps of 32 in a 3-slot ring (96 KiB, dynamic
    shared memory), 256 threads of 8 x 8 outputs, one CTA an SM; the path is recorded."""
    _, launch = _compiled(arch)
    plan = launch["mma"]
    assert launch["mapping"] == "mma" and launch["block"] == [256, 1, 1]
    assert plan["instruction"] == "fma.f32.v4" and plan["block"] == [128, 128, 32] and plan["warps"] == [8, 1]
    assert plan["stages"] == 3 and plan["resident"] == 1 and plan["shared_bytes"] == 3 * 4 * 32 * 256
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


@pytest.mark.parametrize("prefix", ["SIMT", "SIMT-NUMERICS"])
def test_k_step_reads_vectors_and_fuses(prefix, tmp_path, capsys):
    """Per 4 K elements the 8 A vectors, then per K element 2 B vectors and 64 fma.rn.f32; no
    scalar shared read, no TF32, no tensor-core instruction, no flush to zero."""
    ptx, _ = _compiled("sm_90a")
    produced = tmp_path / "kernel.ptx"
    produced.write_text(ptx)
    assert filecheck(CHECKS, produced, f"--check-prefix={prefix}") == 0, capsys.readouterr().err
