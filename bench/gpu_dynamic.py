"""Dynamic row extents vs specialized on the GPU (issue 13, "Dynamic extents stay fast"):
each kernel compiled once with no extent fixed (its register-form variants picked at
launch, docs/gpu.md) beside the same kernel specialized to the launch's row length, on
the same device-resident inputs of `bench/gpu_sample_specs.py` (rows × row length kept
at the spec's size), timed in the same process after a warm-up (CUDA events: the better of
two medians per form, the forms interleaved).

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


WARM_UP = 50      # launches before timing
ROUNDS = 2        # medians per form, interleaved; the best counts


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
    launches = {"dynamic": dynamic.bind(case.values), "specialized": special.bind(case.values)}
    bucket = bucket_launcher(spec, text, views, dynamic, cols)
    if bucket is not None:
        if case.reset:
            case.reset()
        bucket.bind(case.values)()
        bucket.check_status()
        facts = {"elements": list(bucket.kernel.request.specialization.variant), "correct": check_result(case.check)}
        launches["bucket"] = bucket.bind(case.values)
    for _ in range(WARM_UP):          # the GPU at its clocks before either form is timed
        launches["specialized"]()
    best = {name: float("inf") for name in launches}
    for _ in range(ROUNDS):           # interleaved, so neither form is always timed first
        for name, launch in launches.items():
            best[name] = min(best[name], median_seconds(launch, budget_s))
    dynamic.check_status()
    special.check_status()
    for name, seconds in best.items():
        row[name] = {"ms": round(seconds * 1e3, 4), "GB/s": round(case.bytes / seconds / 1e9, 1)}
    row["ratio"] = round(row["specialized"]["ms"] / row["dynamic"]["ms"], 3)
    if bucket is not None:
        row["bucket"].update(facts, ratio=round(row["specialized"]["ms"] / row["bucket"]["ms"], 3))
    return row


def bucket_launcher(spec, text: str, views: list[str], dynamic, cols: int):
    """The kernel compiled as the one register-form variant serving rows of `cols`
    (`Specialization.variant`, the bucket of launch.json's `variant_rule`), or None."""
    from bench.gpu_samples import Launcher
    rule = dynamic.kernel.launch_config.variant_rule
    if not rule:
        return None
    from intentc.codegen.nvptx.variants import VariantRule
    bucket = VariantRule(**rule).bucket(cols)
    if bucket is None:
        return None
    launcher = Launcher.__new__(Launcher)
    start = time.perf_counter()
    import intentc
    specialization = spec.specialization(views, spec.dims, True)
    facts = {name: list(specialization[name]) for name in ("unit_stride", "contiguous")}
    launcher.kernel = intentc.load(text, spec.kernel, target="cuda", constexprs=specialization["constexprs"],
                                   facts={**facts, "variant": list(bucket)})
    launcher.compile_s = time.perf_counter() - start
    return launcher


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
