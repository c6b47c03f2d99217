"""GPU benchmark, run on the H200: intentc's cubins side by side with Triton and PyTorch in
one process, on device-resident data (no host copies timed). GB/s counts bytes read plus
bytes written once each. Writes bench/results/gpu-<date>-<host>.json (or --out).

    python3 bench/gpu.py [--quick] [--out FILE] [--no-samples | --samples-only] [--rounds 7]
                         [--rows vector_add,softmax,row_sum_cumsum,histogram,dropout] [--one-wave]
                         [gpu_samples options]

Each row's implementations are timed in interleaved rounds in one process (round r times
every implementation, then round r + 1): a row reports each one's median over the rounds,
so clock and neighbour drift hits all of them alike.

After its own rows come the contraction rows (issue #14): `bench/gpu_matmul.py`'s (TFLOP/s
beside torch.matmul and Triton's tutorial matmul), the 2:4 sparse row beside torch's
semi-structured sparse matmul (`bench/gpu_sparse.py`) and causal attention (f16, bf16 on the
tensor cores, f32) beside torch's flash SDPA (`bench/gpu_attention.py`), then the per-sample
table of `bench/gpu_samples.py` (every kernel of ir_samples/ beside its closest torch/Triton
equivalent); options it does not know go to that table (e.g. --only, --dynamic-extents,
--max-launch-s). How to run it on the lent GPU: bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import socket
import statistics
import sys
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import intentc  # noqa: E402
from bench.common import row_sum_f32_text  # noqa: E402
from bench.triton_kernels import t_add, t_cumsum, t_dropout, t_hist, t_rowsum, t_softmax  # noqa: E402

SAMPLES = ROOT / "ir_samples"


def sample(name):
    return (SAMPLES / f"{name}.kir").read_text()


def histogram1024_text():
    return sample("histogram_masked").replace("[256]", "[1024]").replace("value = 256", "value = 1024")


# ---- timing --------------------------------------------------------------------------------------
def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / reps * 1e-3


# --one-wave: each intentc kernel is also compiled with the CTA mapping's grid of one wave of
# CTAs striding over the iterations (`mapping.ITERATION_CTAS_PER_SM` 0, the grid before
# session 11) and timed beside it, as "<its label> one wave"
ONE_WAVE = False


class Launch:
    """A benchmark's launch of an intentc kernel (and of its one-wave twin, `--one-wave`)."""
    def __init__(self, run):
        self.run = run
        self.one_wave = None

    def __call__(self):
        self.run()


class Intentc:
    """One kernel through the public API (`intentc.load`), specialized as Triton specializes its
    kernels here: `extents` fixes dynamic extents (Triton's BLOCK), and every view has unit
    innermost stride (the benchmark's tensors are contiguous; Triton's pointer arithmetic
    assumes it). Launches are asynchronous on torch's current stream."""
    def __init__(self, text, name, extents=None):
        from intentc.parse import parse
        views = [p.name for p in parse(text).find(name).params if getattr(p.type, "direction", None)]
        self.kernel = intentc.load(text, name, target="cuda", extents=extents, facts={"unit_stride": views})
        self.one_wave = None
        if ONE_WAVE:
            from bench.common import attributes
            from bench.gpu_codegen_ab import fresh_compiles
            from intentc.codegen.nvptx import mapping
            with fresh_compiles(attributes(mapping, ITERATION_CTAS_PER_SM=0)):
                self.one_wave = intentc.load(text, name, target="cuda", extents=extents, facts={"unit_stride": views})

    def __call__(self, **values):
        launch = Launch(lambda: self.kernel(**values))
        if self.one_wave is not None:
            launch.one_wave = lambda: self.one_wave(**values)
        return launch

    def ok(self):
        self.kernel.synchronize()       # raises the first illegal input a launch reported
        return True


class Recorder:
    """Times each implementation of one benchmark in interleaved rounds (the median of each),
    checks intentc's result, prints and keeps the row. A failing implementation or check is
    reported in the row, not fatal."""
    def __init__(self, quick: bool, rounds: int = 7):
        self.quick = quick
        self.reps = 5 if quick else 20
        self.rounds = rounds
        self.rows: list[dict] = []

    def __call__(self, name, nbytes, impls, check):
        row = {"bench": name, "bytes": nbytes, "rounds": self.rounds}
        impls = {**impls, **{f"{label} one wave": fn.one_wave for label, fn in impls.items()
                             if getattr(fn, "one_wave", None) is not None}}
        times: dict[str, list[float]] = {label: [] for label in impls}
        for _ in range(self.rounds):
            for label, fn in impls.items():
                if label in row:          # it failed in an earlier round
                    continue
                try:
                    times[label].append(timed(fn, self.reps))
                except Exception as error:
                    row[label] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
        for label, seconds in times.items():
            if label not in row:
                median = statistics.median(seconds)
                row[label] = {"ms": median * 1e3, "GB/s": nbytes / median / 1e9,
                              "spread": round((max(seconds) - min(seconds)) / median, 3)}
        try:
            row["intentc_correct"] = bool(check())
        except Exception as error:
            row["intentc_correct"] = f"{type(error).__name__}: {str(error)[:300]}"
        if "GB/s" in row.get("intentc", {}) and "GB/s" in row.get("triton", {}):
            row["intentc/triton"] = row["intentc"]["GB/s"] / row["triton"]["GB/s"]
        if "GB/s" in row.get("intentc one wave", {}) and "GB/s" in row.get("triton", {}):
            row["intentc one wave/triton"] = row["intentc one wave"]["GB/s"] / row["triton"]["GB/s"]
        print(json.dumps(row), flush=True)
        self.rows.append(row)


# One function a benchmark: its device tensors are freed when it returns.
def bench_vector_add(record: Recorder):
    n = (1 << 24) if record.quick else (1 << 28)
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z1, z2 = torch.empty_like(x), torch.empty_like(x)
    k = Intentc(sample("vector_add"), "vector_add")
    record(f"vector_add f32 n={n}", 12 * n, {
        "intentc": k(x=x, y=y, z=z1), "triton": lambda: t_add[(triton.cdiv(n, 1024),)](x, y, z2, n, BLOCK=1024),
        "torch": lambda: torch.add(x, y, out=z2)}, lambda: k.ok() and torch.equal(z1, x + y))


def bench_row_softmax(record: Recorder, dynamic: Intentc, rows: int, cols: int):
    """`dynamic` is compiled for any row length, `soft` for `cols` only."""
    soft = Intentc(sample("row_softmax"), "row_softmax", {"N": cols})
    x = torch.randn(rows, cols, device="cuda")
    y1, y2, y3 = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
    record(f"row_softmax f32 {rows}x{cols}", 8 * rows * cols, {
        "intentc": soft(x=x, t=1.0, y=y1), "intentc_dynamic_N": dynamic(x=x, t=1.0, y=y3),
        "triton": lambda: t_softmax[(rows,)](x, y2, cols, 1.0, BLOCK=block, num_warps=warps),
        "torch": lambda: torch.softmax(x, 1)},
        lambda: soft.ok() and dynamic.ok() and torch.allclose(y1, torch.softmax(x, 1), atol=1e-6)
        and torch.allclose(y3, torch.softmax(x, 1), atol=1e-6))


def bench_row_sum_and_cumsum(record: Recorder):
    rows, cols = (4096, 1024) if record.quick else (32768, 4096)
    x = torch.randn(rows, cols, device="cuda")
    s1, s2 = torch.empty(rows, device="cuda"), torch.empty(rows, device="cuda")
    rs = Intentc(row_sum_f32_text(), "row_sum_f32", {"N": cols})
    record(f"row_sum f32 {rows}x{cols}", 4 * rows * cols + 4 * rows, {
        "intentc": rs(x=x, y=s1), "triton": lambda: t_rowsum[(rows,)](x, s2, cols, BLOCK=cols, num_warps=8),
        "torch": lambda: torch.sum(x, 1, out=s2)}, lambda: rs.ok() and torch.allclose(s1, x.sum(1), atol=1e-3))
    c1, c2 = torch.empty_like(x), torch.empty_like(x)
    cs = Intentc(sample("cumsum"), "row_cumsum", {"N": cols})
    record(f"cumsum f32 {rows}x{cols}", 8 * rows * cols, {
        "intentc": cs(x=x, y=c1), "triton": lambda: t_cumsum[(rows,)](x, c2, cols, BLOCK=cols, num_warps=8),
        "torch": lambda: torch.cumsum(x, 1, out=c2)},
        lambda: cs.ok() and torch.allclose(c1, torch.cumsum(x.double(), 1).float(), atol=1e-2))


def bench_histogram(record: Recorder):
    n = (1 << 22) if record.quick else (1 << 26)
    v = torch.randint(-8, 1100, (n,), device="cuda", dtype=torch.int32)
    h1, h2 = torch.zeros(1024, dtype=torch.int32, device="cuda"), torch.zeros(1024, dtype=torch.int32, device="cuda")
    hk = Intentc(histogram1024_text(), "histogram256")

    def expected_hist():
        keep = v[(v >= 0) & (v < 1024)].long()
        return torch.bincount(keep, minlength=1024).int()
    h1.zero_()
    run_once = hk(values=v, hist=h1)
    run_once()
    torch.cuda.synchronize()
    first = h1.clone()
    record(f"histogram 1024 bins i32 n={n}", 4 * n, {
        "intentc": run_once, "triton": lambda: t_hist[(triton.cdiv(n, 2048),)](v, h2, n, BLOCK=2048, BINS=1024),
        "torch": lambda: torch.histc(v.float(), 1024, 0, 1024)}, lambda: hk.ok() and torch.equal(first, expected_hist()))


def bench_dropout(record: Recorder):
    rows, cols = (1024, 1024) if record.quick else (8192, 8192)
    x = torch.randn(rows, cols, device="cuda")
    y1, keep = torch.empty_like(x), torch.empty(rows, cols, dtype=torch.uint8, device="cuda")
    y2, keep2 = torch.empty_like(x), torch.empty(rows, cols, dtype=torch.uint8, device="cuda")
    dk = Intentc(sample("philox_dropout"), "dropout", {"N": cols})

    def dropout_correct():     # the kept elements are scaled x, the others 0; about half kept
        kept = keep.bool()
        return dk.ok() and torch.equal(y1[kept], x[kept] * 2.0) and not y1[~kept].any() and \
            abs(kept.float().mean().item() - 0.5) < 0.01
    record(f"philox dropout f32 {rows}x{cols}", 9 * rows * cols, {
        "intentc": dk(x=x, seed=1234, offset=0, p=0.5, y=y1, keep_out=keep),
        "triton": lambda: t_dropout[(rows,)](x, y2, keep2, cols, 1234, 0, 0.5, 2.0, BLOCK=cols, num_warps=8),
        "torch": lambda: torch.nn.functional.dropout(x, 0.5, training=True)}, dropout_correct)


def bench_softmax_rows(record: Recorder):
    dynamic = Intentc(sample("row_softmax"), "row_softmax")
    for rows, cols in ([(4096, 1024)] if record.quick else [(32768, 1024), (8192, 4096), (4096, 16384)]):
        bench_row_softmax(record, dynamic, rows, cols)


BENCHES = {"vector_add": bench_vector_add, "softmax": bench_softmax_rows, "row_sum_cumsum": bench_row_sum_and_cumsum,
           "histogram": bench_histogram, "dropout": bench_dropout}


def bench_all(quick: bool, rounds: int = 7, only: str | None = None) -> list[dict]:
    record = Recorder(quick, rounds)
    wanted = only.split(",") if only else list(BENCHES)
    unknown = [name for name in wanted if name not in BENCHES]
    if unknown:
        raise SystemExit(f"unknown rows: {', '.join(unknown)} (of {', '.join(BENCHES)})")
    for name in wanted:
        BENCHES[name](record)
    return record.rows


def print_table(rows) -> None:
    labels = ["intentc", "intentc_dynamic_N", "triton", "torch"]
    print(f"{'benchmark':40s}" + "".join(f"{label + ' GB/s':>24s}" for label in labels) + f"{'intentc/triton':>16s}")
    for row in rows:
        cells = [row.get(label, {}).get("GB/s") for label in labels]
        ratio = row.get("intentc/triton")
        print(f"{row['bench']:40s}" + "".join(f"{c:24.0f}" if c else f"{'-':>24s}" for c in cells)
              + (f"{ratio:16.2f}" if ratio else f"{'-':>16s}"))


def contraction_rows(quick: bool) -> list[dict]:
    """Issue #14's rows: the matmuls, 2:4 sparse and causal attention (T = 4096, D = 64 and 128;
    --quick: 1024 and 64), each beside its torch (and Triton) baseline; a failing row is reported."""
    from bench import gpu_attention, gpu_matmul, gpu_sparse
    rows = gpu_matmul.contraction_rows(quick)
    size = 1024 if quick else 4096
    try:
        rows.append(gpu_sparse.sparse_row(size))
    except Exception as error:
        rows.append({"bench": f"sparse 2:4 f16 {size}^3", "error": f"{type(error).__name__}: {str(error)[:300]}"})
    return rows + gpu_attention.causal_rows(size, [64] if quick else [64, 128], ["f16", "bf16", "f32"])


def main(argv=None):
    from bench import gpu_samples
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out")
    parser.add_argument("--no-samples", action="store_true", help="skip the per-sample table")
    parser.add_argument("--samples-only", action="store_true", help="only the per-sample table")
    parser.add_argument("--no-contractions", action="store_true", help="skip the contraction rows (gpu_matmul.py)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds a row (the median)")
    parser.add_argument("--rows", help=f"comma-separated rows of this table (of {', '.join(BENCHES)})")
    parser.add_argument("--one-wave", action="store_true",
                        help="time each intentc kernel beside its twin on a grid of one wave (before session 11)")
    args, rest = parser.parse_known_args(argv)
    global ONE_WAVE
    ONE_WAVE = args.one_wave
    sample_args = gpu_samples.parser().parse_args(rest)
    started = datetime.datetime.now(datetime.UTC)
    rows = [] if args.samples_only else bench_all(args.quick, args.rounds, args.rows)
    if rows:
        print_table(rows)
    contractions = [] if args.samples_only or args.no_contractions else contraction_rows(args.quick)
    torch.cuda.empty_cache()          # the table's worker process needs the memory
    samples = [] if args.no_samples else gpu_samples.run_table(sample_args)
    gpu_samples.print_table(samples)
    gpu_samples.print_summary(samples)
    report = {"date": started.isoformat(timespec="seconds"), "host": socket.gethostname(),
              "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
              "python": platform.python_version(), "quick": args.quick, "results": rows, "contractions": contractions, "samples": samples,
              "samples_summary": gpu_samples.summary(samples),
              "sample_options": {k: v for k, v in vars(sample_args).items() if k not in ("worker", "out")}}
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / \
        f"gpu-{started:%Y%m%d}-{socket.gethostname()}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
