"""Attention rows (issue #14): `ir_samples/attention_region_fold.kir` (causal, f32) on the flash
mapping beside torch's scaled_dot_product_attention on the same f32 data (and, for scale,
torch's flash kernel on f16 copies); `attention_tensor_cores.kir` (causal, f16 and bf16) on the
flash mapping's tensor-core form beside torch's flash kernel (`SDPBackend.FLASH_ATTENTION`) on
the same 16-bit data; and `decode_attention_scores_contract.kir` on the lane-group dot mapping
beside torch's einsum, in one run; times are medians of CUDA-event means (bench.gpu.timed),
throughputs intentc over torch.

    python3 bench/gpu_attention.py [--seq 4096] [--dims 64,128] [--dtypes f32,f16,bf16]
        [--sweep] [--mma-sweep f16:128] [--out FILE.json]

`causal_rows` are also bench/gpu.py's attention rows (issue #14: beside torch's flash SDPA).

`--sweep` also times the causal kernel (the last of --dims) under other flash plans (rows and
keys a thread, resident CTAs an SM): the mapping's choice is data, so each is the same kernel
compiled under another plan.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import intentc  # noqa: E402
from bench.gpu import timed  # noqa: E402

CAUSAL = (ROOT / "ir_samples" / "attention_region_fold.kir").read_text()
TENSOR_CORES = (ROOT / "ir_samples" / "attention_tensor_cores.kir").read_text()
DECODE = (ROOT / "ir_samples" / "decode_attention_scores_contract.kir").read_text()


def _seconds(fn, reps: int = 10) -> float:
    return sorted(timed(fn, reps) for _ in range(3))[1]


def _reference(q, k, v, scale: float):
    return F.scaled_dot_product_attention(q[None, None].double(), k[None, None].double(), v[None, None].double(),
                                          is_causal=True, scale=scale)[0, 0]


def _timed(label: str, kernel, impls: dict, tensors: tuple) -> dict:
    """A causal row: each implementation's time and throughput, intentc's error against f64."""
    q, k, v, o, scale = tensors
    t, d = q.shape
    flop = 2.0 * t * t * d          # QK^T and PV over the causal half
    row = {"bench": label, "launch": kernel.launch_config.to_json()["plan"]}
    for name, fn in impls.items():
        row[name] = {"ms": _seconds(fn) * 1e3}
        row[name]["TFLOP/s"] = flop / row[name]["ms"] * 1e-9
    kernel(q=q, k=k, v=v, scale=scale, o=o)
    torch.cuda.synchronize()
    row["max_abs_error_vs_f64"] = (o.double() - _reference(q, k, v, scale)).abs().max().item()
    return row


def causal_row(t: int, d: int) -> dict:
    kernel = intentc.load(CAUSAL, "causal_attention", target="cuda", extents={"D": d},
                          facts={"unit_stride": ["q", "k", "v", "o"]})
    q, k, v = (torch.randn(t, d, device="cuda") for _ in range(3))
    o = torch.empty(t, d, device="cuda")
    scale = 1 / math.sqrt(d)
    half = [x.half()[None, None] for x in (q, k, v)]
    impls = {"intentc": lambda: kernel(q=q, k=k, v=v, scale=scale, o=o),
             "torch_f32": lambda: F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None],
                                                                 is_causal=True, scale=scale),
             "torch_flash_f16": lambda: F.scaled_dot_product_attention(*half, is_causal=True, scale=scale)}
    row = _timed(f"causal attention f32 T={t} D={d}", kernel, impls, (q, k, v, o, scale))
    row["intentc/torch_f32"] = row["torch_f32"]["ms"] / row["intentc"]["ms"]
    row["intentc/torch_flash_f16"] = row["torch_flash_f16"]["ms"] / row["intentc"]["ms"]
    print(json.dumps(row), flush=True)
    return row


def causal_16bit_row(t: int, d: int, dtype: str) -> dict:
    """The f16 / bf16 kernel (on the tensor cores) beside torch's flash attention on the same tensors."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    kernel = intentc.load(TENSOR_CORES, f"causal_attention_{dtype}", target="cuda", extents={"D": d},
                          facts={"unit_stride": ["q", "k", "v", "o"]})
    torch_dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    q, k, v = (torch.randn(t, d, device="cuda").to(torch_dtype) for _ in range(3))
    o = torch.empty(t, d, device="cuda", dtype=torch_dtype)
    scale = 1 / math.sqrt(d)

    def flash():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None], is_causal=True,
                                                  scale=scale)
    impls = {"intentc": lambda: kernel(q=q, k=k, v=v, scale=scale, o=o), "torch_flash": flash}
    row = _timed(f"causal attention {dtype} T={t} D={d}", kernel, impls, (q, k, v, o, scale))
    want = _reference(q, k, v, scale)
    row["torch_flash_max_abs_error_vs_f64"] = (flash()[0, 0].double() - want).abs().max().item()
    row["intentc/torch_flash"] = row["torch_flash"]["ms"] / row["intentc"]["ms"]
    print(json.dumps(row), flush=True)
    return row


def causal_rows(t: int, dims: list[int], dtypes: list[str]) -> list[dict]:
    """The causal rows, a dtype and head dim each; a failing row is reported, the others still run."""
    rows = []
    for dtype in dtypes:
        for d in dims:
            try:
                rows.append(causal_row(t, d) if dtype == "f32" else causal_16bit_row(t, d, dtype))
            except Exception as error:
                rows.append({"bench": f"causal attention {dtype} T={t} D={d}",
                             "error": f"{type(error).__name__}: {error}"})
                print(json.dumps(rows[-1]), flush=True)
    return rows


def decode_row(b: int, s: int, h: int, d: int) -> dict:
    kernel = intentc.load(DECODE, "decode_scores", target="cuda", extents={"S": s, "H": h, "D": d},
                          facts={"unit_stride": ["q", "k", "scores"]})
    q = torch.randn(b, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
    scores = torch.empty(b, h, s, device="cuda")
    scale = 1 / math.sqrt(d)
    impls = {"intentc": lambda: kernel(q=q, k=k, scale=scale, scores=scores),
             "torch": lambda: torch.einsum("bhd,bshd->bhs", q, k).float() * scale}
    nbytes = 2 * (b * h * d + b * s * h * d) + 4 * b * h * s
    row = {"bench": f"decode scores bf16 B={b} S={s} H={h} D={d}", "launch": kernel.launch_config.to_json()["plan"]}
    for label, fn in impls.items():
        row[label] = {"ms": _seconds(fn) * 1e3}
        row[label]["GB/s"] = nbytes / row[label]["ms"] * 1e-6
    kernel(q=q, k=k, scale=scale, scores=scores)
    torch.cuda.synchronize()
    want = torch.einsum("bhd,bshd->bhs", q.double(), k.double()) * scale
    row["max_abs_error_vs_f64"] = (scores.double() - want).abs().max().item()
    row["intentc/torch"] = row["torch"]["ms"] / row["intentc"]["ms"]
    print(json.dumps(row), flush=True)
    return row


# plan fields to replace, a plan each: the default first. The CUDA-core (f32) plan: rows and keys a
# thread, resident CTAs, a key group's threads, key groups; the tensor-core plan: row warps, key groups
SWEEP = [{}, {"resident": 2, "groups": 1}, {"keys": 4}, {"rows": 1, "keys": 4}]
MMA_SWEEP = [{}, {"row_warps": 4, "groups": 1}, {"row_warps": 4, "groups": 2}, {"row_warps": 2, "groups": 2}]


def sweep(t: int, d: int, dtype: str = "f32") -> list[dict]:
    """The causal kernel of `dtype` under other flash plans (the same kernel, another plan)."""
    import dataclasses
    from intentc.codegen.nvptx import flash_attention
    from intentc.runtime.cuda import compile_cuda
    chosen = flash_attention.plan_flash
    torch_dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    source, name = (CAUSAL, "causal_attention") if dtype == "f32" else (TENSOR_CORES, f"causal_attention_{dtype}")
    q, k, v = (torch.randn(t, d, device="cuda").to(torch_dtype) for _ in range(3))
    scale = 1 / math.sqrt(d)
    want = _reference(q, k, v, scale)
    rows = []
    for fields in SWEEP if dtype == "f32" else MMA_SWEEP:
        def plan(kernel, known, fields=fields):
            found = chosen(kernel, known)
            return None if found is None else dataclasses.replace(found, **fields)
        flash_attention.plan_flash = plan
        row = {"plan": fields or "default", "dtype": dtype, "size": [t, d]}
        try:
            kernel = compile_cuda(source, name, {"extents": {"D": d}})
            o = torch.empty(t, d, device="cuda", dtype=torch_dtype)
            arrays = {"q": q, "k": k, "v": v, "scale": scale, "o": o}
            row["ms"] = _seconds(lambda kernel=kernel, arrays=arrays: kernel.launch_in_place(arrays)) * 1e3
            torch.cuda.synchronize()
            row["max_abs_error_vs_f64"] = (o.double() - want).abs().max().item()
        except Exception as error:    # a failing plan is reported in its row
            row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        finally:
            flash_attention.plan_flash = chosen
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--dims", default="64,128")
    parser.add_argument("--dtypes", default="f32,f16,bf16", help="the causal rows' operand types")
    parser.add_argument("--decode", default="8,2048,32,128", help="B,S,H,D of the decode row ('' for none)")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--mma-sweep", help="DTYPE:D: time the 16-bit kernel under other tensor-core plans")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    rows = causal_rows(args.seq, list(map(int, args.dims.split(","))), list(filter(None, args.dtypes.split(","))))
    if args.decode:
        try:
            rows.append(decode_row(*map(int, args.decode.split(","))))
        except Exception as error:
            rows.append({"bench": "decode scores", "error": f"{type(error).__name__}: {error}"})
            print(json.dumps(rows[-1]), flush=True)
    if args.sweep:
        rows += sweep(args.seq, int(args.dims.split(",")[-1]))
    if args.mma_sweep:
        dtype, depth = args.mma_sweep.split(":")
        rows += sweep(args.seq, int(depth), dtype)
    if args.out:
        Path(args.out).write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
