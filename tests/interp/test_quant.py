"""Q4_K / Q8_K records and sparse metadata checks."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.interp.errors import InterpError
from intentc.interp.structured import selected_positions
from intentc.interp.quant import dequantize_q4_k, quantize_q4_k, quantize_q8_k, quantized_dot_q4_k_q8_k
from intentc.interp.values import RecordValue


def test_q4_k_round_trip_error_is_small():
    x = np.random.default_rng(0).standard_normal((3, 256)).astype(np.float32)
    q = quantize_q4_k(x)
    assert q.shape == (3, 144) and q.dtype == np.uint8
    back = dequantize_q4_k(q)
    assert np.abs(back - x).max() < 0.2 * np.abs(x).max()     # 4-bit levels of 32-value sub-blocks


def test_q4_k_zero_block():
    q = quantize_q4_k(np.zeros((1, 256), np.float32))
    assert not dequantize_q4_k(q).any()


def test_q8_k_all_zero_block_has_zero_scale():
    q = quantize_q8_k(np.zeros((1, 256), np.float32))
    assert not q.any()


def test_quantized_dot_matches_dequantized_dot():
    rng = np.random.default_rng(1)
    w = quantize_q4_k(rng.standard_normal((4, 256)).astype(np.float32))
    x = quantize_q8_k(rng.standard_normal((4, 256)).astype(np.float32))
    from intentc.interp.quant import dequantize_q8_k
    exact = (dequantize_q4_k(w).astype(np.float64) * dequantize_q8_k(x)).sum()
    assert np.isclose(float(quantized_dot_q4_k_q8_k(w, x)), exact, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("pattern,metadata", [
    ("one_of_two", np.array([[0, 2]])),
    ("two_of_four", RecordValue((("first", np.array([[1]])), ("second", np.array([[1]]))))),
    ("two_of_four", RecordValue((("first", np.array([[2]])), ("second", np.array([[4]]))))),
])
def test_invalid_sparse_metadata_is_reported(pattern, metadata):
    values = np.ones((1, 2), np.float32)
    with pytest.raises(InterpError) as info:
        selected_positions(values, metadata, pattern, 4)
    assert info.value.code == "R0401"
