"""Per-launch host overhead from Python on the GPU: `intentc.load(...)(...)` on torch tensors
beside Triton's `kernel[grid](...)` launch of the same vector add, in one process; plus the
time of `intentc.load` when the kernel is in the disk cache, in a fresh process.

Overhead: the host time of `calls` back-to-back launches on a tiny problem (n = 4096, a few
µs of GPU work each, launches queue asynchronously), divided by `calls`; the median of
`repeats` such rounds. Writes bench/results/launch-<date>-<host>.json (or --out).

    python3 bench/launch.py [--calls 2000] [--repeats 7] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import intentc  # noqa: E402
from bench.common import write_results  # noqa: E402
from bench.gpu import t_add  # noqa: E402

VECTOR_ADD = ROOT / "ir_samples" / "vector_add.kir"
FRESH_LOAD = """
import json, sys, time
start = time.perf_counter()
import intentc
imported = time.perf_counter()
kernel = intentc.load(sys.argv[1], "vector_add", target="cuda")
done = time.perf_counter()
print(json.dumps({"source": kernel.compiled.source, "import_s": imported - start, "load_s": done - imported}))
"""


def per_call_us(launch, calls: int, repeats: int) -> list[float]:
    for _ in range(50):
        launch()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            launch()
        rounds.append((time.perf_counter() - start) / calls * 1e6)
        torch.cuda.synchronize()
    return rounds


def fresh_process_load(cache: str) -> list[dict]:
    env = {**os.environ, "INTENTC_CACHE_DIR": cache}
    runs = []
    for _ in range(4):     # the first compiles into the empty cache; the others hit it
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", FRESH_LOAD, str(VECTOR_ADD)], env=env, capture_output=True,
                             text=True, check=True).stdout
        runs.append({**json.loads(out), "process_wall_s": time.perf_counter() - started})
    return runs


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    n = 4096
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z1, z2 = torch.empty_like(x), torch.empty_like(x)
    kernel = intentc.load(VECTOR_ADD, "vector_add", target="cuda")
    grid = (triton.cdiv(n, 1024),)
    ours = per_call_us(lambda: kernel(x=x, y=y, z=z1), args.calls, args.repeats)
    theirs = per_call_us(lambda: t_add[grid](x, y, z2, n, BLOCK=1024), args.calls, args.repeats)
    kernel.synchronize()
    assert torch.equal(z1, x + y) and torch.equal(z2, x + y)
    with tempfile.TemporaryDirectory() as cache:
        fresh = fresh_process_load(cache)
    intentc_us, triton_us = statistics.median(ours), statistics.median(theirs)
    payload = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
               "n": n, "calls": args.calls, "repeats": args.repeats,
               "intentc_us_per_launch": intentc_us, "triton_us_per_launch": triton_us,
               "intentc/triton": intentc_us / triton_us, "intentc_rounds_us": ours, "triton_rounds_us": theirs,
               "fresh_process_loads": fresh}
    print(json.dumps(payload, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    else:
        print(f"wrote {write_results('launch', payload)}")


if __name__ == "__main__":
    main()
