"""Hypothesis-generated pointwise programs (chains of integer and float ops over two
inputs) give the interpreter's bits on the CPU."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from differential import UNFUSED, assert_same_bits, both

INT_OPS = ["add", "sub", "mul", "and", "or", "xor", "maximum", "minimum"]
FLOAT_OPS = ["add", "sub", "mul", "div", "maximum", "minimum_num"]


def program(dtype: str, steps: list[tuple[str, int, int]]) -> str:
    lines = [f"kernel @k(%a: view<{dtype}, [%N], in>, %b: view<{dtype}, [%N], in>, %y: view<{dtype}, [%N], out>) {{",
             "  %i = iota : tensor<index, [%N]>",
             f"  %v0 = read %a index(%i) : tensor<{dtype}, [%N]>",
             f"  %v1 = read %b index(%i) : tensor<{dtype}, [%N]>"]
    for n, (op, lhs, rhs) in enumerate(steps, start=2):
        lines.append(f"  %v{n} = {op} %v{lhs % n}, %v{rhs % n} : tensor<{dtype}, [%N]>")
    lines += [f"  write %y, %v{len(steps) + 1} index(%i)", "}"]
    return "\n".join(lines)


steps = st.lists(st.tuples(st.sampled_from(INT_OPS), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=6)


@settings(max_examples=15, deadline=None)
@given(steps, st.sampled_from(["i8", "u16", "i32", "u64"]), st.integers(0, 2 ** 32 - 1))
def test_generated_integer_programs(chain, dtype, seed):
    rng = np.random.default_rng(seed)
    numpy_type = {"i8": np.int8, "u16": np.uint16, "i32": np.int32, "u64": np.uint64}[dtype]
    info = np.iinfo(numpy_type)
    a, b = (rng.integers(info.min, info.max, 17, dtype=numpy_type, endpoint=True) for _ in range(2))
    got, expected = both(program(dtype, chain), "k", {"a": a, "b": b})
    assert_same_bits(got["y"], expected["y"])


float_steps = st.lists(st.tuples(st.sampled_from(FLOAT_OPS), st.integers(0, 50), st.integers(0, 50)),
                       min_size=1, max_size=6)


@settings(max_examples=15, deadline=None)
@given(float_steps, st.sampled_from(["f32", "f64", "bf16", "f16"]), st.integers(0, 2 ** 32 - 1))
def test_generated_float_programs(chain, dtype, seed):
    from intentc.interp.values import np_dtype
    rng = np.random.default_rng(seed)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 3.0])
    a, b = (np.concatenate([specials, rng.standard_normal(10) * 100]).astype(np_dtype(dtype)) for _ in range(2))
    got, expected = both(program(dtype, chain), "k", {"a": a, "b": np.roll(b, 3)}, options=UNFUSED)
    assert_same_bits(got["y"], expected["y"])
