"""Q8_K and Q4_K blocks (docs/kir.md, following llama.cpp's ggml-quants.c reference code).

Each function follows the float32 operation sequence of `quantize_row_q8_K_ref`,
`quantize_row_q4_K_ref` (with `make_qkx2_quants`), `dequantize_row_q*_K` and the scalar
`ggml_vec_dot_q4_K_q8_K`, vectorized across blocks and sub-blocks; loops remain only where
C accumulates sequentially (sums over the 32 members of a sub-block, the block loop of the
dot), so every float32 rounding happens in the same order as the reference.
"""
from __future__ import annotations

import numpy as np

from ..ir import errors
from .errors import InterpError
from .machine import IMPLS

QK_K = 256
Q8_K_BYTES = 4 + QK_K + 2 * (QK_K // 16)           # 292
Q4_K_BYTES = 2 + 2 + 12 + QK_K // 2                 # 144
F32 = np.float32


def nearest_int(x: np.ndarray) -> np.ndarray:
    """ggml's nearest_int: (x + 1.5*2^23) in float32, i.e. round half to even."""
    return np.rint(np.asarray(x, dtype=F32)).astype(np.int32)


def _sequential_sum(terms: np.ndarray) -> np.ndarray:
    """sum over the last axis in float32, left to right, as a C loop does."""
    total = np.zeros(terms.shape[:-1], dtype=F32)
    for l in range(terms.shape[-1]):
        total = (total + terms[..., l]).astype(F32)
    return total


# ---- Q8_K ----------------------------------------------------------------------------------
def quantize_q8_k(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=F32)
    blocks = x.shape[0]
    ax = np.abs(x)
    amax_index = np.argmax(ax, axis=1)                     # first index of the largest |x|
    rows = np.arange(blocks)
    amax = ax[rows, amax_index]
    peak = x[rows, amax_index]
    with np.errstate(all="ignore"):
        iscale = (F32(-127.0) / peak).astype(F32)
        qs = np.minimum(127, nearest_int(iscale[:, None] * x))
        d = (F32(1.0) / iscale).astype(F32)
    empty = ~(amax > 0)
    qs = np.where(empty[:, None], 0, qs).astype(np.int8)
    d = np.where(empty, F32(0), d).astype(F32)
    bsums = qs.astype(np.int32).reshape(blocks, QK_K // 16, 16).sum(axis=2).astype(np.int16)
    out = np.empty((blocks, Q8_K_BYTES), dtype=np.uint8)
    out[:, 0:4] = d.astype("<f4").view(np.uint8).reshape(blocks, 4)
    out[:, 4:4 + QK_K] = qs.view(np.uint8)
    out[:, 4 + QK_K:] = bsums.astype("<i2").view(np.uint8).reshape(blocks, 32)
    return out


def q8_k_fields(q: np.ndarray):
    q = np.ascontiguousarray(q, dtype=np.uint8)
    d = q[:, 0:4].copy().view("<f4")[:, 0].astype(F32)
    qs = q[:, 4:4 + QK_K].copy().view(np.int8)
    bsums = q[:, 4 + QK_K:].copy().view("<i2").astype(np.int16)
    return d, qs, bsums


def dequantize_q8_k(q: np.ndarray) -> np.ndarray:
    d, qs, _ = q8_k_fields(q)
    return (d[:, None] * qs.astype(F32)).astype(F32)


# ---- Q4_K ----------------------------------------------------------------------------------
def make_qkx2_quants(x: np.ndarray, weights: np.ndarray, nmax: int = 15, rmin: float = -1.0,
                     rdelta: float = 0.1, nstep: int = 20):
    """make_qkx2_quants(32, 15, x, weights, L, &min, Laux, -1, 0.1, 20, false) on rows of 32."""
    x = x.astype(F32)
    low = np.minimum.reduce(x, axis=-1)       # C's `if (x[i] < min)` skips NaN; inputs are finite
    high = np.maximum.reduce(x, axis=-1)
    sum_w = _sequential_sum(weights)
    sum_x = _sequential_sum((weights * x).astype(F32))
    low = np.minimum(low, F32(0))
    flat = high == low
    with np.errstate(all="ignore"):
        span = (high - low).astype(F32)
        iscale = (F32(nmax) / span).astype(F32)
        scale = (F32(1) / iscale).astype(F32)
        shifted = (x - low[:, None]).astype(F32)
        levels = np.clip(nearest_int((iscale[:, None] * shifted).astype(F32)), 0, nmax)
        diff = ((scale[:, None] * levels.astype(F32)).astype(F32) + low[:, None]).astype(F32) - x
        best = _sequential_sum((weights * (diff * diff).astype(F32)).astype(F32))
        best_scale, best_min, best_levels = scale, low.copy(), levels
        for step in range(nstep + 1):
            numerator = ((F32(rmin) + F32(F32(rdelta) * F32(step))) + F32(nmax)).astype(F32)
            trial_iscale = (numerator / span).astype(F32)
            trial = np.clip(nearest_int((trial_iscale[:, None] * shifted).astype(F32)), 0, nmax)
            lf = trial.astype(F32)
            wl = (weights * lf).astype(F32)
            sum_l = _sequential_sum(wl)
            sum_l2 = _sequential_sum((wl * lf).astype(F32))
            sum_xl = _sequential_sum((wl * x).astype(F32))
            det = ((sum_w * sum_l2).astype(F32) - (sum_l * sum_l).astype(F32)).astype(F32)
            this_scale = (((sum_w * sum_xl).astype(F32) - (sum_x * sum_l).astype(F32)).astype(F32) / det).astype(F32)
            this_min = (((sum_l2 * sum_x).astype(F32) - (sum_l * sum_xl).astype(F32)).astype(F32) / det).astype(F32)
            positive_min = this_min > 0
            this_scale = np.where(positive_min, (sum_xl / sum_l2).astype(F32), this_scale).astype(F32)
            this_min = np.where(positive_min, F32(0), this_min).astype(F32)
            d2 = ((this_scale[:, None] * lf).astype(F32) + this_min[:, None]).astype(F32) - x
            mad = _sequential_sum((weights * (d2 * d2).astype(F32)).astype(F32))
            better = (det > 0) & (mad < best)
            best = np.where(better, mad, best)
            best_scale = np.where(better, this_scale, best_scale).astype(F32)
            best_min = np.where(better, this_min, best_min).astype(F32)
            best_levels = np.where(better[:, None], trial, best_levels)
    best_scale = np.where(flat, F32(0), best_scale).astype(F32)
    best_min = np.where(flat, low, best_min).astype(F32)
    best_levels = np.where(flat[:, None], 0, best_levels)
    return best_scale, (-best_min).astype(F32), best_levels


def _pack_scales(ls: np.ndarray, lm: np.ndarray) -> np.ndarray:
    """The 12-byte scales field: 8 six-bit scales and 8 six-bit mins (get_scale_min_k4 layout)."""
    packed = np.zeros((ls.shape[0], 12), dtype=np.uint8)
    packed[:, 0:4] = ls[:, 0:4]
    packed[:, 4:8] = lm[:, 0:4]
    packed[:, 8:12] = (ls[:, 4:8] & 0xF) | ((lm[:, 4:8] & 0xF) << 4)
    packed[:, 0:4] |= (ls[:, 4:8] >> 4) << 6
    packed[:, 4:8] |= (lm[:, 4:8] >> 4) << 6
    return packed


def scale_min_k4(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """get_scale_min_k4 for j = 0..7: (sc, m), each [blocks, 8] uint8."""
    q = scales.astype(np.uint8)
    sc = np.empty((q.shape[0], 8), dtype=np.uint8)
    m = np.empty((q.shape[0], 8), dtype=np.uint8)
    sc[:, :4] = q[:, 0:4] & 63
    m[:, :4] = q[:, 4:8] & 63
    sc[:, 4:] = (q[:, 8:12] & 0xF) | ((q[:, 0:4] >> 6) << 4)
    m[:, 4:] = (q[:, 8:12] >> 4) | ((q[:, 4:8] >> 6) << 4)
    return sc, m


def quantize_q4_k(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=F32)
    blocks = x.shape[0]
    sub = x.reshape(blocks * 8, 32)
    with np.errstate(all="ignore"):
        sum_x2 = _sequential_sum((sub * sub).astype(F32))
        av_x = np.sqrt((sum_x2 / F32(32)).astype(F32)).astype(F32)
        weights = (av_x[:, None] + np.abs(sub)).astype(F32)
        scales, mins, first_levels = make_qkx2_quants(sub, weights)
    scales, mins = scales.reshape(blocks, 8), mins.reshape(blocks, 8)
    max_scale = np.maximum.reduce(np.maximum(scales, 0), axis=1, initial=F32(0)).astype(F32)
    max_min = np.maximum.reduce(np.maximum(mins, 0), axis=1, initial=F32(0)).astype(F32)
    with np.errstate(all="ignore"):
        inv_scale = np.where(max_scale > 0, (F32(63) / max_scale).astype(F32), F32(0)).astype(F32)
        inv_min = np.where(max_min > 0, (F32(63) / max_min).astype(F32), F32(0)).astype(F32)
        ls = np.minimum(63, nearest_int((inv_scale[:, None] * scales).astype(F32)).astype(np.uint8))
        lm = np.minimum(63, nearest_int((inv_min[:, None] * mins).astype(F32)).astype(np.uint8))
    packed = _pack_scales(ls.astype(np.uint8), lm.astype(np.uint8))
    d16 = (max_scale / F32(63)).astype(F32).astype(np.float16)
    dmin16 = (max_min / F32(63)).astype(F32).astype(np.float16)
    sc, m = scale_min_k4(packed)
    with np.errstate(all="ignore"):
        d = (d16.astype(F32)[:, None] * sc.astype(F32)).astype(F32)
        dm = (dmin16.astype(F32)[:, None] * m.astype(F32)).astype(F32)
        values = x.reshape(blocks, 8, 32)
        levels = nearest_int(((values + dm[:, :, None]).astype(F32) / d[:, :, None]).astype(F32))
    # `if (!d) continue;` keeps the levels make_qkx2_quants chose for that sub-block
    kept = first_levels.reshape(blocks, 8, 32)
    levels = np.where((d == 0)[:, :, None], kept, np.clip(levels, 0, 15)).astype(np.uint8)
    levels = levels.reshape(blocks, 4, 2, 32)
    qs = (levels[:, :, 0, :] | (levels[:, :, 1, :] << 4)).reshape(blocks, 128)
    out = np.empty((blocks, Q4_K_BYTES), dtype=np.uint8)
    out[:, 0:2] = d16.astype("<f2").view(np.uint8).reshape(blocks, 2)
    out[:, 2:4] = dmin16.astype("<f2").view(np.uint8).reshape(blocks, 2)
    out[:, 4:16] = packed
    out[:, 16:] = qs
    return out


def q4_k_fields(q: np.ndarray):
    q = np.ascontiguousarray(q, dtype=np.uint8)
    d = q[:, 0:2].copy().view("<f2")[:, 0].astype(F32)
    dmin = q[:, 2:4].copy().view("<f2")[:, 0].astype(F32)
    sc, m = scale_min_k4(q[:, 4:16])
    qs = q[:, 16:].reshape(-1, 4, 32)
    nibbles = np.stack([qs & 0xF, qs >> 4], axis=2).reshape(-1, 8, 32)   # sub-block j = 2*chunk + half
    return d, dmin, sc, m, nibbles


def dequantize_q4_k(q: np.ndarray) -> np.ndarray:
    d, dmin, sc, m, nibbles = q4_k_fields(q)
    scale = (d[:, None] * sc.astype(F32)).astype(F32)
    offset = (dmin[:, None] * m.astype(F32)).astype(F32)
    values = ((scale[:, :, None] * nibbles.astype(F32)).astype(F32) - offset[:, :, None]).astype(F32)
    return values.reshape(-1, QK_K)


def quantized_dot_q4_k_q8_k(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    if lhs.shape[0] != rhs.shape[0]:
        raise InterpError(errors.SHAPE_MISMATCH, f"{lhs.shape[0]} Q4_K blocks against {rhs.shape[0]} Q8_K blocks")
    d4, dmin4, sc, m, nibbles = q4_k_fields(lhs)
    d8, qs8, bsums = q8_k_fields(rhs)
    blocks = lhs.shape[0]
    products = nibbles.astype(np.int32) * qs8.reshape(blocks, 8, 32).astype(np.int32)
    # aux32[l] += scale_j * (q8 * a) over the 32 members of sub-block j with member % 8 == l
    lanes = products.reshape(blocks, 8, 4, 8).sum(axis=2)
    aux32 = (sc.astype(np.int32)[:, :, None] * lanes).sum(axis=1)
    sumi = (bsums.astype(np.int32).reshape(blocks, 8, 2).sum(axis=2) * m.astype(np.int32)).sum(axis=1)
    d = (d4 * d8).astype(F32)
    dmin = (dmin4 * d8).astype(F32)
    lane_terms = (d[:, None] * aux32.astype(F32)).astype(F32)
    min_terms = (dmin * sumi.astype(F32)).astype(F32)
    sums = np.zeros(8, dtype=F32)
    sumf = F32(0)
    for block in range(blocks):
        sums = (sums + lane_terms[block]).astype(F32)
        sumf = F32(sumf - min_terms[block])
    for lane in range(8):
        sumf = F32(sumf + sums[lane])
    return np.asarray(sumf, dtype=F32)


QUANTIZE = {"q8_k": quantize_q8_k, "q4_k": quantize_q4_k}
DEQUANTIZE = {"q8_k": dequantize_q8_k, "q4_k": dequantize_q4_k}


@IMPLS.register("quantize")
def _quantize_op(machine, op):
    (x,) = machine.operands(op)
    return QUANTIZE[op.attributes["format"].name](np.asarray(x))


@IMPLS.register("dequantize")
def _dequantize_op(machine, op):
    (q,) = machine.operands(op)
    return DEQUANTIZE[op.attributes["format"].name](np.asarray(q))


@IMPLS.register("quantized_dot")
def _quantized_dot_op(machine, op):
    lhs, rhs = machine.operands(op)
    return quantized_dot_q4_k_q8_k(np.asarray(lhs), np.asarray(rhs))
