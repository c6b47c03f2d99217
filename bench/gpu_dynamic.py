"""Dynamic row extents vs specialized on the GPU (issue 13, "Dynamic extents stay fast"):
each kernel compiled once with no extent fixed (its register-form variants picked at
launch, docs/gpu.md) beside the same kernel specialized to the launch's row length, on
the same device-resident inputs of `bench/gpu_sample_specs.py` (rows × row length kept
at the spec's size), timed in the same process (CUDA events, median).

    python3 bench/gpu_dynamic.py [--only ID,...] [--lengths N,...] [--out FILE.json] [--budget-s 0.3]
                                 [--variant-sizes 1024,4096,...] [--dynamic-unroll U]
    python3 bench/gpu_dynamic.py --compile-only [--out FILE.json]    # compile times, no GPU

`--variant-sizes` and `--dynamic-unroll` compile with another set of variant bounds than
`nvptx/variants.py`'s VARIANT_SIZES, or another DYNAMIC_UNROLL than `nvptx/cta.py`'s (A/B
experiments: give each a fresh INTENTC_CACHE_DIR, since the kernel cache does not know them).

A row per (kernel, row length): GB/s of each form, dynamic / specialized, the entry the
dynamic launch ran, and whether the dynamic outputs passed the spec's check.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# kernel id -> row lengths: each spec's own, plus lengths between the variants' bounds
ROW_LENGTHS = {
    "row_softmax:row_softmax": (1024, 1000, 1536, 4096, 20000),
    "layernorm:layernorm": (1024, 1536),
    "philox_dropout:dropout": (2048, 1500),
    "cumsum:row_cumsum": (4096, 3000),
    "row_sum:row_sum_f16": (2048, 3000),
}


def entry_for(launcher, dims: dict) -> str:
    """The entry a dynamic launch runs (the runtime's pick, read back from launch.json)."""
    variants = launcher.kernel.launch_config.variants
    chosen = next((v for v in variants if dims[v["extent"]] <= v["max"]), None)
    return chosen["entry"] if chosen else launcher.kernel.launch_config.kernel


def measure(spec, cols: int, dynamic, budget_s: float) -> dict:
    from bench.gpu_samples import Launcher, check_result, median_seconds, view_params
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    dims = dict(spec.dims)
    dims[spec.scaled] = max(1, dims[spec.scaled] * dims["N"] // cols)
    dims["N"] = cols
    case = spec.build(dims, "cuda")
    views = view_params(text, spec.kernel)
    special = Launcher(text, spec.kernel, spec.specialization(views, dims), f"ir_samples/{spec.sample}.kir")
    row = {"id": spec.id, "size": spec.label(dims), "entry": entry_for(dynamic, dims),
           "compile_s": {"dynamic": round(dynamic.compile_s, 3), "specialized": round(special.compile_s, 3)}}
    dynamic_launch = dynamic.bind(case.values)
    if case.reset:
        case.reset()
    dynamic_launch()
    dynamic.check_status()
    row["correct"] = check_result(case.check)
    for name, launcher in (("dynamic", dynamic), ("specialized", special)):
        seconds = median_seconds(launcher.bind(case.values), budget_s)
        launcher.check_status()
        row[name] = {"ms": round(seconds * 1e3, 4), "GB/s": round(case.bytes / seconds / 1e9, 1)}
    row["ratio"] = round(row["specialized"]["ms"] / row["dynamic"]["ms"], 3)
    return row


def compile_times(ids: list[str], reps: int = 3) -> list[dict]:
    """--compile-only (no GPU): seconds of CPU time (best of `reps`, warm process) to PTX for
    sm_90 of each kernel with its row length dynamic (every variant) and specialized to the
    spec's row length."""
    from bench.gpu_sample_specs import SPECS
    from bench.gpu_samples import view_params
    from intentc.driver import compile_kernel
    specs = {spec.id: spec for spec in SPECS}
    rows = []
    for ident in ids:
        spec = specs[ident]
        text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
        views = view_params(text, spec.kernel)
        row: dict = {"id": ident}
        for name, dynamic in (("dynamic", True), ("specialized", False)):
            specialization = spec.specialization(views, spec.dims, dynamic)
            compile_kernel(text, spec.kernel, "ptx", "sm_90", specialization=specialization)
            best = float("inf")
            for _ in range(reps):
                start = time.process_time()
                compile_kernel(text, spec.kernel, "ptx", "sm_90", specialization=specialization)
                best = min(best, time.process_time() - start)
            row[f"{name}_cpu_s"] = round(best, 3)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main() -> None:
    from bench.gpu_sample_specs import SPECS
    from bench.gpu_samples import Launcher, view_params
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(ROW_LENGTHS))
    parser.add_argument("--out")
    parser.add_argument("--lengths", help="row lengths for every kernel (default: ROW_LENGTHS)")
    parser.add_argument("--budget-s", type=float, default=0.3)
    parser.add_argument("--variant-sizes")
    parser.add_argument("--dynamic-unroll", type=int)
    parser.add_argument("--compile-only", action="store_true", help="compile times to PTX here, no GPU")
    args = parser.parse_args()
    if args.variant_sizes:
        from intentc.codegen.nvptx import variants
        variants.VARIANT_SIZES = tuple(int(size) for size in args.variant_sizes.split(","))
    if args.dynamic_unroll:
        from intentc.codegen.nvptx import cta
        cta.DYNAMIC_UNROLL = args.dynamic_unroll
    if args.compile_only:
        rows = compile_times(args.only.split(","))
        if args.out:
            Path(args.out).write_text(json.dumps({"date": datetime.datetime.now(datetime.UTC).isoformat(),
                                                  "compile": rows}, indent=1) + "\n")
        return
    specs = {spec.id: spec for spec in SPECS}
    rows = []
    for ident in args.only.split(","):
        spec = specs[ident]
        text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
        dynamic = Launcher(text, spec.kernel, spec.specialization(view_params(text, spec.kernel), spec.dims, True),
                           f"ir_samples/{spec.sample}.kir")
        lengths = [int(n) for n in args.lengths.split(",")] if args.lengths else ROW_LENGTHS[ident]
        for cols in lengths:
            try:
                row = measure(spec, cols, dynamic, args.budget_s)
            except Exception as error:     # a row per failure; the others still run
                row = {"id": ident, "N": cols, "error": f"{type(error).__name__}: {str(error)[:300]}"}
            row["variant_sizes"] = [v["max"] for v in dynamic.kernel.launch_config.variants]
            print(json.dumps(row), flush=True)
            rows.append(row)
            if args.out:          # after every row: a run cut short keeps what it measured
                Path(args.out).write_text(json.dumps({"date": datetime.datetime.now(datetime.UTC).isoformat(),
                                                      "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
