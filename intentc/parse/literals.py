"""Numeric literal text → value, with the range every KIR dtype shares (spec §3).

A literal is instantiated in the dtype where it is used, when its value is representable
there (the verifier checks that, E202). No KIR dtype holds a magnitude of 2**1024 or more
(f64's finite range ends just below it), so a literal that large is rejected while parsing:
that keeps `1e400` from silently becoming `inf` and keeps huge digit strings away from
Python's int conversion limits.
"""
from __future__ import annotations

import math

MAGNITUDE_LIMIT = 2 ** 1024
# More significant digits than this and the magnitude is past the limit (2**1024 has 309
# decimal digits and 257 hex digits), so such text is rejected without converting it.
_MAX_DIGITS = {10: 309, 16: 257}


def int_value(text: str) -> int | None:
    """The value of an INT token (`-`? then decimal digits or `0x` hex), None when out of range.

    Leading zeros are allowed and mean nothing (`007` is 7), as in the shape grammar."""
    body = text[1:] if text.startswith("-") else text
    base = 16 if body[:2] in ("0x", "0X") else 10
    digits = (body[2:] if base == 16 else body).lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS[base]:
        return None
    value = int(digits, base)
    if value >= MAGNITUDE_LIMIT:
        return None
    return -value if text.startswith("-") else value


def float_value(text: str) -> float | None:
    """The value of a FLOAT token rounded to f64, None when it rounds past f64's range."""
    value = float(text)
    return value if math.isfinite(value) else None


def out_of_range_message(text: str) -> str:
    shown = text if len(text) <= 24 else f"{text[:10]}…{text[-6:]} ({len(text)} characters)"
    return f"literal `{shown}` is out of the range of every dtype (spec §3)"


OUT_OF_RANGE_HINT = "a literal must be representable where it is used; magnitudes reach at most f64's ~1.8e308"
