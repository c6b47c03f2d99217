"""log|Gamma(x)| in float64 for the oracle, within 2 ULP of the exact value where the
documented bound holds (docs/kir.md §4: everywhere but the negative interval of
cancellation [-23.0001, -2.2637]), vectorized.

Python's `math.lgamma` (a Lanczos sum) is thousands of ULP off near the zeros at 1 and 2
and ~20 ULP off on (0, 8); so, on arrays:
- [0.5, 2.5): the Taylor series at 1 (lgamma(1 + z) = -γz + Σ (-1)^k ζ(k) z^k / k) below
  1.2, at lgamma's minimum up to 1.75, at 2 above (the k-th coefficient is (-1)^k ζ(k, c) / k);
- (0, 0.5): lgamma(x + 1) - log(x), one step of the recurrence onto those series;
- [2.5, 8): lgamma(x - n) + log((x - 1)···(x - n)), n steps down onto [1.5, 2.5);
- [8, inf): `math.lgamma`, within 1.5 ULP there (measured against mpmath);
- x < 0: the reflection log(π / |x sin(πx)|) - lgamma(-x) with an exact sin(πx) argument
  reduction; next to its zeros no float64 evaluation keeps a relative bound.
Special values (§5): +0 at 1 and 2, +inf at poles (0, negative integers) and ±inf, NaN.
"""
from __future__ import annotations

import math

import numpy as np

EULER_GAMMA = 0.5772156649015329
# The float64 next to lgamma's minimum on x > 0, lgamma there, and the digamma function there
# (not 0: the float64 is 1e-16 off the true zero of digamma, which costs 2 ULP if left out).
MINIMUM_AT = 1.4616321449683623
MINIMUM = -0.12148629053584961
SLOPE_AT_MINIMUM = -9.241265521729427e-17
TERMS = 60
TINY = 2.0 ** -60


def _hurwitz_zeta(k: int, a: float, skip_first: bool = False) -> float:
    """ζ(k, a) = Σ_{n>=0} (n + a)^-k for k >= 2 to double precision: 100 terms, then the
    Euler–Maclaurin tail to B8; `skip_first` leaves out n = 0 (ζ(k) - 1 for a = 1)."""
    n = 100
    head = [(m + a) ** -float(k) for m in range(1 if skip_first else 0, n)]
    end = n + a

    def rising(count: int) -> int:
        return math.prod(range(k, k + count))
    tail = [end ** (1.0 - k) / (k - 1), 0.5 * end ** -float(k), rising(1) / 12.0 * end ** (-k - 1.0),
            -rising(3) / 720.0 * end ** (-k - 3.0), rising(5) / 30240.0 * end ** (-k - 5.0),
            -rising(7) / 1209600.0 * end ** (-k - 7.0)]
    return math.fsum(head + tail)


def _taylor(center: float, skip_first: bool = False) -> list[float]:
    """Coefficients of z^2, z^3, ... of lgamma(center + z) (highest power first): the k-th
    derivative of lgamma is (-1)^k (k-1)! ζ(k, center), so the coefficient is
    (-1)^k ζ(k, center) / k; `skip_first` gives the series at center + 1 (ζ(k, center + 1))."""
    return [(-1) ** k * _hurwitz_zeta(k, center, skip_first) / k for k in range(2, TERMS + 2)][::-1]


# Series at 1 (ζ(k, 1) = ζ(k)), at 2 (ζ(k, 2) = ζ(k) - 1) and at the minimum.
_AT_ONE = _taylor(1.0)
_AT_TWO = _taylor(1.0, skip_first=True)
_AT_MINIMUM = _taylor(MINIMUM_AT)


def _series(z: np.ndarray, constant: float, linear: float, coefficients: list[float]) -> np.ndarray:
    """constant + linear·z + z²·(c2 + c3 z + ...), Horner from the highest power."""
    total = np.zeros_like(z)
    for c in coefficients:
        total = total * z + c
    return constant + z * (linear + z * total)


def _near_one_two(x: np.ndarray) -> np.ndarray:
    """lgamma on [0.5, 2.5) from the Taylor series at 1, at the minimum or at 2, whichever
    center is near (on [0.5, 1) every term of the series at 1 has the sign of the result)."""
    result = np.empty_like(x)
    for part, constant, slope, center, coefficients in (
            (x < 1.2, 0.0, -EULER_GAMMA, 1.0, _AT_ONE),
            ((x >= 1.2) & (x < 1.75), MINIMUM, SLOPE_AT_MINIMUM, MINIMUM_AT, _AT_MINIMUM),
            (x >= 1.75, 0.0, 1.0 - EULER_GAMMA, 2.0, _AT_TWO)):
        if part.any():
            result[part] = _series(x[part] - center, constant, slope, coefficients)
    return result


def _positive(x: np.ndarray) -> np.ndarray:
    """lgamma of finite x > 0."""
    result = np.empty_like(x)
    small, middle, large = x < 0.5, (x >= 0.5) & (x < 2.5), x >= 8.0
    down = ~small & ~middle & ~large
    if small.any():     # (0, 0.5): one step up
        result[small] = _near_one_two(x[small] + 1.0) - np.log(x[small])
    if middle.any():
        result[middle] = _near_one_two(x[middle])
    if down.any():      # [2.5, 8): down to [1.5, 2.5), multiplying the factors (at most 6)
        t = x[down]
        product = np.ones_like(t)
        while (t >= 2.5).any():
            step = t >= 2.5
            t = np.where(step, t - 1.0, t)
            product = np.where(step, product * t, product)
        result[down] = _near_one_two(t) + np.log(product)
    if large.any():
        result[large] = _python_lgamma(x[large])
    return result


_python_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _sin_pi_abs(x: np.ndarray) -> np.ndarray:
    """|sin(πx)| with the argument reduced exactly to [-1/2, 1/2]."""
    return np.abs(np.sin(np.pi * (x - np.round(x))))


def lgamma(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    result = np.full(x.shape, np.inf)      # poles (0, negative integers) and ±inf
    with np.errstate(all="ignore"):
        result[np.isnan(x)] = np.nan
        positive = np.isfinite(x) & (x > 0)
        negative = np.isfinite(x) & (x < 0) & (x != np.floor(x)) & (x < -TINY)
        if positive.any():
            result[positive] = _positive(x[positive])
        if negative.any():
            flipped = -x[negative]
            result[negative] = np.log(np.pi / (flipped * _sin_pi_abs(flipped))) - _positive(flipped)
        tiny = (x != 0) & (np.abs(x) < TINY)      # -γx is below half an ULP of -log|x|
        result[tiny] = -np.log(np.abs(x[tiny]))
    result[(x == 1.0) | (x == 2.0)] = 0.0
    return result
