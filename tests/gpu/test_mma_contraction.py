"""The MMA mapping on the GPU (docs/gpu.md, "MMA mapping"): tiled contractions on the
tensor cores against the interpreter — tails in M, N and K, K = 0, special values, f16 and
bf16 operands, f32 and f16 accumulators, a transposed B view — for the arch a Hopper launch
picks (sm_90a: wgmma, fed by the copy engine where the views allow tensor maps, else by
cp.async) and for plain sm_90 (mma.sync)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from gpu_required import requires_gpu
from mma_cases import assert_within, error_bound, inputs, plan_fields_under, variant

pytestmark = requires_gpu()

SHAPES = [(128, 128, 64), (96, 136, 40), (100, 130, 70), (1, 1, 1), (5, 7, 0), (257, 263, 300), (33, 300, 17)]
ARCHS = ["sm_90", "sm_90a"]


@functools.cache
def _compiled(text: str, arch: str, plan: tuple = ()):
    """One compile per kernel text, arch and plan fields (`plan_fields_under`) in a test
    process (the shapes share it)."""
    from intentc.runtime.cuda import compile_cuda
    with plan_fields_under(dict(plan)):
        return compile_cuda(text, "matmul_tiled", arch=arch)


def _check(text, m, n, k, operands, acc, out, arch, b_transposed=False, special=False, copy_engine=None, plan=()):
    from intentc.api import run
    values = inputs(operands, m, n, k, b_transposed)
    if special and m * k and k * n:
        values["a"][0, 0] = np.inf
        values["a"][-1, -1] = np.nan
        values["b"][0, 0] = -np.inf if not b_transposed else np.inf
    compiled = _compiled(text, arch, plan)
    assert compiled.launch_config.mapping == "mma", compiled.launch_config.mapping
    got = _launched(compiled, values, copy_engine)
    expected = run(text, "matmul_tiled", values)["c"]
    assert_within(got, expected, error_bound(values["a"], values["b"], acc, out, b_transposed),
                  f"{operands}/{acc}->{out} {m}x{n}x{k} {arch}")


def _launched(compiled, values, copy_engine):
    """C from one launch; `copy_engine` (True / False): the launch must (not) have had tensor
    maps, i.e. run the TMA entry (the cp.async fallback)."""
    from intentc.runtime import cuda
    if copy_engine is None:
        return compiled(values)["c"]
    encoded = []
    original = cuda.encoded_maps

    def recorded(*args):
        encoded.append(original(*args))
        return encoded[-1]
    cuda.encoded_maps = recorded
    try:
        got = compiled(values)["c"]
    finally:
        cuda.encoded_maps = original
    assert len(encoded) == 1 and (encoded[0] is not None) == copy_engine, encoded
    return got


# Shapes whose rows are 16-byte multiples (K and N multiples of 8 for 16-bit operands): the
# copy engine's; tails in M, N and K, K = 0, several K tiles and tiles a persistent CTA.
TMA_SHAPES = [(128, 256, 64), (300, 520, 200), (1, 8, 8), (257, 264, 136), (64, 64, 0), (129, 8, 1000),
              (2048, 2304, 24)]


@pytest.mark.parametrize("m,n,k", TMA_SHAPES)
def test_copy_engine_form(m, n, k):
    _check(variant(), m, n, k, "f16", "f32", "f16", "sm_90a", copy_engine=True)


@pytest.mark.parametrize("operands,acc,out", [("bf16", "f32", "bf16"), ("f16", "f16", "f16"), ("f16", "f32", "f32")])
@pytest.mark.parametrize("m,n,k", [(300, 520, 200), (64, 64, 0)])
def test_copy_engine_dtypes(operands, acc, out, m, n, k):
    _check(variant(operands, acc, out), m, n, k, operands, acc, out, "sm_90a", copy_engine=True)


def test_copy_engine_special_values():
    _check(variant("f16", "f32", "f32"), 64, 64, 64, "f16", "f32", "f32", "sm_90a", special=True, copy_engine=True)


@pytest.mark.parametrize("operands,acc,out", [("f8e4m3fn", "f32", "f32"), ("f8e5m2", "f32", "f16"),
                                              ("f8e4m3fn", "f16", "f16")])
@pytest.mark.parametrize("m,n,k", [(128, 256, 64), (300, 528, 208), (64, 64, 0), (129, 16, 1008)])
def test_8bit_floats_widened_to_f16(operands, acc, out, m, n, k):
    """e4m3 / e5m2 operands copied raw, widened exactly to f16 in shared memory, f16 wgmma
    accumulating in the declared dtype; rows of 16-byte multiples (K, N multiples of 16)."""
    _check(variant(operands, acc, out), m, n, k, operands, acc, out, "sm_90a", copy_engine=True)


@pytest.mark.parametrize("m,n,k", [(128, 128, 128), (300, 272, 208), (64, 64, 0), (129, 16, 1040), (1, 16, 16)])
def test_i8_operands_accumulate_exactly_in_i32(m, n, k):
    """i8 x i8 -> i32 on the s8 wgmma (B transposed to K-major in shared memory): exact."""
    _check(variant("i8", "i32", "i32"), m, n, k, "i8", "i32", "i32", "sm_90a", copy_engine=True)


def test_i8_without_tensor_maps_takes_the_generic_fallback():
    _check(variant("i8", "i32", "i32"), 33, 24, 40, "i8", "i32", "i32", "sm_90a", copy_engine=False)


def test_8bit_float_special_values():
    _check(variant("f8e5m2", "f32", "f32"), 64, 64, 64, "f8e5m2", "f32", "f32", "sm_90a", special=True,
           copy_engine=True)


def test_8bit_floats_without_tensor_maps_take_the_generic_fallback():
    """K = 40 (rows of 40 bytes): no map; the generic mapping's entry, same results."""
    _check(variant("f8e4m3fn", "f32", "f32"), 33, 24, 40, "f8e4m3fn", "f32", "f32", "sm_90a", copy_engine=False)


@pytest.mark.parametrize("m,n,k,transposed", [(100, 130, 70, False), (96, 136, 70, True)])
def test_views_without_tensor_maps_take_the_fallback(m, n, k, transposed):
    """Rows of 140 bytes (K = 70; B also transposed): the cp.async entry, same results."""
    _check(variant(b_transposed=transposed), m, n, k, "f16", "f32", "f16", "sm_90a", b_transposed=transposed,
           copy_engine=False)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,n,k", [(200, 260, 300), (130, 264, 302), (129, 258, 1000)])
def test_8_and_4_byte_copy_pieces(m, n, k, arch):
    """Rows 8- or 4-byte aligned but not 16 (A 600 / 604 / 2000 bytes, B 520 / 528 / 516),
    each operand its own piece size, tails in M, N and K: the cp.async entry's narrower
    pieces from the kept addresses (the bench's 4000x4100x3900 takes the 8-byte ones)."""
    _check(variant(), m, n, k, "f16", "f32", "f16", arch, copy_engine=False if arch == "sm_90a" else None)


@pytest.mark.parametrize("m,n,k", [(96, 136, 40), (300, 520, 200), (2048, 2304, 24)])
def test_transposed_b_view_staged_k_major_by_the_copy_engine(m, n, k):
    """B as an [N, K] view (x @ W^T): boxes of BK x 64 N rows, B K-major for the wgmma."""
    _check(variant(b_transposed=True), m, n, k, "f16", "f32", "f16", "sm_90a", b_transposed=True, copy_engine=True)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_f16_f32_accumulator(m, n, k, arch):
    _check(variant(), m, n, k, "f16", "f32", "f16", arch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,n,k", [(96, 136, 40), (100, 130, 70)])
def test_bf16_operands(m, n, k, arch):
    _check(variant("bf16", "f32", "bf16"), m, n, k, "bf16", "f32", "bf16", arch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,n,k", [(96, 136, 40), (100, 130, 70), (5, 7, 0)])
def test_f16_accumulator(m, n, k, arch):
    _check(variant("f16", "f16", "f16"), m, n, k, "f16", "f16", "f16", arch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("plan", [(), (("block", (128, 128, 16)),), (("instruction", "fma.f32"), ("block", (128, 128, 16)))],
                         ids=["vector", "vector-bk16", "scalar"])
@pytest.mark.parametrize("m,n,k,transposed,special", [
    (128, 128, 64, False, False), (100, 130, 70, False, False), (5, 7, 0, False, False), (1, 1, 1, False, False),
    (257, 263, 300, False, False), (33, 300, 17, False, False), (100, 130, 70, True, False), (64, 64, 64, False, True)])
def test_f32_operands_on_cuda_cores(m, n, k, transposed, special, plan, arch):
    """f32 on the CUDA cores: the default K step whose every shared-memory read is a 16-byte
    vector (`simt_fragments.py`, K steps of 32), the same with K steps of 16, and the scalar K
    step (`simt_matmul.py`) a plan can still pick: tails in M, N and K, K = 0,
    B transposed (copied element by element), infinities and NaN."""
    _check(variant("f32", "f32", "f32", b_transposed=transposed), m, n, k, "f32", "f32", "f32", arch,
           b_transposed=transposed, special=special, plan=plan)


@pytest.mark.parametrize("arch", ARCHS)
def test_f32_output_without_narrowing(arch):
    _check(variant("f16", "f32", "f32"), 130, 70, 90, "f16", "f32", "f32", arch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,n,k", [(96, 136, 40), (100, 130, 70)])
def test_transposed_b_view(m, n, k, arch):
    _check(variant(b_transposed=True), m, n, k, "f16", "f32", "f16", arch, b_transposed=True)


@pytest.mark.parametrize("arch", ARCHS)
def test_special_values(arch):
    _check(variant("f16", "f32", "f32"), 64, 64, 64, "f16", "f32", "f32", arch, special=True)


def test_hopper_launch_picks_wgmma():
    from intentc.runtime.cuda import compile_cuda
    compiled = compile_cuda(variant(), "matmul_tiled")
    assert compiled.launch_config.arch == "sm_90a" and "wgmma.mma_async" in compiled.ptx


@pytest.mark.parametrize("arch", ARCHS)
def test_unaligned_and_strided_views(arch):
    """A starts one element into its allocation (rows not 16-byte aligned) and B takes every
    other row of a larger array: both are staged element by element, with the same result."""
    from intentc.api import run
    from intentc.runtime.cuda import compile_cuda
    m, n, k = 70, 90, 50
    rng = np.random.default_rng(1)
    wide_a = rng.standard_normal((m, k + 1)).astype(np.float16)
    tall_b = rng.standard_normal((2 * k, n)).astype(np.float16)
    values = {"a": wide_a[:, 1:], "b": tall_b[::2]}
    text = variant()
    got = compile_cuda(text, "matmul_tiled", arch=arch)(values)["c"]
    expected = run(text, "matmul_tiled", values)["c"]
    assert_within(got, expected, error_bound(values["a"], values["b"], "f32", "f16"), f"strided {arch}")
