"""Where every sample's compile to PTX spends its CPU time, summed over all samples (the shared
costs: docs/gpu.md, "Compile pipeline", session 9).

    python tools/compile_profile.py [--only SAMPLE:KERNEL,...] [--reps 2]

Prints the CPU time of each component over every sample (specialized as `bench/compile.py`
compiles them, after one warm-up compile each): parsing the KIR, verifying it, the passes,
planning the mapping, lowering to llvmlite IR (staged programs' stages too), printing it,
LLVM's parsing, the kernel pipeline (`machine.optimize`), the NVPTX code generator
(`machine.emit_ptx`) and the collections (the one on a second thread while LLVM emits,
`codegen/collection.py`, and the driver's at the end); then LLVM's own pass timer
(`llvmlite.binding.set_time_passes`), summed by pass name separately for the kernel pipeline
and for code generation. Each component is its own thread's CPU time; the total is the
process's (both threads), so `rest` is what no component covers.
"""
from __future__ import annotations

import argparse
import collections
import importlib
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# `Total Execution Time` lines and each pass's row: user, system, user+system, wall, name
_PASS_ROW = re.compile(r"\s+[\d.]+ \(.*?\)\s+[\d.]+ \(.*?\)\s+([\d.]+) \(.*?\)\s+[\d.]+ \(.*?\)\s+(.*)$")


def _timed(owner, name: str, spent: collections.Counter, key: str) -> None:
    """Wraps `owner.name` to add its thread's CPU seconds to `spent[key]`."""
    original = getattr(owner, name)

    def timed(*args, **kwargs):
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent[key] += time.thread_time() - start
    setattr(owner, name, timed)


def _passes(report: str, into: collections.Counter) -> None:
    for line in report.splitlines():
        row = _PASS_ROW.match(line)
        if row and row.group(2).strip() != "Total":
            into[re.sub(r" #\d+$", "", row.group(2).strip())] += float(row.group(1))


def main(argv=None) -> None:
    import gc

    import llvmlite.binding as llvm

    from bench.compile import compile_args
    from bench.gpu_sample_specs import SPECS
    from intentc.codegen.llvm.kernel import LoweredKernel
    from intentc.codegen.nvptx import compile as nvptx_compile, machine, stage_compile
    from intentc.driver import compile_kernel
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", help="comma-separated sample:kernel ids")
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args(argv)
    specs = [spec for spec in SPECS if not args.only or spec.id in args.only.split(",")]
    compiles = [compile_args(spec) for spec in specs]

    def compile_all() -> None:
        for text, kernel, specialization in compiles:
            compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization)
    compile_all()
    spent: collections.Counter = collections.Counter()
    front = [importlib.import_module(f"intentc.{stage}") for stage in ("parse", "verify", "passes")]
    for owner, name, key in ((front[0], "parse", "parse KIR"), (front[1], "verify", "verify"),
                             (front[2], "optimize", "passes"), (nvptx_compile, "plan_mapping", "plan mapping"),
                             (nvptx_compile, "lower_kernel", "lower (Python)"),
                             (stage_compile, "lower_kernel", "lower (Python)"), (LoweredKernel, "take_text", "print IR"),
                             (nvptx_compile.llvm, "parse_assembly", "LLVM parse"), (machine, "optimize", "kernel pipeline"),
                             (machine, "emit_ptx", "code generation"), (gc, "collect", "collection")):
        _timed(owner, name, spent, key)
    start = time.process_time()
    for _ in range(args.reps):
        compile_all()
    total = (time.process_time() - start) / args.reps
    print(f"{len(compiles)} kernels to PTX, CPU ms a pass over all of them (mean of {args.reps})")
    for key, seconds in [("total", total), *spent.most_common(), ("rest", total - sum(spent.values()) / args.reps)]:
        seconds = seconds if key in ("total", "rest") else seconds / args.reps
        print(f"  {key:18s}{seconds * 1e3:9.0f}{100 * seconds / total:7.1f} %")
    passes: collections.Counter = collections.Counter()
    llvm.set_time_passes(True)
    compile_all()
    _passes(llvm.report_and_reset_timings(), passes)
    llvm.set_time_passes(False)
    # the kernel pipeline runs on LLVM's new pass manager (its passes' names end in `Pass`), the
    # code generator on the legacy one (descriptive names)
    for stage, in_stage in (("kernel pipeline", True), ("code generation", False)):
        ours = collections.Counter({name: t for name, t in passes.items() if name.endswith("Pass") == in_stage})
        print(f"{stage}: LLVM's pass timer, {sum(ours.values()) * 1e3:.0f} ms in all")
        for name, seconds in ours.most_common(12):
            print(f"  {seconds * 1e3:8.1f}  {name}")

if __name__ == "__main__":
    main()
