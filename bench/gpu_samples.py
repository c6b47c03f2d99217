"""Every kernel of ir_samples/ on the GPU beside its closest torch (or Triton) equivalent,
timed in the same process on the same device-resident data (`bench/gpu_sample_specs.py`
holds one small spec per kernel: input builder, equivalents, bytes/flops, check).

    python3 bench/gpu_samples.py [--out FILE] [--only SAMPLE:KERNEL,...] [--dynamic-extents]
                                 [--max-launch-s 0.5] [--time-limit-s 330]
    python3 bench/gpu_samples.py --no-gpu     # dry run here: tiny inputs on the CPU, the
                                              # interpreter for intentc, Triton interpreted

`bench/gpu.py` runs this table after its own rows. Per kernel: compile (the row length and
other non-scaled extents fixed, as Triton's BLOCK is; views with unit innermost stride
declared so), launch once on fresh inputs and check the outputs against the equivalent,
then time intentc and each equivalent (CUDA events, median). A kernel mapped to a single
thread whose one launch would take longer than --max-launch-s at full size is measured on
fewer rows (probing from 1/512 of them up, by factors of 8): the row says so. Ratios are
throughputs, intentc over the baseline (> 1: intentc faster). Kernels run in a worker
process: a compile error, a wrong result or an exception is an error row; a crash (a CUDA
fault poisons the context) or a kernel past --kernel-timeout-s kills the worker, gives an
error row, and a fresh worker goes on with the next kernel. An exhausted device heap
(status -1; the malloc heap lives as long as the process) is retried once in a fresh worker.

On the lent H200 (`run` tool; see bench/README.md):
    source bench/device_env.sh && cd .wt/bench && export PYTHONPATH=/tmp/site:$PWD:$PWD/server &&
    python3 bench/gpu.py --out $OUT/gpu.json 2>&1 | tee $OUT/gpu.log
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MESSAGE = "@@ "           # prefix of the worker's protocol lines on its stdout
HEAP_EXHAUSTED = "device heap is exhausted"


# ---- launching intentc (the one place that knows the launch API) --------------------------------
class Launcher:
    """One intentc kernel loaded for this GPU (`intentc.load`); `bind` returns a zero-argument
    launch on device-resident tensors (asynchronous, on torch's current stream)."""

    def __init__(self, text: str, kernel: str, specialization: dict, file: str):
        import intentc
        start = time.perf_counter()
        facts = {name: list(specialization[name]) for name in ("unit_stride", "contiguous")}
        if "lazy_variants" in specialization:    # a Specialization field too (bench/gpu_dynamic.py --eager)
            facts["lazy_variants"] = specialization["lazy_variants"]
        self.kernel = intentc.load(text, kernel, target="cuda", extents=specialization["extents"],
                                   constexprs=specialization["constexprs"], facts=facts)
        self.compile_s = time.perf_counter() - start     # compile, or a hit in intentc's kernel cache
        self.mapping = self.kernel.launch_config.to_json()

    def bind(self, values: dict):
        kernel = self.kernel
        return lambda: kernel(**values)

    def check_status(self) -> None:
        """Waits; raises the first illegal input (or exhausted device heap) a launch reported."""
        self.kernel.synchronize()


class InterpLauncher:
    """--no-gpu: the same interface on CPU tensors, run by the reference interpreter; the
    mapping comes from compiling to PTX here."""

    def __init__(self, text: str, kernel: str, specialization: dict, file: str):
        from intentc.driver import compile_kernel
        from intentc.options import CompileOptions, Specialization
        self.text, self.kernel, self.file = text, kernel, file
        self.constexprs = specialization.get("constexprs", {})
        start = time.perf_counter()
        artifacts = compile_kernel(text, kernel, "ptx", "sm_90", CompileOptions(),
                                   specialization=Specialization(**specialization), file=file).artifacts
        self.compile_s = time.perf_counter() - start
        self.mapping = json.loads(artifacts["launch.json"])

    def bind(self, values: dict):
        from intentc.api import run

        def launch():
            inputs = {name: to_numpy(value) for name, value in values.items()}
            outputs = run(self.text, self.kernel, inputs, self.constexprs, file=self.file)
            for name, array in outputs.items():
                write_back(values[name], array)
        return launch

    def check_status(self) -> None:
        pass


def to_numpy(value):
    """A CPU tensor (or strided view of one) as the interpreter takes it; narrow floats
    through their bits, since numpy has no bf16 or f8 of its own."""
    import intentc
    from bench.gpu_sample_specs import StridedView, numpy_of
    if isinstance(value, StridedView):
        return intentc.View(numpy_of(value.base.reshape(-1)), value.offset, value.strides, value.shape)
    return numpy_of(value) if hasattr(value, "dtype") and hasattr(value, "numpy") else value


def write_back(target, array) -> None:
    import numpy as np
    from bench.gpu_sample_specs import torch_of
    target.copy_(torch_of(np.ascontiguousarray(array), target.dtype).reshape(target.shape))


# ---- timing ---------------------------------------------------------------------------------------
def event_seconds(fn) -> float:
    import torch
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e-3


def median_seconds(fn, budget_s: float) -> float:
    """Median of single-launch CUDA-event times after a warm-up launch: the first timed
    launch, then as many more as fit `budget_s` (3 to 50 in all)."""
    import torch
    fn()
    torch.cuda.synchronize()
    first = event_seconds(fn)
    reps = int(min(50, max(3, budget_s / max(first, 1e-6)))) - 1
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, stop in pairs:
        start.record()
        fn()
        stop.record()
    torch.cuda.synchronize()
    return statistics.median([first * 1e3] + [start.elapsed_time(stop) for start, stop in pairs]) * 1e-3


# ---- one kernel -------------------------------------------------------------------------------------
def view_params(text: str, kernel: str) -> list[str]:
    from intentc.ir.types import ViewType
    from intentc.parse import parse
    return [p.name for p in parse(text).find(kernel).params if isinstance(p.type, ViewType)]


def probe_sizes(full: int, smallest: int) -> list[int]:
    return sorted({max(smallest, full >> shift) for shift in (9, 6, 3, 0)})


def measured_row(spec, args, device: str) -> dict:
    """`measure`'s row, or as much of it as was known when it failed, with the error."""
    row: dict = {"id": spec.id, "contraction": spec.contraction}
    try:
        measure(spec, args, device, row)
    except Exception as error:
        row["error"] = f"{type(error).__name__}: {str(error)[:400]}"
    return row


def measure(spec, args, device: str, row: dict) -> None:
    """Fills one table row: mapping, size, correctness, times and ratios."""
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    sizes = probe_sizes(spec.dims[spec.scaled], spec.smallest) if device == "cuda" else [spec.smallest]
    dims = spec.sized(sizes[0], dry_run=device != "cuda")
    case = spec.build(dims, device)
    launcher_class = Launcher if device == "cuda" else InterpLauncher
    launcher = launcher_class(text, spec.kernel, spec.specialization(view_params(text, spec.kernel), dims,
                                                                     args.dynamic_extents), f"ir_samples/{spec.sample}.kir")
    row.update(mapping=launcher.mapping["mapping"], block=launcher.mapping["block"][0],
               slots=launcher.mapping.get("slots", 0), compile_s=round(launcher.compile_s, 3))
    if device == "cuda":
        dims, case = size_for_mapping(spec, launcher, sizes, dims, case, args.max_launch_s, row)
    row.update(size=spec.label(dims), bytes=case.bytes, flops=case.flops)
    launch = launcher.bind(case.values)
    if case.reset:
        case.reset()
    launch()
    launcher.check_status()
    row["correct"] = check_result(case.check)
    if case.same_bits:
        row["same_bits"] = {name: check_result(equal) for name, equal in case.same_bits.items()}
    if case.differs:
        row["differs"] = dict(case.differs)
    if device != "cuda":
        row["baselines_ran"] = {name: run_once(fn) for name, fn in case.baselines.items()}
        return
    budget = args.budget_s
    row["intentc"] = timing(launch, budget, case)
    launcher.check_status()
    for name, fn in case.baselines.items():
        row[name] = timing(fn, budget, case)
    add_ratios(row)


def size_for_mapping(spec, launcher, sizes, dims, case, cap_s: float, row: dict):
    """The full size, except on one thread: there a launch's time grows as size **
    work_exponent, so probe the smallest size and jump to the largest whose predicted
    launch stays within cap_s. (Parallel mappings run the full size at once: from a
    latency-bound small launch, no growth rule predicts them.)"""
    if launcher.mapping["mapping"] != "single-thread":
        del case
        dims = spec.sized(sizes[-1])
        return dims, spec.build(dims, "cuda")
    at = 0
    seconds = single_launch(launcher, case)
    while at + 1 < len(sizes):
        fits = [j for j in range(at + 1, len(sizes))
                if seconds * (sizes[j] / sizes[at]) ** spec.work_exponent <= cap_s]
        if not fits:
            row["reduced"] = {"rows": sizes[at], "full": sizes[-1], "predicted_full_launch_s":
                              round(seconds * (sizes[-1] / sizes[at]) ** spec.work_exponent, 2)}
            break
        at = fits[-1]
        del case
        dims = spec.sized(sizes[at])
        case = spec.build(dims, "cuda")
        seconds = single_launch(launcher, case)
    return dims, case


def single_launch(launcher, case) -> float:
    launch = launcher.bind(case.values)
    launch()
    launcher.check_status()
    return event_seconds(launch)


def check_result(check) -> bool | str:
    try:
        verdict = check()
    except Exception as error:
        return f"{type(error).__name__}: {str(error)[:300]}"
    return True if verdict is True else f"mismatch: {verdict}"


def run_once(fn) -> bool | str:
    try:
        fn()
        return True
    except Exception as error:
        return f"{type(error).__name__}: {str(error)[:300]}"


def timing(fn, budget_s: float, case) -> dict:
    try:
        seconds = median_seconds(fn, budget_s)
    except Exception as error:
        return {"error": f"{type(error).__name__}: {str(error)[:300]}"}
    cell = {"ms": round(seconds * 1e3, 4), "GB/s": round(case.bytes / seconds / 1e9, 1)}
    if case.flops:
        cell["TFLOP/s"] = round(case.flops / seconds / 1e12, 3)
    return cell


def add_ratios(row: dict) -> None:
    """Throughput ratios intentc / baseline (same work, so baseline time / intentc time),
    for each baseline, and `ratio` (the bar's) against the fastest one that computes the
    same function (`differs` names those that do not: shown, not the bar's)."""
    if "ms" not in row.get("intentc", {}):
        return
    baselines = {k: v["ms"] for k, v in row.items() if isinstance(v, dict) and "ms" in v and k != "intentc"}
    for name, ms in baselines.items():
        row[f"ratio_{name}"] = float(f"{ms / row['intentc']['ms']:.4g}")     # 4 significant digits
    same = {name: ms for name, ms in baselines.items() if name not in row.get("differs", {})}
    if same:
        best = min(same, key=same.get)
        row["best_baseline"], row["ratio"] = best, row[f"ratio_{best}"]


# ---- worker and orchestrator ----------------------------------------------------------------------
def worker(ids: list[str], args) -> None:
    """Measure kernels in order, one protocol line as each starts and as each ends."""
    from bench.gpu_sample_specs import SPECS
    specs = {spec.id: spec for spec in SPECS}
    for ident in ids:
        print(MESSAGE + json.dumps({"start": ident}), flush=True)
        row = measured_row(specs[ident], args, "cuda")
        if HEAP_EXHAUSTED in row.get("error", ""):
            row["heap"] = "exhausted"        # the heap lives as long as the process: a fresh one retries
        print(MESSAGE + json.dumps({"row": row}), flush=True)
        if "heap" in row:
            return
        release_memory()


def release_memory() -> None:
    import gc
    import torch
    gc.collect()
    torch.cuda.empty_cache()


def orchestrate(ids: list[str], args) -> list[dict]:
    """Run the worker over `ids`, restarting it after a crash or a timeout."""
    rows: list[dict] = []
    pending = list(ids)
    started = time.monotonic()
    retried: set[str] = set()
    while pending:
        if time.monotonic() - started > args.time_limit_s:
            rows += [{"id": ident, "error": f"not run: the table's time limit ({args.time_limit_s} s) passed"}
                     for ident in pending]
            break
        done = run_worker(pending, args, rows, started)
        if not done:       # the worker died before starting any kernel: it would again
            rows += [{"id": ident, "error": "not run: the worker could not start"} for ident in pending]
            break
        for row in [r for r in rows if r.pop("heap", None) and r["id"] not in retried]:
            retried.add(row["id"])       # once more in a fresh process (a fresh device heap)
            rows.remove(row)
        pending = [ident for ident in pending if ident not in {row["id"] for row in rows}]
    return rows


def worker_command(pending: list[str], args) -> list[str]:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--only", ",".join(pending),
               "--max-launch-s", str(args.max_launch_s), "--budget-s", str(args.budget_s)]
    return command + (["--dynamic-extents"] if args.dynamic_extents else [])


def run_worker(pending: list[str], args, rows: list[dict], started: float) -> int:
    """One worker process; returns how many kernels it started."""
    process = subprocess.Popen(worker_command(pending, args), stdout=subprocess.PIPE, text=True, cwd=ROOT)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout] + [lines.put(None)],
                     daemon=True).start()
    current, begun, count = None, time.monotonic(), 0
    while True:
        remaining = args.kernel_timeout_s - (time.monotonic() - begun)
        limit = args.time_limit_s - (time.monotonic() - started)
        try:
            line = lines.get(timeout=max(0.1, min(remaining, limit)))
        except queue.Empty:
            process.kill()
            process.wait()
            if current:
                waited = time.monotonic() - begun
                rows.append({"id": current, "error": f"timeout: no result after {waited:.0f} s (worker killed; "
                             f"limits: {args.kernel_timeout_s:.0f} s a kernel, {args.time_limit_s:.0f} s the table)"})
            return count
        if line is None:
            code = process.wait()
            if current:
                rows.append({"id": current, "error": f"the worker died (exit code {code}), e.g. a CUDA fault"})
            return count
        if not line.startswith(MESSAGE):
            print(line, end="", flush=True)
            continue
        message = json.loads(line[len(MESSAGE):])
        if "start" in message:
            current, begun, count = message["start"], time.monotonic(), count + 1
        else:
            rows.append(message["row"])
            print(json.dumps(message["row"]), flush=True)
            current = None


def dry_run(ids: list[str], args) -> list[dict]:
    """--no-gpu: every spec at its smallest size on the CPU (the interpreter for intentc),
    so builders, equivalents and checks are exercised before a GPU run."""
    from bench.gpu_sample_specs import SPECS
    rows = []
    for spec in [s for s in SPECS if s.id in ids]:
        row = measured_row(spec, args, "cpu")
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


# ---- report -----------------------------------------------------------------------------------------
def print_table(rows: list[dict]) -> None:
    print(f"{'kernel':48s} {'mapping':14s} {'size':24s} {'ok':>3s} {'intentc ms':>11s} {'GB/s':>7s} "
          f"{'TFLOP/s':>8s} {'baseline':>14s} {'ms':>9s} {'ratio':>8s}")
    for row in rows:
        if "error" in row:
            print(f"{row['id']:48s} {row.get('mapping', '?'):14s} ERROR {row['error'][:150]}")
            continue
        mine = row.get("intentc", {})
        best = row.get("best_baseline")
        other = row.get(best, {}) if best else {}
        ok = "yes" if row.get("correct") is True else "NO"
        size = row["size"] + (" (reduced)" if "reduced" in row else "")
        print(f"{row['id']:48s} {row['mapping']:14s} {size:24s} {ok:>3s} {_num(mine.get('ms'), 11, 3)} "
              f"{_num(mine.get('GB/s'), 7, 0)} {_num(mine.get('TFLOP/s'), 8, 3)} {best or '-':>14s} "
              f"{_num(other.get('ms'), 9, 3)} {_num(row.get('ratio'), 8, 3)}")
        if mine.get("error") or row.get("correct") is not True:
            print(f"{'':48s} {mine.get('error') or row.get('correct')}"[:250])
        for name, same in row.get("same_bits", {}).items():
            print(f"{'':48s} {name}: {'the same bits' if same is True else f'not the same bits ({same})'}")
        for name, how in row.get("differs", {}).items():
            print(f"{'':48s} also {name}: ratio {_num(row.get(f'ratio_{name}'), 0, 3).strip()} "
                  f"(not the bar's: {how})")


def summary(rows: list[dict]) -> dict:
    """What issue 13's bar reads from the table: the mappings, the kernels on one thread,
    those that failed, those measured on fewer rows, and the non-contractions below half
    their fastest baseline."""
    return {"mappings": dict(collections.Counter(row.get("mapping", "unknown") for row in rows)),
            "single_thread": [row["id"] for row in rows if row.get("mapping") == "single-thread"],
            "failed": [row["id"] for row in rows if "error" in row or row.get("correct", True) is not True],
            "reduced": [row["id"] for row in rows if "reduced" in row],
            "below_half": [row["id"] for row in rows if not row.get("contraction") and row.get("ratio", 1) < 0.5]}


def print_summary(rows: list[dict]) -> None:
    for key, value in summary(rows).items():
        print(f"{key}: {value}" if isinstance(value, dict) else f"{key} ({len(value)}): {', '.join(value)}")


def _num(value, width: int, digits: int) -> str:
    return f"{value:{width}.{digits}f}" if isinstance(value, (int, float)) else f"{'-':>{width}s}"


def all_ids(only: str | None) -> list[str]:
    from bench.gpu_sample_specs import SPECS
    ids = [spec.id for spec in SPECS]
    if not only:
        return ids
    wanted = only.split(",")
    unknown = [w for w in wanted if w not in ids]
    if unknown:
        raise SystemExit(f"unknown kernels: {', '.join(unknown)} (sample:kernel, e.g. {ids[0]})")
    return [i for i in ids if i in wanted]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="JSON file (default bench/results/gpu-samples-<date>-<host>.json)")
    p.add_argument("--only", help="comma-separated sample:kernel ids")
    p.add_argument("--no-gpu", action="store_true", help="dry run on the CPU with tiny inputs")
    p.add_argument("--dynamic-extents", action="store_true", help="fix no extent at compile time")
    p.add_argument("--max-launch-s", type=float, default=0.5,
                   help="single-thread kernels: fewer rows when one launch would take longer")
    p.add_argument("--budget-s", type=float, default=0.25, help="timing budget per implementation")
    p.add_argument("--kernel-timeout-s", type=float, default=45.0)
    p.add_argument("--time-limit-s", type=float, default=330.0, help="for the whole table")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p


def run_table(args) -> list[dict]:
    ids = all_ids(args.only)
    rows = dry_run(ids, args) if args.no_gpu else orchestrate(ids, args)
    order = {ident: index for index, ident in enumerate(ids)}
    rows.sort(key=lambda row: order.get(row["id"], len(order)))
    return rows


def main(argv=None) -> None:
    args = parser().parse_args(argv)
    if args.no_gpu:
        os.environ["TRITON_INTERPRET"] = "1"     # before Triton is imported: kernels run on the CPU
    if args.worker:
        worker(all_ids(args.only), args)
        return
    started = datetime.datetime.now(datetime.UTC)
    rows = run_table(args)
    print_table(rows)
    print_summary(rows)
    host = os.uname().nodename
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / f"gpu-samples-{started:%Y%m%d}-{host}.json"
    report = {"date": started.isoformat(timespec="seconds"), "host": host, "dry_run": args.no_gpu,
              "options": {k: v for k, v in vars(args).items() if k not in ("worker", "out")},
              "summary": summary(rows), "samples": rows}
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
