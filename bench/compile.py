"""Compile latency in a warm process (medians).

Two tables:
- every ir_samples/ kernel to PTX for sm_90, specialized as `bench/gpu_samples.py` runs it
  (its spec's fixed extents, unit-stride and dense views, constexprs);
- intentc beside Triton for the kernels with a Triton equivalent in the benchmarks (vector
  add, softmax, row sum, cumsum, layernorm, dropout, tiled matmul): intentc to PTX and to
  cubin, Triton's whole compile to cubin (a fresh cache each time, so it really compiles)
  and Triton to PTX (its total minus its own ptxas stage, timed inside its pipeline).

    python3 bench/compile.py [--reps 5] [--only SAMPLE:KERNEL,...] [--no-samples]
                             [--pairs SAMPLE:KERNEL,...] [--no-dynamic] [--independent-slots N]
                             [--out FILE]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (spec id, Triton kernel name, Triton signature, Triton constexprs): each Triton kernel is
# compiled for the shapes the GPU table runs (BLOCK = the row length the spec fixes).
TRITON_PAIRS = [
    ("vector_add:vector_add", "t_add", {"x": "*fp32", "y": "*fp32", "z": "*fp32", "n": "i32"}, {"BLOCK": 1024}),
    ("row_softmax:row_softmax", "t_softmax", {"x": "*fp32", "y": "*fp32", "n": "i32", "inv_t": "fp32"},
     {"BLOCK": 1024}),
    ("row_sum:row_sum_f16", "t_rowsum", {"x": "*fp16", "y": "*fp32", "n": "i32"}, {"BLOCK": 2048}),
    ("cumsum:row_cumsum", "t_cumsum", {"x": "*fp32", "y": "*fp32", "n": "i32"}, {"BLOCK": 4096}),
    ("layernorm:layernorm", "t_layernorm", {"x": "*fp32", "gamma": "*fp32", "beta": "*fp32", "y": "*fp32",
                                            "mean_out": "*fp32", "rstd_out": "*fp32", "n": "i32", "eps": "fp32"},
     {"BLOCK": 1024}),
    ("philox_dropout:dropout", "t_dropout", {"x": "*fp32", "y": "*fp32", "keep": "*u8", "n": "i32", "seed": "i32",
                                             "offset": "i32", "p": "fp32", "scale": "fp32"}, {"BLOCK": 2048}),
    ("tiled_matmul:matmul_tiled", "t_matmul", {"a": "*fp16", "b": "*fp16", "c": "*fp16", "M": "i32", "N": "i32",
                                               "K": "i32"}, {"BM": 64, "BN": 64, "BK": 32}),
]


# Specialization.independent_slots for every compile (`--independent-slots`; 0: the default)
INDEPENDENT_SLOTS = 0


def compile_args(spec, dynamic: bool = False) -> tuple:
    """(KIR text, kernel, Specialization): the sample compiled as the GPU table runs it."""
    from bench.gpu_samples import view_params
    from intentc.options import Specialization
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    return text, spec.kernel, Specialization(**spec.specialization(view_params(text, spec.kernel), spec.dims, dynamic),
                                             independent_slots=INDEPENDENT_SLOTS)


# The driver's stages to PTX (`CompileResult.timings`), reported as medians beside the totals.
STAGES = ("parse", "verify", "passes", "lower-llvm", "llvm-opt", "ptx-emit")


# The dynamic forms of a kernel's row length timed beside Triton (DYNAMIC_PATHS: what a user of
# each path compiles): a runtime's first launch (`compile_cuda`, `intentc.load`, `intentc run
# --dynamic-extents`: the mapping planned for the variant rule, then the one bucket variant the
# launch's row needs, runtime/dynamic_rows.py), and `intentc compile` or the service (the
# kernel's own entry and the rule; a consumer then asks for each bucket once).
DYNAMIC_PATHS = ("first launch", "intentc compile")


def first_launch(text: str, kernel: str, target: str, specialization, row: int):
    """What a runtime's first launch of a dynamic row compiles (`compile_cuda`, then
    `runtime.cuda.variant_kernel`): the text parsed and checked once, the rule, then its
    bucket's variant from that request."""
    from dataclasses import replace

    from intentc.driver import compile_request, front_end
    from intentc.runtime.cuda import deferred_rule
    request = front_end(text, kernel, target, "sm_90", specialization=specialization)
    rule = deferred_rule(request)
    bucket = specialization.model_copy(update={"variant": rule.bucket(row)})
    return compile_request(replace(request, specialization=bucket, timings={}))


def intentc_times(spec, reps: int, to_cubin: bool, dynamic: str | None = None) -> dict:
    """Median seconds to PTX (and to cubin) after one warm-up compile (libdevice parsed,
    pipelines built), with the GPU table's specialization of the kernel (`dynamic`: its row
    length left dynamic, compiled as that DYNAMIC_PATHS path does), and the median
    milliseconds of each stage to PTX."""
    from intentc.driver import compile_kernel
    text, _, specialization = compile_args(spec, dynamic is not None)
    targets = ("ptx", "cubin") if to_cubin else ("ptx",)

    def compile_once(target: str):
        if dynamic == "first launch":
            return first_launch(text, spec.kernel, target, specialization, spec.dims["N"])
        return compile_kernel(text, spec.kernel, target, "sm_90", specialization=specialization)
    compile_once("ptx")
    seconds: dict[str, list[float]] = {target: [] for target in targets}
    stages: dict[str, list[float]] = {stage: [] for stage in STAGES}
    for _ in range(reps):
        for target in targets:
            start = time.perf_counter()
            result = compile_once(target)
            seconds[target].append(time.perf_counter() - start)
            if target == "ptx":
                for stage in STAGES:
                    stages[stage].append(result.timings.get(stage, 0.0))
    return {**{f"to_{target}_s": round(statistics.median(values), 4) for target, values in seconds.items()},
            "stages_ms": {stage: round(statistics.median(values) * 1e3, 1) for stage, values in stages.items()}}


@contextlib.contextmanager
def ptxas_stage_timer(spent: list[float]):
    """Times Triton's own cubin stage (ptxas) from inside its pipeline."""
    from triton.backends.nvidia.compiler import CUDABackend
    original = CUDABackend.make_cubin

    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)
    CUDABackend.make_cubin = timed
    try:
        yield
    finally:
        CUDABackend.make_cubin = original


def triton_times(kernel_name: str, signature: dict, constexprs: dict, reps: int) -> dict:
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from bench import triton_kernels
        fn = getattr(triton_kernels, kernel_name)
        totals: list[float] = []
        ptxas: list[float] = []
        for attempt in range(reps + 1):          # the first compile warms Triton up
            with tempfile.TemporaryDirectory() as cache, ptxas_stage_timer(ptxas):
                os.environ["TRITON_CACHE_DIR"] = cache
                start = time.perf_counter()
                source = triton.compiler.ASTSource(
                    fn=fn, signature={**signature, **dict.fromkeys(constexprs, "constexpr")},
                    constexprs={(list(fn.arg_names).index(k),): v for k, v in constexprs.items()})
                compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32))
                if attempt:
                    totals.append(time.perf_counter() - start)
        assert "ptx" in compiled.asm
    except Exception as error:
        return {"error": f"{type(error).__name__}: {str(error)[:300]}"}
    to_ptx = [total - stage for total, stage in zip(totals, ptxas[1:])]
    return {"to_cubin_s": round(statistics.median(totals), 4), "to_ptx_s": round(statistics.median(to_ptx), 4)}


def sample_rows(specs, reps: int) -> list[dict]:
    rows = []
    for spec in specs:
        try:
            row = {"id": spec.id, **intentc_times(spec, reps, to_cubin=False)}
        except Exception as error:
            row = {"id": spec.id, "error": f"{type(error).__name__}: {str(error)[:300]}"}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def triton_rows(specs: dict, reps: int, pairs: list[str] | None = None, dynamic_row: bool = True) -> list[dict]:
    """The table beside Triton: `pairs` (ids; all by default), softmax also with dynamic
    extents unless not `dynamic_row`."""
    rows = []
    for ident, kernel_name, signature, constexprs in TRITON_PAIRS:
        if pairs is not None and ident not in pairs:
            continue
        dynamic_paths = DYNAMIC_PATHS if ident == "row_softmax:row_softmax" and dynamic_row else ()
        for dynamic in (None, *dynamic_paths):
            try:
                mine = intentc_times(specs[ident], reps, to_cubin=True, dynamic=dynamic)
            except Exception as error:
                mine = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
            row = {"id": ident + (f" (dynamic: {dynamic})" if dynamic else ""), "intentc": mine,
                   "triton": triton_times(kernel_name, signature, constexprs, reps)}
            if "to_ptx_s" in mine and "to_ptx_s" in row["triton"]:
                row["intentc/triton to PTX"] = round(mine["to_ptx_s"] / row["triton"]["to_ptx_s"], 3)
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def print_tables(samples: list[dict], pairs: list[dict]) -> None:
    if samples:
        # vector add, when timed, is the yardstick across hosts: a sample's time over its own
        reference = next((row.get("to_ptx_s") for row in samples if row["id"] == "vector_add:vector_add"), None)
        print(f"\n{'kernel (to PTX, sm_90)':50s}{'ms':>10s}" + (f"{'/ vector add':>14s}" if reference else ""))
        for row in samples:
            timed = "to_ptx_s" in row
            print(f"{row['id']:50s}" + (f"{row['to_ptx_s'] * 1e3:10.1f}" if timed else f"  {row['error']}")
                  + (f"{row['to_ptx_s'] / reference:14.2f}" if timed and reference else ""))
        timed = [row["to_ptx_s"] for row in samples if "to_ptx_s" in row]
        if timed:
            print(f"{'slowest / median':50s}{max(timed) * 1e3:10.1f} / {statistics.median(timed) * 1e3:.1f}")
    print(f"\n{'kernel':46s}{'intentc PTX':>12s}{'cubin':>9s}{'Triton PTX':>12s}{'cubin':>9s}{'PTX ratio':>11s}")
    for row in pairs:
        mine, theirs = row["intentc"], row["triton"]
        cells = [mine.get("to_ptx_s"), mine.get("to_cubin_s"), theirs.get("to_ptx_s"), theirs.get("to_cubin_s")]
        ratio = row.get("intentc/triton to PTX")
        print(f"{row['id']:46s}" + "".join(f"{c * 1e3:10.1f}ms" if c else f"{'-':>12s}" for c in cells)
              + (f"{ratio:11.2f}" if ratio else f"{'-':>11s}"))
        for side in (mine, theirs):
            if "error" in side:
                print(f"{'':46s}{side['error'][:200]}")


def cpu_model() -> str:
    """The host CPU's model name (compile times are single-core CPU work)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def main(argv=None):
    from bench.gpu_sample_specs import SPECS
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--only", help="comma-separated sample:kernel ids for the all-samples table")
    parser.add_argument("--no-samples", action="store_true", help="only the table beside Triton")
    parser.add_argument("--pairs", help="comma-separated sample:kernel ids for the table beside Triton")
    parser.add_argument("--no-dynamic", action="store_true", help="no dynamic-extents softmax row beside Triton")
    parser.add_argument("--independent-slots", type=int, default=0,
                        help="Specialization.independent_slots for every compile (0: the default form)")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    global INDEPENDENT_SLOTS
    INDEPENDENT_SLOTS = args.independent_slots
    specs = [s for s in SPECS if not args.only or s.id in args.only.split(",")]
    samples = [] if args.no_samples else sample_rows(specs, args.reps)
    pairs = triton_rows({s.id: s for s in SPECS}, args.reps, args.pairs.split(",") if args.pairs else None,
                        not args.no_dynamic)
    print_tables(samples, pairs)
    if args.out:
        Path(args.out).write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "host": os.uname().nodename,
                                              "cpu": cpu_model(), "load_average": os.getloadavg(),
                                              "reps": args.reps, "samples": samples, "triton_pairs": pairs}, indent=2))


if __name__ == "__main__":
    main()
