"""Per-launch host overhead from Python on the GPU: `intentc.load(...)(...)` on torch tensors
beside Triton's `kernel[grid](...)` launch of the same vector add, in one process; plus the
time of `intentc.load` when the kernel is in the disk cache, in a fresh process.

Overhead: the host time of `calls` back-to-back launches on a tiny problem (n = 4096, a few
µs of GPU work each, launches queue asynchronously), divided by `calls`; the median of
`repeats` such rounds, the launchers taking turns round by round. Where the GPU runs a kernel slower than the host launches it, the
queue fills and that number is the GPU's; so the same is also measured with the GPU held
busy by a sleep kernel queued first (`*_host_us`: nothing the GPU does can slow the loop),
beside the GPU time a launch takes when back to back (`*_gpu_us`: events around launches
queued behind the sleep). For intentc the floor is printed too: its prepared launch called
directly (ctypes and the driver's cuLaunchKernelEx, no argument checks), and torch's own
`torch.add(x, y, out=z)` for scale. Writes bench/results/launch-<date>-<host>.json (or --out).

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


def back_to_back_us(launch, calls: int) -> float:
    """Host µs a launch over `calls` launches in a row (the queue may fill: then it is the GPU's)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        launch()
    return (time.perf_counter() - start) / calls * 1e6


# Launches a round behind the sleep kernel: few enough that the stream's queue never fills.
BEHIND_SLEEP_CALLS = 256
SLEEP_CYCLES = 50_000_000         # about 25 ms at 2 GHz: longer than queueing the launches takes


def behind_sleep_us(launch) -> tuple[float, float]:
    """(host µs a launch, GPU µs a launch) with the launches queued behind a sleep kernel."""
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES)
    first, last = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    first.record()
    start = time.perf_counter()
    for _ in range(BEHIND_SLEEP_CALLS):
        launch()
    host = (time.perf_counter() - start) / BEHIND_SLEEP_CALLS * 1e6
    last.record()
    torch.cuda.synchronize()
    return host, first.elapsed_time(last) * 1e3 / BEHIND_SLEEP_CALLS


def interleaved(measure, launches: dict, repeats: int) -> dict[str, list]:
    """`repeats` rounds of `measure(launch)` for every launch, the launches taking turns round
    by round, so that a drift of the host's speed during the run weighs on all of them alike."""
    for launch in launches.values():
        for _ in range(50):
            launch()
    rounds: dict[str, list] = {name: [] for name in launches}
    for _ in range(repeats):
        for name, launch in launches.items():
            rounds[name].append(measure(launch))
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
    launches = {"intentc": lambda: kernel(x=x, y=y, z=z1),
                "triton": lambda: t_add[grid](x, y, z2, n, BLOCK=1024)}
    kernel(x=x, y=y, z=z1)
    prepared, stream = kernel.runner.seen.find({"x": x, "y": y, "z": z1}), torch.cuda.current_stream().cuda_stream
    floors = {"intentc_prepared_launch": lambda: prepared(stream), "torch_add": lambda: torch.add(x, y, out=z2)}
    rounds = interleaved(lambda launch: back_to_back_us(launch, args.calls), {**launches, **floors}, args.repeats)
    behind = interleaved(behind_sleep_us, {**launches, **floors}, args.repeats)
    kernel.synchronize()
    t_add[grid](x, y, z2, n, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.equal(z1, x + y) and torch.equal(z2, x + y)
    with tempfile.TemporaryDirectory() as cache:
        fresh = fresh_process_load(cache)
    median = {name: statistics.median(r) for name, r in rounds.items()}
    payload = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
               "python": sys.version.split()[0], "n": n, "calls": args.calls, "repeats": args.repeats,
               "intentc_us_per_launch": median["intentc"], "triton_us_per_launch": median["triton"],
               "intentc/triton": median["intentc"] / median["triton"],
               "intentc_rounds_us": rounds["intentc"], "triton_rounds_us": rounds["triton"],
               "floors_us_per_launch": {name: median[name] for name in floors},
               "behind_sleep_calls": BEHIND_SLEEP_CALLS,
               "host_us_per_launch": {name: statistics.median(h for h, _ in r) for name, r in behind.items()},
               "gpu_us_per_launch": {name: statistics.median(g for _, g in r) for name, r in behind.items()},
               "behind_sleep_rounds": behind, "intentc_grid_block": [kernel.runner.grid(), kernel.runner.block],
               "fresh_process_loads": fresh}
    print(json.dumps(payload, indent=2))
    for name in rounds:
        print(f"{name:24s} back to back {median[name]:6.2f} µs/launch; behind a sleep: host "
              f"{payload['host_us_per_launch'][name]:6.2f}, GPU {payload['gpu_us_per_launch'][name]:6.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    else:
        print(f"wrote {write_results('launch', payload)}")


if __name__ == "__main__":
    main()
