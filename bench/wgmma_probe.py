"""Probe of the warp-specialized TMA wgmma form (issue #14) on the H200: correctness against
torch (f64 reference) on tail shapes, then TFLOP/s beside cuBLAS (torch.matmul; for e4m3
operands torch._scaled_mm) in one run; `--plans` also times other tile widths and ring depths;
`--fp8` checks and times the default e4m3 kernel, then each 8-bit float plan of PLANS_F8
(checked on every shape of SHAPES against the f64 product, then timed at 4096³ and, for e4m3,
8192³ beside torch._scaled_mm and torch's f16 matmul of the widened operands), then timing
ablations of the widening kernel (ABLATIONS_F8).

    python3 bench/wgmma_probe.py [--out FILE.json] [--plans | --fp8]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "gpu"), str(ROOT / "tests" / "codegen"), str(ROOT)]
from bench.gpu import timed  # noqa: E402
from bench.gpu_matmul import F8_FLOATS, OUT, TORCH, baseline, dequantized_baseline, kernel_text  # noqa: E402
from bench.gpu_matmul import operands as random_operands  # noqa: E402
from mma_cases import tma_plan_under  # noqa: E402

# Other plans of the TMA form timed by --plans / --fp8: (operands, `wgmma_tma.tma_plan`'s keywords)
PLANS = [("f8e4m3fn", {"widen_unroll": 8})]
# Round 1 of session 7 (bench/results/pending-20261201-s7-h200-r1/fp8) timed the session-6
# options (decoupled rings, integer widening, inline copies, A in registers, ...): none reached
# 0.5x torch._scaled_mm; round 2 (bench/results/fp8-20261201-s7-h200-r2) timed `loads_first` (a
# converter's loads of a trip in flight together), now the default with 16-byte chunks (0.55x
# at 4096³); these are its neighbours
PLANS_F8 = [("f8e4m3fn", {"loads_first": False, "widen_bytes": 8}),     # the form before loads_first
            ("f8e4m3fn", {"widen_bytes": 8, "widen_unroll": 8}),
            ("f8e4m3fn", {"widen_bytes": 8, "widen_unroll": 8, "decoupled_rings": True}),
            ("f8e4m3fn", {"decoupled_rings": True}),
            ("f8e4m3fn", {"widen_bytes": 8}),
            ("f8e4m3fn", {"widen_bytes": 8, "widen_unroll": 8, "stages": 2, "raw_stages": 4}),
            ("f8e5m2", {}),
            ("f8e5m2", {"widening": "bits", "widen_bytes": 8, "widen_unroll": 8, "decoupled_rings": True})]


# Shapes every plan is checked on against the f64 product before it is timed: tails in M, N
# and K, one element, K = 0, many CTAs
SHAPES = ((128, 256, 64), (300, 528, 208), (1, 16, 16), (257, 272, 144), (64, 64, 0), (2048, 2304, 64))


def _skip_widening(self, raw, staged, item):
    """Ablation: the converters wait and arrive as usual but rewrite nothing."""


def _skip_wgmma(b, n, operand, acc, a_descriptor, b_descriptor, accumulators, transpose_b=True):
    """Ablation: the consumers wait, fence and release as usual but issue no wgmma."""
    return accumulators


def _unconverted(b, words, dtype, widening):
    """Ablation: each raw word stored twice in place of its two f16 pairs (no conversion)."""
    return [word for word in words for _ in range(2)]


# Timing ablations of the e4m3 kernel (results wrong on purpose; only the time is read):
# (label, [(module attribute replaced, replacement), ...], plan keywords)
NO_WGMMA = ("wgmma_m64", _skip_wgmma)
CHUNK_BY_CHUNK = {"loads_first": False, "widen_bytes": 8}   # the form before loads_first (`_widen_chunk`)
ABLATIONS_F8 = [("no widening", [("TmaEmitter._widen_chunk", _skip_widening)], CHUNK_BY_CHUNK),
                ("no wgmma, chunk by chunk", [NO_WGMMA], CHUNK_BY_CHUNK),
                ("no wgmma", [NO_WGMMA], {}),
                ("no wgmma, no conversion", [NO_WGMMA, ("f16_pairs_of_f8_words", _unconverted)], {})]


def compiled(dtype: str, plan=None, ablations=()):
    """The sm_90a kernel (the mapping's plan, or the TMA form under `plan`'s keywords; with
    `ablations` = [(attribute of `wgmma_tma`, replacement), ...] those parts left out)."""
    from intentc.codegen.nvptx import wgmma_tma
    from intentc.runtime.cuda import compile_cuda
    kept = []
    for attribute, replacement in ablations:
        *path, name = attribute.split(".")
        owner = getattr(wgmma_tma, path[0]) if path else wgmma_tma
        kept.append((owner, name, getattr(owner, name)))
        setattr(owner, name, replacement)
    try:
        with tma_plan_under(plan) if plan else contextlib.nullcontext():
            return compile_cuda(kernel_text(dtype), "matmul_tiled", arch="sm_90a")
    finally:
        for owner, name, original in reversed(kept):
            setattr(owner, name, original)


def operands(dtype, m, n, k):
    """A, B and a poisoned C (NaN, or for integers a value no product of these sizes gives)."""
    out = TORCH[OUT.get(dtype, dtype)]
    poison = -2 ** 31 if dtype == "i8" else float("nan")
    return (*random_operands(dtype, m, n, k), torch.full((m, n), poison, device="cuda", dtype=out))


def errors(a, b, c, dtype) -> dict:
    """C against the f64 product, relative to sum |a||b|, and where the wrong elements lie."""
    reference = a.double() @ b.double()
    scale = (a.double().abs() @ b.double().abs()).clamp_min(1e-30)
    relative = (c.double() - reference).abs() / scale
    # NaN (unwritten) or off by more than the output's rounding (bf16: 2^-8); integers exactly
    bad = relative != 0 if dtype == "i8" else ~(relative <= 2.0 ** (-8 if dtype == "bf16" else -10))
    row = {"max_rel_error": relative.max().item() if c.numel() else 0.0,
           "bad_fraction": bad.double().mean().item() if c.numel() else 0.0}
    if bad.any():       # where the wrong elements lie says which part of the kernel is wrong
        rows, columns = torch.nonzero(bad, as_tuple=True)
        row["first_bad"] = [int(rows[0]), int(columns[0])]
        row["bad_rows_mod_128"] = sorted({int(r) % 128 for r in rows[:4096]})[:16]
        row["bad_columns_mod_256"] = sorted({int(col) % 256 for col in columns[:4096]})[:16]
    return row


def check(kernel, dtype, m, n, k) -> dict:
    a, b, c = operands(dtype, m, n, k)
    kernel.launch_in_place({"a": a, "b": b, "c": c})
    kernel.synchronize()
    return {"shape": [m, n, k], **errors(a, b, c, dtype)}


def speed(kernel, dtype, m, n, k, cublas: dict) -> dict:
    """TFLOP/s of the kernel and of cuBLAS on the same operands; the kernel's result checked."""
    a, b, c = operands(dtype, m, n, k)
    flop = 2.0 * m * n * k
    row = {"dtype": dtype, "size": [m, n, k]}
    try:
        row["TFLOP/s"] = flop / timed(lambda: kernel.launch_in_place({"a": a, "b": b, "c": c}), 10) / 1e12
        kernel.synchronize()
        row.update(errors(a, b, c, dtype))
    except Exception as error:
        row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
    key = (dtype, m, n, k)
    if key not in cublas:
        cublas[key] = flop / timed(baseline(a, b, torch.empty_like(c)), 10) / 1e12
    row["cublas_TFLOP/s"] = cublas[key]
    if dtype in F8_FLOATS:      # the same function in torch: widened to f16, then torch.matmul
        widened = (*key, "dequantized")
        if widened not in cublas:
            cublas[widened] = flop / timed(dequantized_baseline(a, b, torch.empty_like(c)), 10) / 1e12
        row["dequantized_f16_TFLOP/s"] = cublas[widened]
    if "TFLOP/s" in row:
        row["x_cublas"] = row["TFLOP/s"] / row["cublas_TFLOP/s"]
        if dtype in F8_FLOATS:
            row["x_dequantized_f16"] = row["TFLOP/s"] / row["dequantized_f16_TFLOP/s"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--plans", action="store_true")
    parser.add_argument("--fp8", action="store_true", help="8-bit float plans, then ablations")
    parser.add_argument("--cubin", help="write the f16 kernel's cubin here (for cuobjdump)")
    args = parser.parse_args()
    rows, cublas = [], {}

    def emit(row):
        print(json.dumps(row), flush=True)
        rows.append(row)
    sizes = {"f16": ((4096, 4096, 4096), (8192, 8192, 8192), (4000, 4100, 3900)),
             "bf16": ((4096, 4096, 4096), (8192, 8192, 8192)), "f8e4m3fn": ((4096, 4096, 4096), (8192, 8192, 8192)),
             "i8": ((4096, 4096, 4096), (8192, 8192, 8192)), "f8e5m2": ((4096, 4096, 4096),)}
    for dtype in ("f8e4m3fn",) if args.fp8 else ("f16", "bf16", "f8e4m3fn", "i8"):
        start = time.time()
        kernel = compiled(dtype)
        emit({"dtype": dtype, "compile_s": time.time() - start, "plan": kernel.launch_config.mma["instruction"]})
        if dtype == "f16" and args.cubin:
            Path(args.cubin).write_bytes(kernel.artifacts["kernel.cubin"])
        for shape in SHAPES:
            try:
                emit({"dtype": dtype, **check(kernel, dtype, *shape)})
            except Exception as error:
                emit({"dtype": dtype, "shape": shape, "error": f"{type(error).__name__}: {str(error)[:300]}"})
        for size in sizes[dtype]:
            emit(speed(kernel, dtype, *size, cublas))
    for dtype, plan in PLANS_F8 if args.fp8 else PLANS if args.plans else []:
        try:
            kernel = compiled(dtype, plan)
            checks = [{"plan": plan, "dtype": dtype, **check(kernel, dtype, *shape)} for shape in SHAPES]
        except Exception as error:    # a plan that fails to compile or launch is reported, the others run
            emit({"plan": plan, "dtype": dtype, "error": f"{type(error).__name__}: {str(error)[:300]}"})
            continue
        for row in checks:
            emit(row)
        if any(row["bad_fraction"] for row in checks):      # a wrong plan is not timed
            continue
        for size in sizes[dtype]:
            emit({"plan": plan, **speed(kernel, dtype, *size, cublas)})
    for label, replaced, plan in ABLATIONS_F8 if args.fp8 else []:
        kernel = compiled("f8e4m3fn", plan, replaced)
        a, b, c = operands("f8e4m3fn", 4096, 4096, 4096)
        seconds = timed(lambda kernel=kernel, arrays={"a": a, "b": b, "c": c}: kernel.launch_in_place(arrays), 10)
        emit({"ablation": label, "plan": plan, "dtype": "f8e4m3fn", "size": [4096] * 3,
              "TFLOP/s-equivalent": 2.0 * 4096 ** 3 / seconds / 1e12})
    if args.out:
        Path(args.out).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
