"""The call patterns `bench/launch.py` times beside the vector add: a kernel with a scalar
parameter (saxpy), a staged whole-vector reduction (its stages launched in order), and a
wgmma matmul at a small shape (sm_90a, its operands' tensor maps for the copy engine), each
on the same torch tensors at every call, beside Triton's launch of an equivalent kernel.

`patterns(n)` -> {name: (intentc launch, triton launch, check)}: `check()` asserts both
results after the timed rounds (on the GPU, against torch)."""
from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import intentc  # noqa: E402
from bench.triton_kernels import t_matmul  # noqa: E402

SAXPY = ROOT / "ir_samples" / "saxpy.kir"
MATMUL = ROOT / "ir_samples" / "tiled_matmul.kir"
# A whole-vector sum: a top-level reduction, so a staged program (partials, then combine).
TOTAL = """
kernel @total(%x: view<f32, [%N], in>, %s: view<f32, [], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %t = reduce %v {axes = [0], kind = sum} : f32
  write %s, %t
}
"""
MATMUL_SHAPE = (128, 128, 64)


@triton.jit
def t_saxpy(x, y, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y + offs, a * tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def t_total(x, s, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(s, tl.sum(tl.load(x + offs, mask=offs < n, other=0.0), 0))


def patterns(n: int) -> dict:
    return {"saxpy (a scalar), same tensors": _saxpy(n), "staged sum, same tensors": _total(n),
            f"wgmma matmul {'x'.join(map(str, MATMUL_SHAPE))}, same tensors": _matmul()}


def _saxpy(n: int):
    kernel = intentc.load(SAXPY, "saxpy", target="cuda")
    x = torch.randn(n, device="cuda")
    y1, y2 = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")
    grid = (triton.cdiv(n, 1024),)

    def check():                            # the timed calls add 0 x; now y = 0 + 0.5 x
        kernel(a=0.5, x=x, y=y1)
        t_saxpy[grid](x, y2, 0.5, n, BLOCK=1024)
        kernel.synchronize()
        torch.cuda.synchronize()
        assert torch.equal(y1, 0.5 * x) and torch.equal(y2, 0.5 * x)
    return (lambda: kernel(a=0.0, x=x, y=y1)), (lambda: t_saxpy[grid](x, y2, 0.0, n, BLOCK=1024)), check


def _total(n: int):
    kernel = intentc.load(TOTAL, "total", target="cuda")
    assert kernel.launch_config.stages, "a staged program"
    x = torch.randn(n, device="cuda")
    s1, s2 = torch.zeros((), device="cuda"), torch.zeros((), device="cuda")
    block = triton.next_power_of_2(n)

    def check():
        kernel.synchronize()
        torch.cuda.synchronize()
        want = x.double().sum().float()
        assert torch.allclose(s1, want, rtol=1e-4) and torch.allclose(s2, want, rtol=1e-4), (s1, s2, want)
    return (lambda: kernel(x=x, s=s1)), (lambda: t_total[(1,)](x, s2, n, BLOCK=block)), check


def _matmul():
    m, n, k = MATMUL_SHAPE
    kernel = intentc.load(MATMUL, "matmul_tiled", target="cuda")
    a, b = torch.randn(m, k, device="cuda", dtype=torch.float16), torch.randn(k, n, device="cuda", dtype=torch.float16)
    c1, c2 = torch.empty(m, n, device="cuda", dtype=torch.float16), torch.empty(m, n, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))

    def check():
        kernel.synchronize()
        torch.cuda.synchronize()
        want = (a.float() @ b.float()).half()
        assert kernel.launch_config.mma.get("tma"), "the copy engine's tensor maps (wgmma)"
        assert torch.allclose(c1, want, rtol=1e-2, atol=1e-1) and torch.allclose(c2, want, rtol=1e-2, atol=1e-1)
    return ((lambda: kernel(a=a, b=b, c=c1)), (lambda: t_matmul[grid](a, b, c2, m, n, k, BM=64, BN=64, BK=32)),
            check)
