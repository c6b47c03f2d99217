"""On the GPU: what the kernel fuzzer (tools/fuzz_kernels.py --target cuda) found, minimized."""
from __future__ import annotations

import numpy as np
import pytest

from differential import assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from programs import binary_kernel, special_values


@requires_gpu()
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16", "f8e5m2"])
@pytest.mark.parametrize("static", [False, True])
def test_fmod_is_exact_on_the_gpu(dtype, static):
    """LLVM's NVPTX `frem` is a - trunc(a / b) * b with a rounded quotient: fmod(-2, -2) gave +0,
    fmod(x, 0) and fmod(inf, y) no NaN, large quotients a wrong remainder (docs/kir.md §4: exact)."""
    rng = np.random.default_rng(1)
    a, b = special_values(dtype, rng, 96), special_values(dtype, rng, 96)
    n = min(len(a), len(b))
    a = np.concatenate([a[:n], a[:n], b[:n]])
    b = np.concatenate([b[:n], a[:n], np.roll(a[:n], 5)])        # x fmod x: signed zeros, inf, NaN
    extents = {"N": len(a)} if static else None
    got, expected = on_gpu_and_interp(binary_kernel("fmod", dtype), "k", {"a": a, "b": b}, extents=extents)
    assert_same_bits(got["y"], expected["y"])
