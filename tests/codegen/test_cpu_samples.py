"""Every ir_samples/ kernel on the host CPU against the reference interpreter, with the
interpreter suite's input builders and fresh random inputs; bit-identical where the spec
fixes the bits, within the sample's tolerance elsewhere. Every sample runs on the CPU."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from differential import assert_close, assert_same_bits, both

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("interp_sample_cases", ROOT / "tests" / "interp" / "test_samples.py")
interp_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(interp_cases)
CASES = interp_cases.CASES

# Kernels whose outputs the spec fixes to the bit: integers, casts, bit manipulation,
# Philox, histogram, copies, max/min, IEEE ops in a fixed order, the Q8_K / Q4_K codecs and
# quantized_dot (llama.cpp's f32 sequence). (saxpy and newton_rsqrt
# may fuse multiply-adds into FMAs, §5.5, so they compare within tolerance.)
BIT_EXACT = {
    "atomic_counter", "atomic_float_max_cas", "cummax", "cumsum:exclusive_offsets", "cumsum:row_cumsum",
    "embedding_assume_in_bounds", "f8_rowwise_quant", "float_sign_bitcast", "floordiv_mod_i32",
    "histogram_masked", "integer_hash_u32", "interleave_unique_store", "nan_max_vs_maximum_num",
    "philox_dropout", "q4k_q8k_matvec", "quantize_q8_k", "reverse_copy_negative_stride", "row_argmax", "row_max", "row_sum:row_sum_i8",
    "stochastic_rounding_bf16", "vector_add",
}


def _bit_exact(sample: str, kernel: str) -> bool:
    return sample in BIT_EXACT or f"{sample}:{kernel}" in BIT_EXACT


@pytest.fixture(autouse=True)
def threads_on(monkeypatch):
    """Top-level parallels run in chunks on the pool, more threads than this machine has cores."""
    monkeypatch.setenv("INTENTC_CPU_THREADS", "4")


@pytest.mark.parametrize("sample,kernel,make,reference,tolerance", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
@pytest.mark.parametrize("seed", [11, 12])
def test_sample_on_cpu_matches_interpreter(sample, kernel, make, reference, tolerance, seed):
    source = (interp_cases.SAMPLES / f"{sample}.kir").read_text()
    inputs, constexprs = make(np.random.default_rng(seed))
    got, expected = both(source, kernel, inputs, constexprs)
    assert set(got) == set(expected)
    for name in expected:
        if _bit_exact(sample, kernel) or np.asarray(expected[name]).dtype.kind in "iub":
            assert_same_bits(got[name], expected[name], name)
        else:
            assert_close(got[name], expected[name], max(tolerance, 1e-6), name)
