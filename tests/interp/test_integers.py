"""§4 integer semantics against Python's exact integers."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import run_op

from intentc.diagnostics import DiagnosticError

SIGNED = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}
UNSIGNED = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


def _wrap(value: int, dtype) -> int:
    info = np.iinfo(dtype)
    bits = info.bits
    value %= 1 << bits
    return value - (1 << bits) if info.min < 0 and value > info.max else value


def _edge_values(dtype):
    info = np.iinfo(dtype)
    low, high = int(info.min), int(info.max)
    candidates = {low, low + 1, -7, -3, -1, 0, 1, 3, 7, high - 1, high}
    return sorted(v for v in candidates if low <= v <= high)


def _pairs(dtype):
    values = _edge_values(dtype)
    pairs = list(itertools.product(values, values))
    lhs = np.array([a for a, _ in pairs], dtype=dtype)
    rhs = np.array([b for _, b in pairs], dtype=dtype)
    return lhs, rhs


@pytest.mark.parametrize("name", list(SIGNED) + list(UNSIGNED))
@pytest.mark.parametrize("op,exact", [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b),
                                      ("mul", lambda a, b: a * b)])
def test_wrapping_arithmetic(name, op, exact):
    dtype = {**SIGNED, **UNSIGNED}[name]
    lhs, rhs = _pairs(dtype)
    got = run_op(op, [lhs, rhs], name)
    expected = [_wrap(exact(int(a), int(b)), dtype) for a, b in zip(lhs, rhs)]
    assert [int(v) for v in got] == expected


@pytest.mark.parametrize("name", list(SIGNED) + list(UNSIGNED))
def test_floordiv_and_mod_follow_floor_or_euclid(name):
    dtype = {**SIGNED, **UNSIGNED}[name]
    lhs, rhs = _pairs(dtype)
    info = np.iinfo(dtype)
    keep = (rhs != 0) & ~((lhs == info.min) & (rhs == dtype(-1 if info.min < 0 else 0)) & (info.min < 0))
    lhs, rhs = lhs[keep], rhs[keep]
    quotient = run_op("floordiv", [lhs, rhs], name)
    remainder = run_op("mod", [lhs, rhs], name)
    for a, b, q, r in zip(lhs.tolist(), rhs.tolist(), quotient.tolist(), remainder.tolist()):
        assert q == a // b and r == a % b      # Python: floor relation, r has b's sign
        assert a == q * b + r
        if info.min == 0:
            assert 0 <= r < b                   # Euclidean for unsigned


def test_known_signed_table():
    lhs = np.array([7, -7, 7, -7, 0, -1], dtype=np.int32)
    rhs = np.array([2, 2, -2, -2, 5, 3], dtype=np.int32)
    assert run_op("floordiv", [lhs, rhs], "i32").tolist() == [3, -4, -4, 3, 0, -1]
    assert run_op("mod", [lhs, rhs], "i32").tolist() == [1, 1, -1, -1, 0, 2]


@pytest.mark.parametrize("name", list(SIGNED) + list(UNSIGNED))
def test_shifts(name):
    dtype = {**SIGNED, **UNSIGNED}[name]
    bits = np.iinfo(dtype).bits
    values = _edge_values(dtype)
    amounts = [0, 1, bits // 2, bits - 1]
    lhs = np.array([v for v in values for _ in amounts], dtype=dtype)
    rhs = np.array([s for _ in values for s in amounts], dtype=dtype)
    left = run_op("shl", [lhs, rhs], name).tolist()
    right = run_op("shr", [lhs, rhs], name).tolist()
    for a, s, shifted_left, shifted_right in zip(lhs.tolist(), rhs.tolist(), left, right):
        assert shifted_left == _wrap(a << s, dtype)
        assert shifted_right == a >> s                      # Python >> is arithmetic; unsigned values are >= 0


def test_neg_and_abs_wrap_at_signed_min():
    x = np.array([-128, -1, 0, 127], dtype=np.int8)
    assert run_op("neg", [x], "i8").tolist() == [-128, 1, 0, -127]
    assert run_op("abs", [x], "i8").tolist() == [-128, 1, 0, 127]


def test_bitwise_ops():
    a = np.array([0b1100, 0xFF], dtype=np.uint8)
    b = np.array([0b1010, 0x0F], dtype=np.uint8)
    assert run_op("and", [a, b], "u8").tolist() == [0b1000, 0x0F]
    assert run_op("or", [a, b], "u8").tolist() == [0b1110, 0xFF]
    assert run_op("xor", [a, b], "u8").tolist() == [0b0110, 0xF0]
    assert run_op("not", [a], "u8").tolist() == [0b11110011, 0]


@pytest.mark.parametrize("op,lhs,rhs,code", [
    ("floordiv", [5, 1], [1, 0], "R0201"),
    ("mod", [5, 1], [0, 1], "R0201"),
    ("floordiv", [-2147483648], [-1], "R0202"),
    ("shl", [1, 1], [1, 32], "R0203"),
    ("shr", [1, 1], [-1, 1], "R0203"),
])
def test_illegal_integer_inputs_are_reported(op, lhs, rhs, code):
    with pytest.raises(DiagnosticError) as info:
        run_op(op, [np.array(lhs, np.int32), np.array(rhs, np.int32)], "i32")
    diagnostic = info.value.diagnostics[0]
    assert diagnostic.code == code
    assert f"`{op}`" in diagnostic.message and "at element [" in diagnostic.message
    assert diagnostic.line == 5      # the op's own line in the generated kernel
