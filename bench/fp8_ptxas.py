"""What can be checked of the 8-bit widening plans without a GPU (docs/gpu.md, "8-bit
widening options"): each plan of `wgmma_probe.PLANS_F8` (and the defaults) compiled for
sm_90a and given to `ptxas -v`: its exit status, registers, spills and warnings, the plan's
shared bytes and ring depths, and the compile's seconds on this machine.

    python3 bench/fp8_ptxas.py [--out FILE.json]
"""
from __future__ import annotations

import argparse
import ast
import datetime
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "gpu"), str(ROOT / "tests" / "codegen"), str(ROOT)]
from mma_cases import tma_plan_under, variant  # noqa: E402

from intentc.driver import compile_kernel  # noqa: E402


def probe_plans() -> list:
    """`wgmma_probe.PLANS_F8`, read from its source (the probe itself imports torch)."""
    source = (ROOT / "bench" / "wgmma_probe.py").read_text()
    start = source.index("PLANS_F8 = ") + len("PLANS_F8 = ")
    return ast.literal_eval(source[start:source.index("\n\n\n", start)])


def row(dtype: str, plan: dict, folder: Path) -> dict:
    start = time.time()
    with tma_plan_under(plan):
        artifacts = compile_kernel(variant(dtype, "f32", "f16"), "matmul_tiled", "ptx", "sm_90a").artifacts
    seconds = time.time() - start
    (folder / "k.ptx").write_text(artifacts["kernel.ptx"])
    done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(folder / "k.ptx"), "-o", str(folder / "k.cubin")],
                          capture_output=True, text=True)
    entry = done.stderr.split(f"Function properties for {json.loads(artifacts['launch.json'])['kernel']}\n")[-1]
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", entry)
    registers = re.search(r"Used (\d+) registers", entry)
    mma = json.loads(artifacts["launch.json"])["mma"]
    return {"dtype": dtype, "plan": plan, "ptxas_rc": done.returncode,
            "registers": int(registers.group(1)) if registers else None,
            "spill_stores": int(spills.group(1)) if spills else None,
            "spill_loads": int(spills.group(2)) if spills else None,
            "warnings": [line for line in done.stderr.splitlines() if "warning" in line.lower()],
            "shared_bytes": mma["shared_bytes"], "stages": mma["stages"], "raw_stages": mma["raw_stages"],
            "widen": mma["widen"], "compile_s": round(seconds, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for dtype, plan in [("f8e4m3fn", {}), ("f8e5m2", {}), *probe_plans()]:
            rows.append(row(dtype, plan, Path(folder)))
            print(json.dumps(rows[-1]), flush=True)
    if args.out:
        version = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout.splitlines()[-1]
        Path(args.out).write_text(json.dumps({"date": datetime.date.today().isoformat(), "ptxas": version,
                                              "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
