"""Every ir_samples/ kernel on the host CPU against the reference interpreter, with the
interpreter suite's input builders and fresh random inputs; bit-identical where the spec
fixes the bits, within the sample's tolerance elsewhere. Kernels whose ops are not lowered
yet must fail with the E0080 diagnostic naming the op, never a crash."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from differential import assert_close, assert_same_bits, both
from intentc.diagnostics import DiagnosticError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("interp_sample_cases", ROOT / "tests" / "interp" / "test_samples.py")
interp_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(interp_cases)
CASES = interp_cases.CASES

# Kernels whose outputs the spec fixes to the bit: integers, casts, bit manipulation,
# Philox, histogram, copies, max/min, IEEE ops in a fixed order. (saxpy and newton_rsqrt
# may fuse multiply-adds into FMAs, §5.5, so they compare within tolerance.)
BIT_EXACT = {
    "atomic_counter", "atomic_float_max_cas", "cummax", "cumsum:exclusive_offsets", "cumsum:row_cumsum",
    "embedding_assume_in_bounds", "f8_rowwise_quant", "float_sign_bitcast", "floordiv_mod_i32",
    "histogram_masked", "integer_hash_u32", "interleave_unique_store", "nan_max_vs_maximum_num",
    "philox_dropout", "reverse_copy_negative_stride", "row_argmax", "row_max", "row_sum:row_sum_i8",
    "stochastic_rounding_bf16", "vector_add",
}
NOT_YET_LOWERED = {
    "mxfp4_scaled_matmul": "scaled_contract", "q4k_q8k_matvec": "quantized_dot", "quantize_q8_k": "quantize",
    "sparse_1of2_matmul": "sparse_contract", "sparse_2of4_matmul": "sparse_contract",
}


def _bit_exact(sample: str, kernel: str) -> bool:
    return sample in BIT_EXACT or f"{sample}:{kernel}" in BIT_EXACT


@pytest.mark.parametrize("sample,kernel,make,reference,tolerance", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
@pytest.mark.parametrize("seed", [11, 12])
def test_sample_on_cpu_matches_interpreter(sample, kernel, make, reference, tolerance, seed):
    source = (interp_cases.SAMPLES / f"{sample}.kir").read_text()
    inputs, constexprs = make(np.random.default_rng(seed))
    if sample in NOT_YET_LOWERED:
        with pytest.raises(DiagnosticError) as error:
            both(source, kernel, inputs, constexprs)
        (diagnostic,) = error.value.diagnostics
        assert diagnostic.code == "E0080" and "not yet lowered to LLVM" in diagnostic.message
        assert f"`{NOT_YET_LOWERED[sample]}`" in diagnostic.message or sample == "quantize_q8_k"
        return
    got, expected = both(source, kernel, inputs, constexprs)
    assert set(got) == set(expected)
    for name in expected:
        if _bit_exact(sample, kernel) or np.asarray(expected[name]).dtype.kind in "iub":
            assert_same_bits(got[name], expected[name], name)
        else:
            assert_close(got[name], expected[name], max(tolerance, 1e-6), name)
