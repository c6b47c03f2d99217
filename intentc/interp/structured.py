"""Structured contractions (spec §7): microscaling (scaled) and structured-sparse contract.

Both sum like `contract` (contraction.py), in the accumulator dtype. Scaled elements are
decoded times their scale exactly in float64 and converted into the accumulator; a sparse
operand is never densified (§7): each compressed value meets only the rhs row its metadata
selects, so an inf or NaN at an unselected position changes nothing.
"""
from __future__ import annotations

import numpy as np

from ..ir import errors
from .contraction import contract
from .conversion import decode_e2m1, decode_e8m0
from .errors import InterpError, check
from .machine import IMPLS
from .values import np_dtype


# ---- scaled contract (§7) ----------------------------------------------------------------------
def _decode_elements(carrier: np.ndarray, fmt: str, axis: int) -> np.ndarray:
    """Decode a u8 carrier along `axis`: e2m1 yields two elements per byte (low nibble first)."""
    if fmt == "e4m3":
        return carrier.view(np_dtype("f8e4m3fn")).astype(np.float64)
    low = decode_e2m1(carrier & 0xF).astype(np.float64)
    high = decode_e2m1(carrier >> 4).astype(np.float64)
    pair = np.stack([low, high], axis=axis + 1)
    shape = list(carrier.shape)
    shape[axis] *= 2
    return pair.reshape(shape)


def scaled_contract(lhs, lhs_scale, rhs, rhs_scale, fmt: str, group_size: int, acc: str):
    per_carrier = 2 if fmt == "e2m1" else 1
    _, groups, carriers = lhs.shape
    if carriers * per_carrier != group_size or rhs.shape[0] != groups or rhs.shape[1] != carriers:
        raise InterpError(errors.SHAPE_MISMATCH,
                          f"scaled_contract shapes lhs {list(lhs.shape)}, rhs {list(rhs.shape)} do not fit "
                          f"group_size {group_size} of {fmt}")
    a = _decode_elements(lhs, fmt, axis=2) * decode_e8m0(lhs_scale).astype(np.float64)[:, :, None]
    b = _decode_elements(rhs, fmt, axis=1) * decode_e8m0(rhs_scale).astype(np.float64).T[:, None, :]
    return contract(a, b, acc, [1, 2], [0, 1])


@IMPLS.register("scaled_contract")
def _scaled_contract_op(machine, op):
    lhs, lhs_scale, rhs, rhs_scale = (np.asarray(v) for v in machine.operands(op))
    attrs = op.attributes
    return scaled_contract(lhs, lhs_scale, rhs, rhs_scale, attrs["format"].name, attrs["group_size"],
                           attrs["acc"].dtype)


# ---- sparse contract (§7) ----------------------------------------------------------------------
def selected_positions(values: np.ndarray, metadata, pattern: str, k: int) -> np.ndarray:
    """The logical K coordinate of every compressed value ([M, K/r]); invalid metadata is illegal."""
    group, kept = (2, 1) if pattern == "one_of_two" else (4, 2)
    m = values.shape[0]
    if k % group or values.shape[1] * group != k * kept:
        raise InterpError(errors.SPARSE_METADATA,
                          f"{pattern}: K = {k} and compressed extent {values.shape[1]} do not match groups of {group}")
    if pattern == "one_of_two":
        positions = [np.asarray(metadata).astype(np.int64)]
        check((positions[0] < 0) | (positions[0] > 1), errors.SPARSE_METADATA,
              "one_of_two metadata outside {0, 1}")
    else:
        first, second = (np.asarray(metadata.get(f)).astype(np.int64) for f in ("first", "second"))
        check(~((first >= 0) & (first < second) & (second < 4)), errors.SPARSE_METADATA,
              "two_of_four metadata must satisfy 0 <= first < second < 4")
        positions = [first, second]
    group_start = np.arange(k // group, dtype=np.int64)[None, :, None] * group
    within = np.stack([np.broadcast_to(p, (m, k // group)) for p in positions], axis=-1)
    return (group_start + within).reshape(m, -1)


def sparse_contract(values: np.ndarray, metadata, rhs: np.ndarray, pattern: str, acc: str) -> np.ndarray:
    positions = selected_positions(values, metadata, pattern, rhs.shape[0])
    selected_rhs = rhs[positions]        # [M, K/r, N]: the rhs row each compressed value meets
    return contract(values, selected_rhs, acc, [1], [1], [0], [0])


@IMPLS.register("sparse_contract")
def _sparse_contract_op(machine, op):
    lhs, metadata, rhs = machine.operands(op)
    return sparse_contract(np.asarray(lhs), metadata, np.asarray(rhs), op.attributes["pattern"].name,
                           op.attributes["acc"].dtype)
