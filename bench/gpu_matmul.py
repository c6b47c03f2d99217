"""Contraction rows (issue #14): `ir_samples/tiled_matmul.kir` on the MMA mapping beside
cuBLAS (torch.matmul) and Triton's tutorial matmul, TFLOP/s on the same data in one run.

    python3 bench/gpu_matmul.py [--sizes 4096,4096,4096 ...] [--dtypes f16,bf16] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "gpu"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "codegen"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import intentc
from bench.gpu import timed
from mma_cases import variant

TORCH = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f8e4m3fn": torch.float8_e4m3fn,
         "f8e5m2": torch.float8_e5m2, "i8": torch.int8, "i32": torch.int32}
OUT = {"f8e4m3fn": "f16", "f8e5m2": "f16", "i8": "i32"}      # the output dtype where it is not the operands'
F8_FLOATS = ("f8e4m3fn", "f8e5m2")
DEQUANTIZED = "torch_f16_dequantized"     # the 8-bit float rows' second baseline (`dequantized_baseline`)


@triton.jit
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Triton's tutorial matmul (03-matrix-multiplication), f32 accumulator."""
    pid = tl.program_id(0)
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    group_id = pid // (GROUP_M * num_pid_n)
    first_m = group_id * GROUP_M
    group_size = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % (GROUP_M * num_pid_n)) % group_size)
    pid_n = (pid % (GROUP_M * num_pid_n)) // group_size
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (cm[:, None] < M) & (cn[None, :] < N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty), mask=mask)


def triton_matmul(a, b, c):
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, 128) * triton.cdiv(n, 256),)
    return lambda: tutorial_matmul[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                         c.stride(0), c.stride(1), BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8,
                                         num_stages=3, num_warps=8)


def baseline(a, b, c):
    """cuBLAS: torch.matmul, torch._int_mm for i8, or for 8-bit floats torch._scaled_mm (B
    column-major, unit scales; cuBLAS multiplies no e5m2 by e5m2, so for those B is e4m3:
    the same 8-bit rate)."""
    if a.element_size() > 1:
        return lambda: torch.matmul(a, b, out=c)
    if a.dtype == torch.int8:
        return lambda: torch._int_mm(a, b, out=c)
    if a.dtype == b.dtype == torch.float8_e5m2:
        b = b.float().to(torch.float8_e4m3fn)
    b_columns, one = b.t().contiguous().t(), torch.ones((), device="cuda")
    return lambda: c.copy_(torch._scaled_mm(a, b_columns, scale_a=one, scale_b=one, out_dtype=c.dtype))


def dequantized_baseline(a, b, c):
    """The same function as the 8-bit float rows, in torch: A and B widened to f16 (exact),
    then torch.matmul in f16 accumulating in f32 (reduced-precision reductions off while it
    runs) into the f16 C; its time includes the widening."""
    def run():
        kept = torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        try:
            torch.matmul(a.to(torch.float16), b.to(torch.float16), out=c)
        finally:
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = kept
    return run


def kernel_text(dtype: str) -> str:
    """The tiled matmul for `dtype` operands: an f32 accumulator (i32 for i8), the output
    in the operands' dtype where the epilogue can write it (OUT)."""
    return variant(dtype, "i32" if dtype == "i8" else "f32", OUT.get(dtype, dtype))


def operands(dtype: str, m: int, n: int, k: int) -> tuple:
    """Random A and B (i8: the whole range) on the GPU."""
    if dtype == "i8":
        return tuple(torch.randint(-128, 128, shape, device="cuda", dtype=torch.int8) for shape in ((m, k), (k, n)))
    return torch.randn(m, k, device="cuda").to(TORCH[dtype]), torch.randn(k, n, device="cuda").to(TORCH[dtype])


def row(dtype: str, m: int, n: int, k: int) -> dict:
    out = OUT.get(dtype, dtype)
    kernel = intentc.load(kernel_text(dtype), "matmul_tiled", target="cuda", facts={"unit_stride": ["a", "b", "c"]})
    a, b = operands(dtype, m, n, k)
    c, c_torch, c_triton = (torch.empty(m, n, device="cuda", dtype=TORCH[out]) for _ in range(3))
    flop = 2.0 * m * n * k
    result = {"bench": f"matmul {dtype} {m}x{n}x{k}", "launch": kernel.launch_config.to_json()["mma"]
              if hasattr(kernel, "launch_config") else None}
    impls = {"intentc": lambda: kernel(a=a, b=b, c=c), "torch": baseline(a, b, c_torch)}
    if dtype in ("f16", "bf16"):      # the tutorial's tl.dot would take f32 inputs through TF32
        impls["triton"] = triton_matmul(a, b, c_triton)
    if dtype in F8_FLOATS:      # a second baseline of the same function (the bar stays torch._scaled_mm)
        impls[DEQUANTIZED] = dequantized_baseline(a, b, torch.empty_like(c))
    for label, fn in impls.items():
        try:
            result[label] = {"TFLOP/s": flop / timed(fn, 20) / 1e12}
        except Exception as error:    # a failing implementation is reported in its row
            result[label] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
    torch.cuda.synchronize()
    reference = torch.matmul(a.double(), b.double()) if dtype == "i8" else torch.matmul(a.float(), b.float())
    error = (c.double() - reference).abs().max().item()
    result["intentc_max_abs_error_vs_f32"] = error
    result["torch_max_abs_error_vs_f32"] = (c_torch.double() - reference).abs().max().item()
    for label in ("torch", "triton", DEQUANTIZED):
        if "TFLOP/s" in result.get("intentc", {}) and "TFLOP/s" in result.get(label, {}):
            result[f"intentc/{label}"] = result["intentc"]["TFLOP/s"] / result[label]["TFLOP/s"]
    print(json.dumps(result), flush=True)
    return result


# Plans timed by --sweep (instruction, block, warps, stages, in-flight wgmma groups): the
# mapping's choice is data, so the sweep compiles the same kernel under each.
SWEEP = [("wgmma.m64n128k16", (128, 128, 32), (2, 1), 4, 1, 2), ("wgmma.m64n128k16", (128, 128, 32), (2, 1), 4, 0, 2),
         ("wgmma.m64n256k16", (128, 256, 64), (2, 1), 3, 1, 1), ("wgmma.m64n128k16", (256, 128, 64), (4, 1), 3, 1, 1)]


# Timing ablations of the default sm_90a plan: each leaves one part of the kernel out at
# compile time (results are wrong on purpose; only the time is read), so the differences
# say where the time goes.
ABLATIONS = {"no epilogue stores": ("TileEmitter", "store_pairs"), "no operand copies": ("TileEmitter", "_load"),
             "no MMAs": ("Wgmma", "compute")}


def ablations(m: int, n: int, k: int) -> list[dict]:
    from intentc.codegen.nvptx import tile_matmul, wgmma
    from intentc.runtime.cuda import compile_cuda
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    rows = []
    for label, (owner, method) in ABLATIONS.items():
        cls = getattr(tile_matmul if owner == "TileEmitter" else wgmma, owner)
        kept = getattr(cls, method)
        setattr(cls, method, lambda *args, **kwargs: None)
        row = {"ablation": label, "size": [m, n, k]}
        try:
            kernel = compile_cuda(variant(), "matmul_tiled", arch="sm_90a")
            arrays = {"a": a, "b": b, "c": c}
            row["TFLOP/s-equivalent"] = 2.0 * m * n * k / timed(reps=10, fn=lambda kernel=kernel, arrays=arrays:
                                                                  kernel.launch_in_place(arrays)) / 1e12
        except Exception as error:    # a failing variant is reported in its row
            row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        finally:
            setattr(cls, method, kept)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def sweep(m: int, n: int, k: int) -> list[dict]:
    """TFLOP/s of f16 at m x n x k under each plan of SWEEP (compiled without the cache)."""
    from intentc.codegen.nvptx import mapping, tile_matmul
    from intentc.runtime.cuda import compile_cuda
    chosen = tile_matmul.plan_mma
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    reference = torch.matmul(a.float(), b.float())
    rows = []
    for instruction, block, warps, stages, pending, resident in SWEEP:
        def plan(kernel, arch, spec=(instruction, block, warps, stages, pending), resident=resident):
            found = chosen(kernel, arch)
            return None if found is None else tile_matmul.MmaPlan(found.contraction, *spec, resident=resident)
        mapping.plan_mma = plan
        row = {"plan": [instruction, list(block), list(warps), stages, pending, resident], "size": [m, n, k]}
        try:
            arch = "sm_90a" if instruction.startswith("wgmma") else "sm_90"
            kernel = compile_cuda(variant(), "matmul_tiled", arch=arch)
            c = torch.empty(m, n, device="cuda", dtype=torch.float16)
            arrays = {"a": a, "b": b, "c": c}
            row["TFLOP/s"] = 2.0 * m * n * k / timed(reps=10, fn=lambda kernel=kernel, arrays=arrays:
                                                       kernel.launch_in_place(arrays)) / 1e12
            row["max_abs_error_vs_f32"] = (c.float() - reference).abs().max().item()
        except Exception as error:    # a failing plan is reported in its row
            row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        finally:
            mapping.plan_mma = chosen
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


# The contraction rows of issue #14 that exist so far (bench/gpu.py's "contractions").
ROWS = [("f16", (1024, 1024, 1024)), ("bf16", (1024, 1024, 1024)), ("f16", (4096, 4096, 4096)),
        ("bf16", (4096, 4096, 4096)), ("f16", (8192, 8192, 8192)), ("bf16", (8192, 8192, 8192)),
        ("f16", (4000, 4100, 3900)), ("bf16", (4000, 4100, 3900)), ("f32", (4096, 4096, 4096)),
        ("f8e4m3fn", (4096, 4096, 4096)), ("f8e5m2", (4096, 4096, 4096)), ("i8", (4096, 4096, 4096))]


# The f32 plan option awaiting its GPU verification beside the default (bench/gpu_sgemm.py)
F32_PLANS = ["vector bk=32 (default)", "scalar", "vector bk=16"]


def contraction_rows(quick: bool) -> list[dict]:
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = [row(dtype, *size) for dtype, size in (ROWS[2:4] if quick else ROWS)]
    if not quick:
        from bench import gpu_sgemm
        rows.append({"bench": "matmul f32 4096x4096x4096 plans", **gpu_sgemm.compare(F32_PLANS, 4096, 5, timed)})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["4096,4096,4096"])
    parser.add_argument("--dtypes", default="f16")
    parser.add_argument("--out")
    parser.add_argument("--sweep", action="store_true", help="time the plans of SWEEP instead (f16, first size)")
    args = parser.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    if args.sweep:
        size = tuple(map(int, args.sizes[0].split(",")))
        rows = sweep(*size) + ablations(*size)
    else:
        rows = [row(dtype, *map(int, size.split(","))) for size in args.sizes for dtype in args.dtypes.split(",")]
    if args.out:
        Path(args.out).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
