"""Per-launch host overhead from Python on the GPU: `intentc.load(...)(...)` on torch tensors
beside Triton's `kernel[grid](...)` launch of the same vector add, in one process, on two
call patterns: the same tensors at every call (seen pointers), and tensors never passed
before at every call (new pointers: views of fresh memory, made before the timed loop);
plus the time of `intentc.load` when the kernel is in the disk cache, in a fresh process.

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

"intentc" is the native fast path (the default) and "intentc_python_path" the Python fast path
alone; `INTENTC_LAUNCH_OFF` turns launch paths off (docs/runtime.md), recorded in the results.
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
from bench.launch_patterns import patterns  # noqa: E402
from intentc.runtime import native  # noqa: E402
from intentc.runtime.cuda_driver import LaunchShape, PreparedLaunch  # noqa: E402
from intentc.runtime.load import LoadedKernel  # noqa: E402

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
    prepared(launch, calls)
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
    prepared(launch, BEHIND_SLEEP_CALLS)
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
        prepared(launch, 50)
        for _ in range(50):
            launch()
    rounds: dict[str, list] = {name: [] for name in launches}
    for _ in range(repeats):
        for name, launch in launches.items():
            rounds[name].append(measure(launch))
    torch.cuda.synchronize()
    return rounds


class NewPointers:
    """A launch on tensors never passed before at each call: `prepare(count)` makes the views
    for the next `count` calls out of memory allocated for them (kept until the end, so the
    allocator cannot hand an address back)."""

    def __init__(self, launch_on, n: int):
        self.launch_on, self.n = launch_on, n
        self._memory: list = []
        self._next = iter(()).__next__

    def prepare(self, count: int) -> None:
        memory = torch.randn(count * 3 * self.n, device="cuda")
        self._memory.append(memory)
        self._next = iter([tuple(call.unbind(0)) for call in memory.view(count, 3, self.n).unbind(0)]).__next__

    def __call__(self) -> None:
        self.launch_on(*self._next())


def prepared(launch, count: int):
    """`launch`, with its tensors for the next `count` calls made now where it needs new ones."""
    if isinstance(launch, NewPointers):
        launch.prepare(count)
    return launch


def fresh_process_load(cache: str) -> list[dict]:
    env = {**os.environ, "INTENTC_CACHE_DIR": cache}
    runs = []
    for _ in range(4):     # the first compiles into the empty cache; the others hit it
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", FRESH_LOAD, str(VECTOR_ADD)], env=env, capture_output=True,
                             text=True, check=True).stdout
        runs.append({**json.loads(out), "process_wall_s": time.perf_counter() - started})
    return runs


def fresh_summary(runs: list[dict]) -> str:
    """One line: `intentc.load` in a fresh process from the disk cache (the median of the hits)
    beside the first run's compile into the empty cache."""
    hits = [run for run in runs if run["source"] == "disk"]
    if not hits:
        return f"fresh process: no disk cache hit ({[run['source'] for run in runs]})"
    return (f"fresh process, intentc.load from the disk cache: {statistics.median(r['load_s'] for r in hits):.3f} s "
            f"(import intentc {statistics.median(r['import_s'] for r in hits):.3f} s, process "
            f"{statistics.median(r['process_wall_s'] for r in hits):.3f} s; {len(hits)} runs); first load compiling "
            f"into the empty cache {runs[0]['load_s']:.3f} s")


def python_path_only(kernel):
    """The same kernel as another kernel object whose calls take the Python fast path only
    (for how much the native one saves)."""
    other = LoadedKernel(kernel.text, kernel.file, kernel.name, "cuda", None, kernel._fixed, kernel.request.options,
                         None)
    other._native_state = lambda: None
    return other


def full_grid(kernel, launch, stream: int):
    """intentc's prepared launch with launch.json's full grid (`ctas_per_sm` x SMs) instead of
    the CTAs its iterations need (runtime/grid_fit.py): the GPU time the fitted grid saves."""
    shape = launch.shape
    full = PreparedLaunch(LaunchShape(shape.function, kernel.runner.grid(), shape.block, shape.shared_bytes),
                          launch.block)
    return lambda: full(stream)


def pattern(name: str, median: dict, rounds: dict) -> dict:
    ours, theirs = median[f"{name}: intentc"], median[f"{name}: triton"]
    return {"intentc_us_per_launch": ours, "triton_us_per_launch": theirs, "intentc/triton": ours / theirs,
            "intentc_rounds_us": rounds[f"{name}: intentc"], "triton_rounds_us": rounds[f"{name}: triton"]}


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
                "triton": lambda: t_add[grid](x, y, z2, n, BLOCK=1024),
                "intentc_new_pointers": NewPointers(lambda a, b, c: kernel(x=a, y=b, z=c), n),
                "triton_new_pointers": NewPointers(lambda a, b, c: t_add[grid](a, b, c, n, BLOCK=1024), n)}
    others = patterns(n)
    for name, (ours, theirs, _) in others.items():
        launches[f"{name}: intentc"], launches[f"{name}: triton"] = ours, theirs
    kernel(x=x, y=y, z=z1)
    launch, stream = kernel.runner.seen.find({"x": x, "y": y, "z": z1}), torch.cuda.current_stream().cuda_stream
    python_path = python_path_only(kernel)
    floors = {"intentc_prepared_launch": lambda: launch(stream), "torch_add": lambda: torch.add(x, y, out=z2),
              "intentc_python_path": lambda: python_path(x=x, y=y, z=z1),
              "intentc_prepared_launch_full_grid": full_grid(kernel, launch, stream)}
    rounds = interleaved(lambda launch: back_to_back_us(launch, args.calls), {**launches, **floors}, args.repeats)
    behind = interleaved(behind_sleep_us, {**launches, **floors}, args.repeats)
    kernel.synchronize()
    for _, _, check in others.values():
        check()
    t_add[grid](x, y, z2, n, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.equal(z1, x + y) and torch.equal(z2, x + y)
    for name in ("intentc_new_pointers", "triton_new_pointers"):      # the last call's tensors: its sum
        memory = launches[name]._memory[-1].view(-1, 3, n)[-1]
        assert torch.equal(memory[2], memory[0] + memory[1]), name
    with tempfile.TemporaryDirectory() as cache:
        fresh = fresh_process_load(cache)
    median = {name: statistics.median(r) for name, r in rounds.items()}
    payload = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
               "python": sys.version.split()[0], "n": n, "calls": args.calls, "repeats": args.repeats,
               "intentc_us_per_launch": median["intentc"], "triton_us_per_launch": median["triton"],
               "intentc/triton": median["intentc"] / median["triton"],
               "intentc_new_pointers_us_per_launch": median["intentc_new_pointers"],
               "triton_new_pointers_us_per_launch": median["triton_new_pointers"],
               "intentc/triton_new_pointers": median["intentc_new_pointers"] / median["triton_new_pointers"],
               "new_pointer_rounds_us": {name: rounds[f"{name}_new_pointers"] for name in ("intentc", "triton")},
               "intentc_rounds_us": rounds["intentc"], "triton_rounds_us": rounds["triton"],
               "floors_us_per_launch": {name: median[name] for name in floors},
               "behind_sleep_calls": BEHIND_SLEEP_CALLS,
               "host_us_per_launch": {name: statistics.median(h for h, _ in r) for name, r in behind.items()},
               "gpu_us_per_launch": {name: statistics.median(g for _, g in r) for name, r in behind.items()},
               "behind_sleep_rounds": behind, "intentc_grid_block": [launch.shape.grid, kernel.runner.block],
               "intentc_full_grid": kernel.runner.grid(),
               "fresh_process_loads": fresh, "launch_paths_off": os.environ.get("INTENTC_LAUNCH_OFF", ""),
               "native_fast_path": native.unavailable() or ("used" if kernel._native else "off"),
               "patterns": {name: pattern(name, median, rounds) for name in others}}
    print(json.dumps(payload, indent=2))
    for name in rounds:
        print(f"{name:52s} back to back {median[name]:6.2f} µs/launch; behind a sleep: host "
              f"{payload['host_us_per_launch'][name]:6.2f}, GPU {payload['gpu_us_per_launch'][name]:6.2f}")
    print(fresh_summary(fresh))
    if args.out:
        Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    else:
        print(f"wrote {write_results('launch', payload)}")


if __name__ == "__main__":
    main()
