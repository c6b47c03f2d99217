"""f32 tiled matmul (issue #14: CUDA cores, no TF32) beside cuBLAS SGEMM, in one process:
the default plan (the scalar K step), the vector-fragments plan option (`fma.f32.v4`) and
plan probes (fields set on the plan for this run only), interleaved rounds, median
TFLOP/s; each result checked against an f64 product on the GPU, also at edge shapes.

    python3 bench/gpu_sgemm.py [--size 4096] [--rounds 7] [--only LABEL,...] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "gpu"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "codegen"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mma_cases import plan_fields_under, variant

from intentc.runtime.cuda import compile_cuda

# label -> plan fields set for this run (none: the default plan); the scalar K step of
# `simt_matmul.py`, the default before session 7, stays a plan to compare with
SCALAR = "fma.f32"
PLANS = {"vector bk=32 (default)": {}, "scalar": {"instruction": SCALAR, "block": (128, 128, 16)},
         "vector bk=16": {"block": (128, 128, 16)},
         "vector 128x256": {"block": (128, 256, 16)},
         "vector resident=2": {"block": (128, 128, 16), "resident": 2},
         "vector bk=32 stages=4": {"stages": 4}}
EDGES = [(1, 1, 1), (5, 7, 0), (257, 263, 300), (1000, 1000, 1000), (129, 4096, 17)]


def compiled(fields: dict, arch: str | None = None):
    """The f32 tiled matmul compiled (without the kernel cache), its plan given `fields`."""
    with plan_fields_under(fields):
        return compile_cuda(variant("f32", "f32", "f32"), "matmul_tiled", {"unit_stride": ["a", "b", "c"]},
                            arch=arch)


def max_error(kernel, m: int, n: int, k: int) -> float:
    """max |C - A @ B| / bound, the bound K · 2^-22 · (|A| @ |B|) + 2^-22 |A @ B| (f64): at
    most 1 where the result is right (NaN where C was left unwritten)."""
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    c = torch.full((m, n), float("nan"), device="cuda")
    kernel.launch_in_place({"a": a, "b": b, "c": c})
    torch.cuda.synchronize()
    exact = a.double() @ b.double()
    bound = max(k, 1) * 2.0 ** -22 * (a.double().abs() @ b.double().abs()) + 2.0 ** -22 * exact.abs() + 1e-30
    return ((c.double() - exact).abs() / bound).max().item()


def compare(labels: list, size: int, rounds: int, timed) -> dict:
    """Each plan of `labels` checked at the edge shapes and `size`^3, then timed beside
    torch.matmul (TF32 off) in `rounds` interleaved rounds: TFLOP/s medians and ratios."""
    torch.backends.cuda.matmul.allow_tf32 = False
    kernels, result = {}, {"size": size, "device": torch.cuda.get_device_name(), "plans": {}}
    for label in labels:
        try:
            kernels[label] = compiled(PLANS[label])
            launch = kernels[label].launch_config.to_json()
            result["plans"][label] = {"mma": launch["mma"], "shared_bytes": launch["shared_bytes"],
                                      "errors": {f"{m}x{n}x{k}": max_error(kernels[label], m, n, k)
                                                 for m, n, k in [*EDGES, (size, size, size)]}}
        except Exception as error:      # a failing probe is reported, not timed, not fatal
            kernels.pop(label, None)
            result["plans"][label] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
        errors = result["plans"][label].get("errors", {})
        result["plans"][label]["within_bound"] = bool(errors) and all(e <= 1 for e in errors.values())
        print(label, json.dumps(result["plans"][label]), flush=True)
    a, b = torch.randn(size, size, device="cuda"), torch.randn(size, size, device="cuda")
    c = torch.empty(size, size, device="cuda")
    impls = {"torch": lambda: torch.matmul(a, b, out=c)}
    impls.update({label: (lambda kernel=kernel: kernel.launch_in_place({"a": a, "b": b, "c": c}))
                  for label, kernel in kernels.items()})
    times: dict = {label: [] for label in impls}
    for _ in range(rounds):
        for label, fn in impls.items():
            times[label].append(timed(fn, 10))
    flop = 2.0 * size ** 3
    tflops = {label: [flop / t / 1e12 for t in seconds] for label, seconds in times.items()}
    result["TFLOP/s"] = {label: statistics.median(values) for label, values in tflops.items()}
    result["rounds"] = tflops
    result["ratio_to_torch"] = {label: value / result["TFLOP/s"]["torch"] for label, value in result["TFLOP/s"].items()}
    for label in impls:
        print(f"{label:28s} {result['TFLOP/s'][label]:7.2f} TFLOP/s  {result['ratio_to_torch'][label]:.3f}x torch  "
              f"rounds {[round(v, 1) for v in tflops[label]]}", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated labels of PLANS")
    parser.add_argument("--out")
    args = parser.parse_args()
    from bench.gpu import timed     # (imports Triton: here, not when the plans are only compiled)
    labels = [label for label in PLANS if not args.only or label in args.only.split(",")]
    result = compare(labels, args.size, args.rounds, timed)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
