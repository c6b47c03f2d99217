"""§5.2 casts: exact rational rounding (fractions.Fraction) and ml_dtypes as references."""
from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from helpers import run_op

from intentc.diagnostics import DiagnosticError

FORMATS = {  # precision, min normal exponent, max finite, numpy type
    "f16": (11, -14, 65504.0, np.float16),
    "bf16": (8, -126, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), ml_dtypes.bfloat16),
    "f32": (24, -126, float(np.finfo(np.float32).max), np.float32),
    "f8e5m2": (3, -14, 57344.0, ml_dtypes.float8_e5m2),
    "f8e4m3fn": (4, -6, 448.0, ml_dtypes.float8_e4m3fn),
}


def exact_round(value: Fraction, dtype: str) -> float:
    """Round-to-nearest-even of an exact rational into a format; overflow gives ±inf."""
    precision, min_exponent, max_finite, _ = FORMATS[dtype]
    if value == 0:
        return 0.0
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, min_exponent) - precision + 1)
    scaled = magnitude / quantum
    floor = scaled.numerator // scaled.denominator
    rest = scaled - floor
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2):
        floor += 1
    rounded = floor * quantum
    result = math.inf if rounded > Fraction(max_finite) else float(rounded)
    return result if value > 0 else -result


def _sample_f64(count=400, seed=1):
    rng = np.random.default_rng(seed)
    mantissas = rng.random(count) + 1.0
    exponents = rng.integers(-30, 20, count)
    values = np.ldexp(mantissas, exponents) * rng.choice([-1.0, 1.0], count)
    specials = [0.0, -0.0, 1.0, 1.5, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 65504.0, 65519.99, 65520.0,
                448.0, 464.0, 463.9, 57344.0, 61439.0, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -12, 1 + 2.0 ** -8]
    return np.concatenate([values, specials, [-v for v in specials]])


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f8e5m2"])
def test_f64_to_float_is_exact_rne(dtype):
    values = _sample_f64()
    got = run_op("cast", [values], dtype).astype(np.float64)
    expected = [exact_round(Fraction(v), dtype) for v in values]
    assert got.tolist() == expected
    assert np.array_equal(np.signbit(got), np.signbit(values))


def test_f64_to_e4m3fn_in_range_is_exact_rne():
    values = _sample_f64()
    values = values[np.abs(values) < 464.0]
    got = run_op("cast", [values], "f8e4m3fn").astype(np.float64)
    assert got.tolist() == [exact_round(Fraction(v), "f8e4m3fn") for v in values]


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f8e5m2", "f8e4m3fn"])
def test_f32_to_narrow_matches_ml_dtypes(dtype):
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2 ** 32, 5000, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    limit = FORMATS[dtype][2]
    values = values[np.isfinite(values) & (np.abs(values) < (limit if dtype == "f8e4m3fn" else 1e30))]
    values = np.concatenate([values, (rng.standard_normal(2000) * 100).astype(np.float32)])
    if dtype == "f8e4m3fn":
        values = values[np.abs(values) < 464]
    got = run_op("cast", [values], dtype)
    reference = values.astype(FORMATS[dtype][3])
    same = (got.view(np.uint8 if got.itemsize == 1 else np.uint16) ==
            reference.view(np.uint8 if got.itemsize == 1 else np.uint16))
    both_nan = np.isnan(got.astype(np.float64)) & np.isnan(reference.astype(np.float64))
    assert (same | both_nan).all()


@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32", "f8e5m2"])
def test_i64_to_float_rounds_once(dtype):
    # midpoints plus or minus tiny amounts, which a double rounding through f64 gets wrong
    base = [2 ** 60 + 2 ** 52 + 1, 2 ** 60 + 2 ** 52 - 1, 2 ** 40 + 2 ** 32 + 1, (1 << 62) + (1 << 54) + 1,
            -(2 ** 60 + 2 ** 52 + 1), 2 ** 62 - 1, -(2 ** 63), 12345678901, 3, 0, -1, 65520, 65519]
    values = np.array(base, dtype=np.int64)
    got = run_op("cast", [values], dtype).astype(np.float64)
    assert got.tolist() == [exact_round(Fraction(int(v)), dtype) for v in values]


def test_u64_to_f32_and_f64():
    values = np.array([2 ** 64 - 1, 2 ** 63 + 2 ** 39 + 1, 2 ** 53 + 1, 7], dtype=np.uint64)
    assert run_op("cast", [values], "f64").tolist() == [float(int(v)) for v in values]
    assert run_op("cast", [values], "f32").astype(np.float64).tolist() == [
        exact_round(Fraction(int(v)), "f32") for v in values]


def test_int_to_int_is_modular():
    values = np.array([-1, 255, 256, -129, 2 ** 40 + 5], dtype=np.int64)
    assert run_op("cast", [values], "u8").tolist() == [255, 255, 0, 127, 5]
    assert run_op("cast", [values], "i8").tolist() == [-1, -1, 0, 127, 5]
    assert run_op("cast", [np.array([255, 128], np.uint8)], "i32").tolist() == [255, 128]
    assert run_op("cast", [np.array([-1, -128], np.int8)], "u16").tolist() == [65535, 65408]


def test_float_to_int_truncates():
    values = np.array([2.9, -2.9, -0.5, 127.99, -128.0], dtype=np.float32)
    assert run_op("cast", [values], "i8").tolist() == [2, -2, 0, 127, -128]
    assert run_op("cast", [np.array([4294967295.0, 0.99])], "u32").tolist() == [4294967295, 0]


@pytest.mark.parametrize("values,dtype", [
    ([1.0, np.nan], "i32"), ([np.inf], "i32"), ([-np.inf], "u8"), ([128.0], "i8"),
    ([-1.0], "u8"), ([9.3e18], "i64"), ([2.0 ** 64], "u64"),
])
def test_illegal_float_to_int(values, dtype):
    with pytest.raises(DiagnosticError) as info:
        run_op("cast", [np.array(values, dtype=np.float64)], dtype)
    assert info.value.diagnostics[0].code == "R0204"


@pytest.mark.parametrize("value", [465.0, 1e6, -500.0, np.inf])
def test_finite_overflow_to_e4m3fn_is_illegal(value):
    with pytest.raises(DiagnosticError) as info:
        run_op("cast", [np.array([1.0, value], dtype=np.float32)], "f8e4m3fn")
    assert info.value.diagnostics[0].code == "R0205"
    assert "at element [1]" in info.value.diagnostics[0].message


def test_overflow_to_ieee_formats_gives_infinity():
    got = run_op("cast", [np.array([1e6, -1e6, 65520.0, 65519.0])], "f16").astype(np.float64)
    assert got.tolist() == [np.inf, -np.inf, np.inf, 65504.0]
    assert run_op("cast", [np.array([1e6])], "f8e5m2").astype(np.float64).tolist() == [np.inf]


def test_saturating_cast():
    floats = np.array([1e6, -1e6, np.inf, -np.inf, np.nan, 3.0], dtype=np.float32)
    e4m3 = run_op("saturating_cast", [floats], "f8e4m3fn").astype(np.float64)
    assert e4m3[:4].tolist() == [448.0, -448.0, 448.0, -448.0] and np.isnan(e4m3[4]) and e4m3[5] == 3.0
    f16 = run_op("saturating_cast", [floats], "f16").astype(np.float64)
    assert f16[:4].tolist() == [65504.0, -65504.0, 65504.0, -65504.0]
    ints = run_op("saturating_cast", [np.array([300.7, -300.0, np.inf, -np.inf, -0.9])], "i8")
    assert ints.tolist() == [127, -128, 127, -128, 0]
    assert run_op("saturating_cast", [np.array([-5, 70000], np.int32)], "u16").tolist() == [0, 65535]
    with pytest.raises(DiagnosticError):
        run_op("saturating_cast", [np.array([np.nan])], "i32")


def test_bitcast_keeps_bits():
    values = np.array([1.0, -0.0, np.inf], dtype=np.float32)
    assert run_op("bitcast", [values], "u32").tolist() == [0x3F800000, 0x80000000, 0x7F800000]
    bf = np.array([0x3F80, 0xC000], dtype=np.uint16)
    assert run_op("bitcast", [bf], "bf16").astype(np.float64).tolist() == [1.0, -2.0]


def test_e2m1_and_e8m0_decoding():
    codes = np.arange(16, dtype=np.uint8)
    expected = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6]
    got = run_op("decode_e2m1", [codes | 0xF0], "f32")
    assert got.tolist() == expected and np.signbit(got[8])
    scales = run_op("decode_e8m0", [np.array([0, 127, 128, 254, 255], np.uint8)], "f32")
    assert scales[:4].tolist() == [2.0 ** -127, 1.0, 2.0, 2.0 ** 127] and np.isnan(scales[4])
