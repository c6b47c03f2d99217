"""Probe of the warp-specialized TMA wgmma form (issue #14) on the H200: correctness against
torch in f32 on tail shapes, then TFLOP/s beside cuBLAS and the cp.async form, in one run.

    python3 bench/wgmma_probe.py [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "gpu"), str(ROOT / "tests" / "codegen"), str(ROOT)]
from bench.gpu import timed
from mma_cases import variant

TORCH = {"f16": torch.float16, "bf16": torch.bfloat16}


def compiled(dtype: str, acc: str, form: str):
    from intentc.codegen.nvptx import mapping, tile_matmul, wgmma_tma
    from intentc.runtime.cuda import compile_cuda
    chosen = tile_matmul.plan_mma

    def plan(kernel, arch):
        found = chosen(kernel, arch)
        return wgmma_tma.tma_plan(kernel, found.contraction) if form == "tma" else found
    mapping.plan_mma = plan
    try:
        return compile_cuda(variant(dtype, acc, dtype), "matmul_tiled", arch="sm_90a")
    finally:
        mapping.plan_mma = chosen


def check(kernel, dtype, m, n, k) -> dict:
    a = torch.randn(m, k, device="cuda", dtype=TORCH[dtype])
    b = torch.randn(k, n, device="cuda", dtype=TORCH[dtype])
    c = torch.full((m, n), float("nan"), device="cuda", dtype=TORCH[dtype])
    kernel.launch_in_place({"a": a, "b": b, "c": c})
    kernel.synchronize()
    reference = a.double() @ b.double()
    scale = (a.double().abs() @ b.double().abs()).clamp_min(1e-30)
    error = ((c.double() - reference).abs() / scale).max().item() if m * n else 0.0
    return {"shape": [m, n, k], "nan": bool(torch.isnan(c).any().item()), "max_rel_error": error}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    rows = []
    for dtype in ("f16", "bf16"):
        start = time.time()
        kernel = compiled(dtype, "f32", "tma")
        rows.append({"compile_s": time.time() - start, "dtype": dtype})
        for shape in ((128, 256, 64), (300, 520, 200), (1, 8, 8), (257, 264, 136), (64, 64, 0), (1000, 1000, 1000)):
            try:
                rows.append({"dtype": dtype, **check(kernel, dtype, *shape)})
            except Exception as error:
                rows.append({"dtype": dtype, "shape": shape, "error": f"{type(error).__name__}: {str(error)[:300]}"})
            print(json.dumps(rows[-1]), flush=True)
        for size in (4096, 8192):
            a = torch.randn(size, size, device="cuda", dtype=TORCH[dtype])
            b = torch.randn(size, size, device="cuda", dtype=TORCH[dtype])
            c = torch.empty(size, size, device="cuda", dtype=TORCH[dtype])
            flop = 2.0 * size ** 3
            row = {"dtype": dtype, "size": size}
            try:
                row["tma_TFLOP/s"] = flop / timed(lambda: kernel.launch_in_place({"a": a, "b": b, "c": c}), 10) / 1e12
            except Exception as error:
                row["tma_error"] = f"{type(error).__name__}: {str(error)[:300]}"
            row["cublas_TFLOP/s"] = flop / timed(lambda: torch.matmul(a, b, out=c), 10) / 1e12
            if "tma_TFLOP/s" in row:
                row["tma/cublas"] = row["tma_TFLOP/s"] / row["cublas_TFLOP/s"]
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.out:
        Path(args.out).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
