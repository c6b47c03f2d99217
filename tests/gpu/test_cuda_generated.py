"""On the GPU: generated pointwise programs (the CPU suite's generator) with special values
give the interpreter's bits, and the grid mapping covers every extent exactly once."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from differential import UNFUSED, assert_same_bits
from gpu_differential import load_test_module, on_gpu_and_interp
from gpu_required import requires_gpu
from programs import special_values
from sample_paths import sample_text

generated = load_test_module("tests/codegen/test_cpu_generated.py", "cpu_generated_gpu")


@requires_gpu()
@settings(max_examples=12, deadline=None)
@given(generated.steps, st.sampled_from(["i8", "u16", "i32", "u64"]), st.integers(0, 2 ** 32 - 1))
def test_generated_integer_programs_on_gpu(chain, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = special_values(dtype, rng, 40), special_values(dtype, rng, 40)
    got, expected = on_gpu_and_interp(generated.program(dtype, chain), "k", {"a": a, "b": np.roll(b, 5)})
    assert_same_bits(got["y"], expected["y"])


@requires_gpu()
@settings(max_examples=12, deadline=None)
@given(generated.float_steps, st.sampled_from(["f32", "f64", "bf16", "f16"]), st.integers(0, 2 ** 32 - 1))
def test_generated_float_programs_on_gpu(chain, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = special_values(dtype, rng, 40), special_values(dtype, rng, 40)
    n = min(len(a), len(b))
    got, expected = on_gpu_and_interp(generated.program(dtype, chain), "k", {"a": a[:n], "b": np.roll(b[:n], 3)},
                                      options=UNFUSED)
    assert_same_bits(got["y"], expected["y"])


@requires_gpu()
@pytest.mark.parametrize("n", [0, 1, 7, 1023, 1024, 1025, 300_001, 2_000_003])
def test_vector_add_every_extent(n):
    from intentc.runtime.cuda import compile_cuda
    kernel = compile_cuda(sample_text("vector_add"), "vector_add")
    assert kernel.launch_config.mapping == "cta"
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    assert_same_bits(kernel({"x": x, "y": y})["z"], x + y)


@requires_gpu()
@pytest.mark.parametrize("rows,cols", [(0, 5), (1, 1), (3, 7), (17, 300), (5000, 33)])
def test_softmax_shapes(rows, cols):
    from differential import assert_close
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    got, expected = on_gpu_and_interp(sample_text("row_softmax"), "row_softmax", {"x": x, "t": np.float32(0.5)})
    assert got["y"].shape == (rows, cols)
    assert_close(got["y"], expected["y"], 1e-6)
