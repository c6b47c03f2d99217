"""Shared benchmark plumbing: timing, tables, and result files under bench/results/."""
from __future__ import annotations

import contextlib
import datetime
import json
import platform
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def row_sum_f32_text() -> str:
    """`ir_samples/row_sum.kir`'s f16 row sum over f32 (the GPU benchmarks' row sum)."""
    text = (ROOT / "ir_samples" / "row_sum.kir").read_text()
    return text[text.index("kernel @row_sum_f16"):text.index("kernel @row_sum_i8")].replace("f16", "f32")


def median_seconds(function, repeat: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def print_table(headers: list[str], rows: list[list]) -> None:
    cells = [headers] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for index, row in enumerate(cells):
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if index == 0:
            print("  ".join("-" * w for w in widths))


def _cell(value) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def write_results(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    host = socket.gethostname()
    path = RESULTS / f"{name}-{now:%Y-%m-%d}-{host}.json"
    document = {
        "benchmark": name, "date": now.isoformat(timespec="seconds"), "host": host,
        "machine": {"platform": platform.platform(), "python": sys.version.split()[0],
                    "processor": platform.processor() or platform.machine()},
        **payload,
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def compiled_sample(spec, dims: dict):
    """The sample kernel of `spec` compiled for the GPU as `bench/gpu_samples.py` specializes
    it, and its compile's wall seconds (variants patch the compiler around this call)."""
    from bench.gpu_samples import view_params
    from intentc.runtime.cuda import compile_cuda
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    start = time.perf_counter()
    kernel = compile_cuda(text, spec.kernel, spec.specialization(view_params(text, spec.kernel), dims),
                          file=f"ir_samples/{spec.sample}.kir")
    return kernel, time.perf_counter() - start


def interleaved_variants(spec, reps: int, chosen: list[str], compile_variant) -> tuple[dict, object]:
    """Each variant of `chosen` compiled (`compile_variant(label, dims)` -> (kernel, seconds)),
    launched once on the spec's device data and checked, then every variant timed A B B A:
    (the row, the case, for baselines on the same data)."""
    from bench.gpu import timed
    dims = spec.sized(spec.dims[spec.scaled])
    case = spec.build(dims, "cuda")
    row: dict = {"id": spec.id, "size": spec.label(dims), "bytes": case.bytes}
    launches = {}
    for label in chosen:
        kernel, compile_s = compile_variant(label, dims)
        launch = lambda kernel=kernel: kernel.launch_in_place(case.values, spec.constexprs)
        if case.reset:
            case.reset()
        launch()
        kernel.synchronize()
        row[label] = {"threads": kernel.launch_config.block[0], "slots": kernel.launch_config.slots,
                      "compile_s": round(compile_s, 3), "correct": case.check() is True, "ms": []}
        launches[label] = launch
    for label in chosen + chosen[::-1]:
        row[label]["ms"].append(round(timed(launches[label], reps) * 1e3, 4))
    return row, case


def run_sample_ab(measured, ids: list[str], argv=None, chosen: list[str] | None = None) -> None:
    """The command line of an A/B bench over sample kernels: `measured(spec, reps)` gives one
    row a kernel of `--only`, printed as it comes and kept in `--out`; `--variants A,B` replaces
    the contents of `chosen` (the bench's list of variants to time)."""
    import argparse
    from bench.gpu_sample_specs import SPECS
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--only", default=",".join(ids))
    parser.add_argument("--reps", type=int, default=50)
    if chosen is not None:
        parser.add_argument("--variants", default=",".join(chosen))
    args = parser.parse_args(argv)
    if chosen is not None:
        chosen[:] = args.variants.split(",")
    rows = []
    for ident in args.only.split(","):
        spec = next(s for s in SPECS if s.id == ident)
        try:
            row = measured(spec, args.reps)
        except Exception as error:            # one failing kernel is a row, not the end of the run
            row = {"id": ident, "error": f"{type(error).__name__}: {error}"[:500]}
        print(json.dumps(row), flush=True)
        rows.append(row)
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")


@contextlib.contextmanager
def attributes(module, **values):
    """`module`'s attributes set to `values` while the block runs, restored after it (the
    A/B benches' choices: a constant or a function of the compiler swapped for one run)."""
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
