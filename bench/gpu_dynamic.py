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
import functools
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
    """The entry a dynamic launch runs (the runtime's pick, read back from launch.json): a
    variant of the module, a lazily compiled one (`bucket FEWEST-MOST`: its elements), or
    the kernel's own entry."""
    from intentc.codegen.nvptx.variants import VariantRule
    config = launcher.kernel.launch_config
    chosen = next((v for v in config.variants if dims[v["extent"]] <= v["max"]), None)
    bucket = VariantRule(**config.variant_rule).bucket(dims[config.variant_rule["extent"]]) \
        if config.variant_rule and not config.variants else None
    return chosen["entry"] if chosen else f"bucket {bucket[0]}-{bucket[1]}" if bucket else config.kernel


def measure(spec, cols: int, dynamic, eager, budget_s: float) -> dict:
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
    start = time.perf_counter()
    dynamic_launch()                  # a lazy kernel compiles (or finds cached) the variant this row needs
    dynamic.check_status()
    row["compile_s"]["first_launch"] = round(time.perf_counter() - start, 3)
    lazy = getattr(dynamic.kernel.runner, "variants", None)     # a DynamicRowKernel's (runtime/dynamic_rows.py)
    if lazy is not None:              # what the lazy kernel compiled so far: the variants' CTA size and slots
        row["lazy_built"] = {f"{fewest}-{most}": [variant.block[0], variant.launch_config.slots]
                             for (fewest, most), variant in lazy.built.items()}
    row["correct"] = check_result(case.check)
    launches = {"dynamic": dynamic.bind(case.values), "specialized": special.bind(case.values)}
    if eager is not None:
        if case.reset:
            case.reset()
        eager.bind(case.values)()
        eager.check_status()
        eager_row = {"entry": entry_for(eager, dims), "correct": check_result(case.check)}
        launches["eager"] = eager.bind(case.values)
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
    if eager is not None:
        row["eager"].update(eager_row, ratio=round(row["specialized"]["ms"] / row["eager"]["ms"], 3))
    return row


def eager_launcher(spec, text: str, views: list[str]):
    """The kernel compiled with every variant of VARIANT_SIZES in its module (what `intentc
    compile` writes: `lazy_variants` False), or None without variants."""
    from bench.gpu_samples import Launcher
    specialization = spec.specialization(views, spec.dims, True)
    launcher = Launcher(text, spec.kernel, {**specialization, "lazy_variants": False}, f"ir_samples/{spec.sample}.kir")
    return launcher if launcher.kernel.launch_config.variants else None


def compile_times(ids: list[str], reps: int = 3) -> list[dict]:
    """--compile-only (no GPU): seconds of CPU time (best of `reps`, warm process) to PTX for
    sm_90 of each kernel with its row length dynamic — eagerly (every variant of
    VARIANT_SIZES in the module: --eager-variants), lazily (the kernel's own entry and the
    rule: intentc compile, the service), the rule alone (what loading a runtime kernel plans:
    front end, passes, mapping), the one variant the spec's row length needs, and a runtime's
    first launch (the rule, then that variant) — and specialized to the spec's row length."""
    from bench.gpu_sample_specs import SPECS
    from bench.gpu_samples import view_params
    from intentc.codegen.nvptx.variants import VariantRule
    from intentc.driver import compile_kernel
    specs = {spec.id: spec for spec in SPECS}
    rows = []
    for ident in ids:
        spec = specs[ident]
        text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
        views = view_params(text, spec.kernel)
        dynamic = spec.specialization(views, spec.dims, True)
        lazy = compile_kernel(text, spec.kernel, "ptx", "sm_90", specialization={**dynamic, "lazy_variants": True})
        rule = json.loads(lazy.artifacts["launch.json"])["variant_rule"]
        forms = {"eager": {**dynamic, "lazy_variants": False}, "lazy": dynamic,
                 "specialized": spec.specialization(views, spec.dims)}
        if rule:
            forms["variant"] = {**dynamic, "variant": VariantRule(**rule).bucket(spec.dims["N"])}
        row: dict = {"id": ident}
        for name, specialization in forms.items():
            compile_kernel(text, spec.kernel, "ptx", "sm_90", specialization=specialization)
            best = float("inf")
            for _ in range(reps):
                start = time.process_time()
                compile_kernel(text, spec.kernel, "ptx", "sm_90", specialization=specialization)
                best = min(best, time.process_time() - start)
            row[f"{name}_cpu_s"] = round(best, 3)
        if rule:
            planned = functools.partial(_planned_rule, text, spec.kernel, dynamic)
            row["rule_cpu_s"] = round(min(_cpu_seconds(planned) for _ in range(reps)), 3)
            row["first_launch_cpu_s"] = round(row["rule_cpu_s"] + row["variant_cpu_s"], 3)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def _planned_rule(text: str, kernel: str, specialization: dict):
    """What loading a runtime kernel for a dynamic row compiles: its variant rule, planned."""
    from intentc.driver import front_end
    from intentc.runtime.cuda import deferred_rule
    return deferred_rule(front_end(text, kernel, "cubin", "sm_90", specialization=specialization))


def _cpu_seconds(work) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


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
    parser.add_argument("--eager", action="store_true",
                        help="also time the eager compile's variants (VARIANT_SIZES, all in one module)")
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
        views = view_params(text, spec.kernel)
        dynamic = Launcher(text, spec.kernel, spec.specialization(views, spec.dims, True),
                           f"ir_samples/{spec.sample}.kir")
        eager = eager_launcher(spec, text, views) if args.eager else None
        lengths = [int(n) for n in args.lengths.split(",")] if args.lengths else ROW_LENGTHS[ident]
        for cols in lengths:
            try:
                row = measure(spec, cols, dynamic, eager, args.budget_s)
            except Exception as error:     # a row per failure; the others still run
                row = {"id": ident, "N": cols, "error": f"{type(error).__name__}: {str(error)[:300]}"}
            print(json.dumps(row), flush=True)
            rows.append(row)
            if args.out:          # after every row: a run cut short keeps what it measured
                Path(args.out).write_text(json.dumps({"date": datetime.datetime.now(datetime.UTC).isoformat(),
                                                      "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
