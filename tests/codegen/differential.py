"""Running one kernel on the host CPU and on the reference interpreter, and comparing."""
from __future__ import annotations

import numpy as np

from intentc.api import run
from intentc.options import CompileOptions
from intentc.runtime.cpu import compile_cpu


# A pipeline without fusion-legality: no FMA fusion (§5.5), so every float op rounds as the
# interpreter rounds it and results compare to the bit.
UNFUSED = CompileOptions(pipeline="canonicalize,cse,dce")


def both(source: str, kernel: str, inputs: dict, constexprs: dict | None = None, options: CompileOptions | None = None):
    """(cpu outputs, interpreter outputs) of one launch on the same inputs."""
    compiled = compile_cpu(source, kernel, {"constexprs": dict(constexprs or {})}, options)
    return compiled(inputs, constexprs), run(source, kernel, inputs, constexprs)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units of the last place between same-dtype float arrays (NaN = NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    magnitude_mask = unsigned.type((1 << (8 * a.dtype.itemsize - 1)) - 1)

    def ordered(x):
        bits = np.ascontiguousarray(x).view(unsigned)
        magnitude = (bits & magnitude_mask).astype(np.int64)
        return np.where(bits > magnitude_mask, -magnitude, magnitude)
    both_nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    oa, ob = ordered(a), ordered(b)
    same_sign = (oa >= 0) == (ob >= 0)
    distance = np.where(same_sign, np.abs(oa - np.where(same_sign, ob, 0)).astype(np.float64),
                        np.abs(oa).astype(np.float64) + np.abs(ob).astype(np.float64))
    return np.where(both_nan, 0, distance)


def assert_same_bits(got, expected, name: str = "") -> None:
    """Equal values, NaN equal to NaN (payload and NaN sign are not observable, §5.2)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
    if got.dtype.kind == "f" or got.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        wide_got, wide_expected = got.astype(np.float64), expected.astype(np.float64)
        nan = np.isnan(wide_got) & np.isnan(wide_expected)
        same = nan | ((wide_got == wide_expected) & (np.signbit(wide_got) == np.signbit(wide_expected)))
        assert same.all(), (name, got[~same][:5], expected[~same][:5])
    else:
        assert np.array_equal(got, expected), (name, got, expected)


def assert_close(got, expected, tolerance: float, name: str = "") -> None:
    got, expected = np.asarray(got).astype(np.float64), np.asarray(expected).astype(np.float64)
    assert got.shape == expected.shape, name
    assert np.allclose(got, expected, rtol=tolerance, atol=tolerance, equal_nan=True), \
        (name, np.nanmax(np.abs(got - expected)))
