"""Variants of `ir_samples/tiled_matmul.kir` for the MMA mapping's tests: operand and
accumulator dtypes, output dtype, a transposed B view; and the error bound the comparison
with the interpreter uses."""
from __future__ import annotations

import contextlib

import numpy as np

from sample_paths import sample_text

BASE = sample_text("tiled_matmul")


def variant(operands: str = "f16", acc: str = "f32", out: str = "f16", b_transposed: bool = False) -> str:
    """The sample with other dtypes; `b_transposed`: B is a [N, K] view read as B^T tiles."""
    text = BASE.replace("view<f16, [%M, %K], in>", f"view<{operands}, [%M, %K], in>")
    text = text.replace("view<f16, [%K, %N], in>", f"view<{operands}, [%K, %N], in>")
    text = text.replace("view<f16, [%M, %N], out>", f"view<{out}, [%M, %N], out>")
    text = text.replace("%zero_h = constant {value = 0.0} : f16", f"%zero_h = constant {{value = 0.0}} : {operands}")
    text = text.replace("tensor<f16, [64, 32]>", f"tensor<{operands}, [64, 32]>")
    text = text.replace("tensor<f16, [32, 64]>", f"tensor<{operands}, [32, 64]>")
    text = text.replace("tensor<f32, [64, 64]>", f"tensor<{acc}, [64, 64]>").replace("acc = f32", f"acc = {acc}")
    text = text.replace("%out = cast %acc : tensor<f16, [64, 64]>", f"%out = cast %acc : tensor<{out}, [64, 64]>")
    if b_transposed:
        text = text.replace(f"%b: view<{operands}, [%K, %N], in>", f"%b: view<{operands}, [%N, %K], in>")
        text = text.replace("read %b index(%kb, %cols)", "read %b index(%cols, %kb)")
    return text


def inputs(dtype: str, m: int, n: int, k: int, b_transposed: bool = False, seed: int = 0) -> dict:
    import ml_dtypes
    rng = np.random.default_rng(seed)
    if dtype == "i8":       # the whole range, -128 included
        return {"a": rng.integers(-128, 128, (m, k), dtype=np.int8),
                "b": rng.integers(-128, 128, (n, k) if b_transposed else (k, n), dtype=np.int8)}
    numpy_dtype = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32,
                   "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}[dtype]
    a = rng.standard_normal((m, k)).astype(numpy_dtype)
    b = rng.standard_normal((n, k) if b_transposed else (k, n)).astype(numpy_dtype)
    return {"a": a, "b": b}


def error_bound(a, b, acc: str, out: str, b_transposed: bool = False) -> np.ndarray:
    """|got - interpreter| allowed per element: the accumulation's reordering (the tensor
    cores sum in another order; f32: K·2^-22, f16: K·2^-9 of sum |a||b|) plus a rounding of
    the output format on either side; none for an integer accumulator (exact)."""
    a64, b64 = np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64))
    magnitude = a64 @ (b64.T if b_transposed else b64)
    if acc == "i32":
        return np.zeros_like(magnitude)
    k = a.shape[1]
    reorder = k * (2.0 ** -22 if acc == "f32" else 2.0 ** -9) * magnitude
    unit = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}[out]
    return reorder + 2 * unit * magnitude


def assert_within(got, expected, bound, name: str) -> None:
    got64, expected64 = np.asarray(got).astype(np.float64), np.asarray(expected).astype(np.float64)
    assert got64.shape == expected64.shape, name
    same_special = np.isnan(got64) == np.isnan(expected64)
    assert same_special.all(), (name, "NaN positions differ")
    finite = np.isfinite(expected64)
    assert (got64[~finite & ~np.isnan(expected64)] == expected64[~finite & ~np.isnan(expected64)]).all(), \
        (name, "infinities differ")
    error = np.abs(got64[finite] - expected64[finite])
    assert (error <= bound[finite]).all(), (name, float(np.max(error - bound[finite])))


@contextlib.contextmanager
def plan_fields_under(fields: dict):
    """While inside: the MMA mapping's plan has `fields` set (say the f32 plan option
    `instruction="fma.f32.v4"`, or another block; the plan is data, so a test or a benchmark
    can pick it). Compile without the kernel cache inside: its key does not see the change."""
    import dataclasses

    from intentc.codegen.nvptx import mapping, tile_matmul
    chosen = tile_matmul.plan_mma

    def planned(kernel, arch):
        found = chosen(kernel, arch)
        return dataclasses.replace(found, **fields) if found is not None and fields else found
    mapping.plan_mma = planned
    try:
        yield
    finally:
        mapping.plan_mma = chosen


@contextlib.contextmanager
def tma_plan_under(plan: dict):
    """While inside: the sm_90a MMA mapping plans the TMA form with `wgmma_tma.tma_plan`'s
    keywords `plan` (other ring depths, widenings, ...; the plan is data, so a test or a
    benchmark can pick it)."""
    from intentc.codegen.nvptx import mapping, tile_matmul, wgmma_tma
    chosen = tile_matmul.plan_mma

    def planned(kernel, arch):
        found = chosen(kernel, arch)
        return wgmma_tma.tma_plan(kernel, found.contraction, found.fallback, **plan)
    mapping.plan_mma = planned
    try:
        yield
    finally:
        mapping.plan_mma = chosen
