"""Plans that say `straight_line` False have the code generator leave out SLSR and
NaryReassociate (`machine.STRAIGHT_LINE_PASSES`) through LLVM's pass gate, which cannot be
undone within a process: each test runs its compiles in a fresh process, so that what one
process did first cannot hide a leak. Every other kernel, and a plan's kernel compiled with
the passes, gets the PTX that a process which never left them out gives."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPARSE24 = "sparse_2of4_matmul:sparse24_matmul"
VECTOR_ADD = "vector_add:vector_add"

# compiles each (sample id, straight_line forced on?) in order, printing the PTX of each as JSON;
# "gate" first: the skipping context made before anything ran in the global context
_SCRIPT = """
import json, sys
from bench.compile import compile_args
from bench.gpu_codegen_ab import for_tiles
from bench.gpu_sample_specs import SPECS
from intentc.codegen.nvptx import machine
from intentc.driver import compile_kernel
ptx = []
for ident, forced in json.loads(sys.argv[1]):
    if ident == "gate":
        with machine.LOCK:
            machine._without_straight_line()
        continue
    text, kernel, specialization = compile_args(next(s for s in SPECS if s.id == ident))
    with for_tiles("_straight_line", True) if forced else __import__("contextlib").nullcontext():
        result = compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization)
    ptx.append(result.artifacts["kernel.ptx"])
print(json.dumps(ptx))
"""


def fresh_process(*compiles: tuple[str, bool]) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(compiles)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def never_skipped() -> list[str]:
    """vector add and sparse 2:4 with the passes, in a process that never left them out."""
    return fresh_process((VECTOR_ADD, False), (SPARSE24, True))


def test_the_plan_leaves_the_passes_out_and_nothing_else_changes(never_skipped):
    skipped, vector_add, with_passes = fresh_process((SPARSE24, False), (VECTOR_ADD, False), (SPARSE24, True))
    assert skipped != with_passes
    assert [vector_add, with_passes] == never_skipped


def test_the_global_context_keeps_every_pass_when_the_list_is_set_first(never_skipped):
    assert fresh_process(("gate", False), (VECTOR_ADD, False), (SPARSE24, True)) == never_skipped


def test_launch_json_records_the_choice():
    from bench.compile import compile_args
    from bench.gpu_sample_specs import SPECS
    from intentc.driver import compile_kernel
    text, kernel, specialization = compile_args(next(s for s in SPECS if s.id == SPARSE24))
    launch = json.loads(compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization)
                        .artifacts["launch.json"])
    assert launch["mma"]["straight_line"] is False
