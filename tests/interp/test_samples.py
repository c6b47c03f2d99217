"""Every ir_samples/ kernel runs on random inputs and matches an independent numpy formulation.

Each entry: sample file, kernel, a function making the inputs (and constexprs) from a
numpy Generator, and a numpy reference of what the sample computes. Float results compare
with tolerances (the interpreter sums in a different order than numpy); integer and exact
results compare exactly.
"""
from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from intentc.api import run

SAMPLES = Path(__file__).resolve().parents[2] / "ir_samples"
F32, BF16 = np.float32, ml_dtypes.bfloat16
erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)
lgamma = np.vectorize(math.lgamma)


def normal(rng, *shape, dtype=F32):
    return rng.standard_normal(shape).astype(dtype)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---- references ---------------------------------------------------------------------------------
def ref_bias_act(i):
    z = i["x"].astype(np.float64) + i["bias"]
    return {"y": {"relu": np.maximum(z, 0), "silu": z / (1 + np.exp(-z)),
                  "gelu": 0.5 * z * (1 + erf(z / math.sqrt(2)))}[i["_act"]]}


def ref_layernorm(i):
    x = i["x"].astype(np.float64)
    mean = x.mean(1)
    rstd = 1 / np.sqrt(x.var(1) + float(i["eps"]))
    return {"y": (x - mean[:, None]) * rstd[:, None] * i["gamma"] + i["beta"], "mean_out": mean, "rstd_out": rstd}


def ref_q8_k(x):
    """quantize_row_q8_K_ref, independent: d = max/-127 of the signed max-|x| element."""
    blocks = x.reshape(-1, 256)
    peak = blocks[np.arange(len(blocks)), np.abs(blocks).argmax(1)]
    iscale = (F32(-127) / peak).astype(F32)
    qs = np.minimum(127, np.rint((iscale[:, None] * blocks).astype(F32))).astype(np.int8)
    out = np.zeros((len(blocks), 292), np.uint8)
    out[:, :4] = (F32(1) / iscale).astype("<f4").reshape(-1, 1).view(np.uint8)
    out[:, 4:260] = qs.view(np.uint8)
    out[:, 260:] = qs.reshape(-1, 16, 16).astype(np.int16).sum(2).astype("<i2").view(np.uint8)
    return out


def decode_q4_k(q):
    """Q4_K record → f32 values, straight from the layout table in docs/kir.md."""
    q = q.reshape(-1, 144)
    d = q[:, 0:2].copy().view("<f2").astype(np.float64)
    dmin = q[:, 2:4].copy().view("<f2").astype(np.float64)
    s = q[:, 4:16].astype(np.int64)
    scale = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)], 1)
    mins = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], 1)
    nib = q[:, 16:].reshape(-1, 4, 32)
    levels = np.stack([nib & 15, nib >> 4], 2).reshape(-1, 8, 32).astype(np.float64)
    return (d * scale)[:, :, None] * levels - (dmin * mins)[:, :, None]


def decode_q8_k(q):
    q = q.reshape(-1, 292)
    d = q[:, :4].copy().view("<f4").astype(np.float64)
    return d * q[:, 4:260].view(np.int8).astype(np.float64)


def random_q4_k(rng, count):
    q = rng.integers(0, 256, (count, 144)).astype(np.uint8)
    q[:, 0:2] = np.float16(0.01).reshape(1).view(np.uint8)
    q[:, 2:4] = np.float16(0.002).reshape(1).view(np.uint8)
    return q


def ref_pcg(i):
    x = i["x"].astype(np.uint64)
    m = np.uint64(0xFFFFFFFF)
    state = (x * np.uint64(747796405) + np.uint64(2891336453)) & m
    word = (((state >> ((state >> np.uint64(28)) + np.uint64(4))) ^ state) * np.uint64(277803737)) & m
    return {"y": ((word >> np.uint64(22)) ^ word).astype(np.uint32)}


def ref_murmur(i):
    h = i["keys"].astype(np.uint64)
    m = np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & m
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & m
    h ^= h >> np.uint64(16)
    return {"hash": h.astype(np.uint32), "bucket": (h % np.uint64(i["nbuckets"])).astype(np.uint32)}


def ref_philox_dropout(i):
    from intentc.interp.rng import uniform      # the §12 bits are checked against Random123 elsewhere
    m, n = i["x"].shape
    counters = int(i["offset"]) + np.arange(m * n).reshape(m, n)
    keep = uniform(i["seed"], counters.astype(np.uint64)) >= i["p"]
    return {"y": np.where(keep, i["x"] / (1 - i["p"]), 0), "keep_out": keep.astype(np.uint8)}


def ref_welford(i):
    return {"mean_out": i["x"].astype(np.float64).mean(1), "var_out": i["x"].astype(np.float64).var(1)}


def ref_attention(i):
    q, k, v = (i[n].astype(np.float64) for n in "qkv")
    s = (q @ k.T) * float(i["scale"])
    s[np.triu_indices(len(s), 1)] = -np.inf
    return {"o": softmax(s) @ v}


def ref_prefix_lse(i):
    x = i["x"].astype(np.float64)
    y = np.logaddexp.accumulate(x, axis=1)
    return {"y": y, "lse": y[:, -1]}


def ref_stats(i):
    x = i["x"].astype(np.float64)
    fin = np.isfinite(x)
    return {"mins": np.where(fin, x, np.inf).min(1), "maxs": np.where(fin, x, -np.inf).max(1),
            "means": np.where(fin, x, 0).sum(1) / fin.sum(1), "counts": fin.sum(1)}


def ref_sparse12(i):
    m, kh = i["a"].shape
    dense = np.zeros((m, kh, 2))
    dense[np.arange(m)[:, None], np.arange(kh)[None], i["meta"].astype(int)] = i["a"]
    return {"c": dense.reshape(m, 2 * kh) @ i["b"].astype(np.float64)}


def ref_sparse24(i):
    m, kh = i["a"].shape
    meta = i["meta"].astype(int)
    dense = np.zeros((m, kh // 2, 4))
    vals = i["a"].astype(np.float64).reshape(m, kh // 2, 2)
    rows, groups = np.arange(m)[:, None], np.arange(kh // 2)[None]
    dense[rows, groups, meta & 3] = vals[:, :, 0]
    dense[rows, groups, (meta >> 2) & 3] = vals[:, :, 1]
    return {"c": dense.reshape(m, 2 * kh) @ i["b"].astype(np.float64)}


def valid_24_meta(rng, shape):
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    choice = rng.integers(0, len(pairs), shape)
    return np.array([a | (b << 2) for a, b in pairs], np.uint8)[choice]


E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def ref_mxfp4(i):
    def unpack(carrier, axis):
        pair = np.stack([E2M1[carrier & 15], E2M1[carrier >> 4]], axis + 1)
        shape = list(carrier.shape)
        shape[axis] *= 2
        return pair.reshape(shape)
    a = unpack(i["a"], 2) * np.exp2(i["a_scale"].astype(np.float64) - 127)[:, :, None]
    b = unpack(i["b"], 1) * np.exp2(i["b_scale"].T.astype(np.float64) - 127)[:, None, :]
    m, g, k = a.shape
    return {"c": a.reshape(m, g * k) @ b.reshape(g * k, -1)}


def ref_segment_sum(i):
    out = np.zeros_like(i["out"], dtype=np.float64)
    counts = np.zeros(len(i["counts"]), np.int64)
    for n, s in enumerate(i["seg"]):
        if 0 <= s < len(counts):
            out[s] += i["x"][n]
            counts[s] += 1
    return {"out": out, "counts": counts}


def ref_kaiser(i):
    length = i["x"].shape[1]
    n = np.arange(length)
    beta = float(i["beta"])
    w = np.i0(beta * np.sqrt(1 - (2 * n / (length - 1) - 1) ** 2)) / np.i0(beta)
    return {"y": i["x"] * w}


def ref_rope(i):
    x = i["x"].astype(np.float64)
    even, odd = x[..., 0::2], x[..., 1::2]
    c, s = i["cos"][:, None, :], i["sin"][:, None, :]
    y = np.stack([even * c - odd * s, even * s + odd * c], -1).reshape(x.shape)
    return {"y": y.astype(np.float32).astype(BF16)}


def ref_special(i):
    x, k, lam, h = (i[n].astype(np.float64) for n in ("x", "k", "lambda", "h"))
    return {"softplus": np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))), "normal_sf": 0.5 * erfc(x / math.sqrt(2)),
            "poisson_nll": lam - k * np.log(lam) + lgamma(k + 1), "angle": 2 * np.arcsin(np.sqrt(h))}


def ref_fast_act(i):
    x = i["x"].astype(np.float64)
    return {"silu": x / (1 + np.exp(-x)),
            "gelu": 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))}


def ref_stochastic(i):
    y = i["_out_y"].astype(np.float64)
    x = i["x"].astype(np.float64)
    down = i["x"].view(np.uint32) & np.uint32(0xFFFF0000)
    lower = down.view(np.float32).astype(np.float64)
    upper = (down + np.uint32(0x10000)).view(np.float32).astype(np.float64)
    ok = (y == lower) | (y == upper)
    assert ok.all() and np.abs(y - x).max() < np.abs(x).max() * 2 ** -7
    return {}


def ref_newton(i):
    x = i["x"]
    y = (np.uint32(0x5F3759DF) - (x.view(np.uint32) >> np.uint32(1))).view(np.float32)
    for _ in range(i["_ITERS"]):
        y = y * (F32(1.5) - F32(0.5) * x * y * y)
    return {"y": 1 / np.sqrt(x.astype(np.float64))}


# sample, kernel, make(rng) -> (inputs, constexprs), reference(inputs) -> expected, tolerance
CASES = [
    ("activation_enum", "bias_act", lambda r, act="silu": ({"x": normal(r, 5, 33), "bias": normal(r, 33)},
                                                            {"act": act}), ref_bias_act, 1e-5),
    ("atomic_counter", "count_above", lambda r: ({"x": normal(r, 3000), "threshold": F32(0.3),
                                                  "counter": np.zeros(1, np.uint32)}, {}),
     lambda i: {"counter": [(i["x"] > 0.3).sum()]}, 0),
    ("atomic_float_max_cas", "atomic_max_f32", lambda r: ({"x": normal(r, 3000),
                                                           "slot": np.array([0xFF800000], np.uint32)}, {}),
     lambda i: {"slot": [i["x"].max().view(np.uint32)]}, 0),
    ("attention_region_fold", "causal_attention", lambda r: ({"q": normal(r, 9, 8), "k": normal(r, 9, 8),
                                                              "v": normal(r, 9, 8), "scale": F32(0.35)}, {}),
     ref_attention, 1e-5),
    # 16-bit operands: the weights and the output round to f16 (bf16), a few units of 2^-11 (2^-8)
    ("attention_tensor_cores", "causal_attention_f16",
     lambda r: ({n: normal(r, 9, 8, dtype=np.float16) for n in "qkv"} | {"scale": F32(0.35)}, {}), ref_attention,
     4e-3),
    ("attention_tensor_cores", "causal_attention_bf16",
     lambda r: ({n: normal(r, 9, 8, dtype=BF16) for n in "qkv"} | {"scale": F32(0.35)}, {}), ref_attention, 3e-2),
    ("cummax", "row_cummax", lambda r: ({"x": normal(r, 4, 17)}, {}),
     lambda i: {"prefix": np.maximum.accumulate(i["x"], 1),
                "suffix": np.maximum.accumulate(i["x"][:, ::-1], 1)[:, ::-1]}, 0),
    ("cumsum", "row_cumsum", lambda r: ({"x": normal(r, 4, 50)}, {}),
     lambda i: {"y": np.cumsum(i["x"].astype(np.float64), 1)}, 1e-5),
    ("cumsum", "exclusive_offsets", lambda r: ({"counts": r.integers(0, 60000, 100).astype(np.uint16)}, {}),
     lambda i: {"offsets": np.concatenate([[0], np.cumsum(i["counts"].astype(np.uint64))[:-1]])}, 0),
    ("decode_attention_scores_contract", "decode_scores",
     lambda r: ({"q": normal(r, 2, 3, 8, dtype=BF16), "k": normal(r, 2, 5, 3, 8, dtype=BF16), "scale": F32(0.5)}, {}),
     lambda i: {"scores": 0.5 * np.einsum("bhd,bshd->bhs", i["q"].astype(np.float64), i["k"].astype(np.float64))},
     1e-5),
    ("dot_f16_f32acc", "batched_dot_f16", lambda r: ({"x": normal(r, 3, 40, dtype=np.float16),
                                                      "y": normal(r, 3, 40, dtype=np.float16)}, {}),
     lambda i: {"out": (i["x"].astype(np.float64) * i["y"]).sum(1),
                "out_h": (i["x"].astype(np.float64) * i["y"]).sum(1).astype(F32).astype(np.float16)}, 1e-3),
    ("ema_row_buffer", "ema_rows", lambda r: ({"x": normal(r, 3, 20), "alpha": F32(0.25)}, {}),
     lambda i: {"y": np.array([[row[:t + 1] @ (0.25 * 0.75 ** np.arange(t, -1, -1)) + row[0] * (0.75 ** (t + 1) if t
                                else 0.75) for t in range(len(row))] for row in i["x"].astype(np.float64)])}, 1e-5),
    ("embedding_assume_in_bounds", "embedding_lookup",
     lambda r: ({"ids": r.integers(0, 10, 7).astype(np.int32), "table": normal(r, 10, 6, dtype=np.float16)}, {}),
     lambda i: {"out": i["table"][i["ids"]]}, 0),
    ("f8_rowwise_quant", "quantize_e4m3_rowwise", lambda r: ({"x": normal(r, 4, 16)}, {}),
     lambda i: {"scale": np.abs(i["x"]).max(1) / F32(448),
                "q": np.clip(i["x"] / (np.abs(i["x"]).max(1, keepdims=True) / F32(448)), -448, 448)
                .astype(ml_dtypes.float8_e4m3fn)}, 0.07),
    ("f8_rowwise_quant", "dequantize_e4m3_rowwise",
     lambda r: ({"q": normal(r, 3, 8, dtype=ml_dtypes.float8_e4m3fn), "scale": normal(r, 3)}, {}),
     lambda i: {"x": i["q"].astype(F32) * i["scale"][:, None]}, 0),
    ("f8_rowwise_quant", "quantize_e5m2_rowwise", lambda r: ({"g": normal(r, 4, 16)}, {}),
     lambda i: {"scale": np.abs(i["g"]).max(1) / F32(57344),
                "q": (i["g"] / (np.abs(i["g"]).max(1, keepdims=True) / F32(57344))).astype(ml_dtypes.float8_e5m2)},
     0.13),
    ("flag_publish_acquire_release", "window2_block_sums",
     lambda r: ({"x": normal(r, 5, 256), "partial": np.zeros(5, F32), "flag": np.zeros(5, np.uint32)}, {}),
     lambda i: {"out": i["x"].astype(np.float64).sum(1) + np.r_[0, i["x"].astype(np.float64).sum(1)[:-1]],
                "flag": np.ones(5)}, 1e-5),
    ("fast_activations_approx", "fast_silu_gelu", lambda r: ({"x": normal(r, 100) * 4}, {}), ref_fast_act, 1e-3),
    ("float_sign_bitcast", "sign_ops", lambda r: ({"mag": normal(r, 20), "sgn": normal(r, 20)}, {}),
     lambda i: {"copysign": np.copysign(i["mag"], i["sgn"]), "negated": -i["mag"],
                "signbit": np.signbit(i["mag"]).astype(np.uint8)}, 0),
    ("floordiv_mod_i32", "periodic_wrap", lambda r: ({"pos": r.integers(-50, 50, (6, 3)).astype(np.int32),
                                                      "period": np.int32(7)}, {}),
     lambda i: {"cell": i["pos"] // 7, "wrapped": i["pos"] % 7}, 0),
    ("gelu_helper_call", "gelu_fwd", lambda r: ({"x": normal(r, 1500)}, {}),
     lambda i: {"y": 0.5 * i["x"] * (1 + erf(i["x"] / math.sqrt(2))),
                "dydx": 0.5 * (1 + erf(i["x"] / math.sqrt(2))) + i["x"] * np.exp(-i["x"] ** 2 / 2) / math.sqrt(2 * math.pi)},
     1e-5),
    ("histogram_masked", "histogram256", lambda r: ({"values": r.integers(-5, 300, 5000).astype(np.int32),
                                                     "hist": np.zeros(256, np.int32)}, {}),
     lambda i: {"hist": np.bincount(i["values"][(i["values"] >= 0) & (i["values"] < 256)], minlength=256)}, 0),
    ("integer_hash_u32", "murmur3_bucket", lambda r: ({"keys": r.integers(0, 2 ** 32, 50).astype(np.uint32),
                                                       "nbuckets": np.uint32(13)}, {}), ref_murmur, 0),
    ("integer_hash_u32", "pcg_hash", lambda r: ({"x": r.integers(0, 2 ** 32, (3, 5)).astype(np.uint32)}, {}),
     ref_pcg, 0),
    ("interleave_unique_store", "interleave", lambda r: ({"a": normal(r, 300), "b": normal(r, 300),
                                                          "out": np.zeros(600, F32)}, {}),
     lambda i: {"out": np.stack([i["a"], i["b"]], 1).reshape(-1)}, 0),
    ("kaiser_window_i0", "kaiser_frames", lambda r: ({"x": normal(r, 3, 16), "beta": F32(8.6)}, {}), ref_kaiser, 1e-5),
    ("layernorm", "layernorm", lambda r: ({"x": normal(r, 4, 64), "gamma": normal(r, 64), "beta": normal(r, 64),
                                           "eps": F32(1e-5)}, {}), ref_layernorm, 1e-4),
    ("mxfp4_scaled_matmul", "mxfp4_matmul",
     lambda r: ({"a": r.integers(0, 256, (40, 2, 16)).astype(np.uint8),
                 "a_scale": r.integers(120, 134, (40, 2)).astype(np.uint8),
                 "b": r.integers(0, 256, (2, 16, 33)).astype(np.uint8),
                 "b_scale": r.integers(120, 134, (33, 2)).astype(np.uint8)}, {}), ref_mxfp4,
     1e-5),   # the f32 accumulator sums K = 64 products of magnitude up to ~1e5: a few ULPs from the f64 reference
    ("nan_max_vs_maximum_num", "nan_max",
     lambda r: ({"x": np.where(r.random((4, 9)) < 0.15, np.nan, normal(r, 4, 9)).astype(F32)}, {}),
     lambda i: {"relu_prop": np.maximum(i["x"], 0), "relu_num": np.fmax(i["x"], 0), "row_max": np.max(i["x"], 1),
                "row_nanmax": np.fmax.reduce(i["x"], 1)}, 0),
    ("newton_rsqrt_constexpr", "newton_rsqrt",
     lambda r: ({"x": r.uniform(0.01, 100, 50).astype(F32)}, {"ITERS": 3}), ref_newton, 1e-6),
    ("philox_dropout", "dropout", lambda r: ({"x": normal(r, 4, 30), "seed": np.uint64(1234), "offset": 77,
                                              "p": F32(0.3)}, {}), ref_philox_dropout, 1e-6),
    ("prefix_logsumexp_region_scan", "prefix_logsumexp",
     lambda r: ({"x": np.where(r.random((3, 40)) < 0.1, -np.inf, normal(r, 3, 40) * 3).astype(F32)}, {}),
     ref_prefix_lse, 1e-5),
    ("q4k_q8k_matvec", "q4k_q8k_matvec",
     lambda r: ({"w": random_q4_k(r, 6).reshape(3, 2, 144), "x": ref_q8_k(normal(r, 512))}, {}),
     lambda i: {"y": (decode_q4_k(i["w"]).reshape(3, -1) * decode_q8_k(i["x"]).reshape(1, -1)).sum(1)}, 1e-5),
    ("quantize_q8_k", "quantize_q8_k", lambda r: ({"x": normal(r, 2, 3, 256)}, {}),
     lambda i: {"q": ref_q8_k(i["x"]).reshape(2, 3, 292)}, 0),
    ("quantize_q8_k", "dequantize_q4_k", lambda r: ({"q": random_q4_k(r, 4).reshape(2, 2, 144)}, {}),
     lambda i: {"x": decode_q4_k(i["q"]).reshape(2, 2, 256)}, 1e-6),
    ("rank1_update_outer", "rank1_update", lambda r: ({"a": normal(r, 70, 65), "u": normal(r, 70), "v": normal(r, 65),
                                                       "alpha": F32(0.5)}, {}),
     lambda i: {"a": i["a"] + 0.5 * np.outer(i["u"], i["v"])}, 1e-6),
    ("reverse_copy_negative_stride", "flip_rows", lambda r: ({"x": normal(r, 4, 9)[:, ::-1]}, {}),
     lambda i: {"y": i["x"]}, 0),
    ("rope_join_reshape", "rope_interleaved",
     lambda r: ({"x": normal(r, 2, 3, 128, dtype=BF16), "cos": normal(r, 2, 64), "sin": normal(r, 2, 64)}, {}),
     ref_rope, 1e-2),
    ("row_argmax", "row_argmax", lambda r: ({"logits": np.round(normal(r, 5, 40) * 2).astype(F32)}, {}),
     lambda i: {"best": i["logits"].max(1), "token": i["logits"].argmax(1)}, 0),
    ("row_max", "row_max", lambda r: ({"x": normal(r, 3, 20, dtype=BF16)}, {}),
     lambda i: {"y": i["x"].astype(F32).max(1).astype(BF16), "y32": i["x"].astype(F32).max(1)}, 0),
    ("row_softmax", "row_softmax", lambda r: ({"x": normal(r, 8, 100), "t": F32(0.7)}, {}),
     lambda i: {"y": softmax(i["x"].astype(np.float64) / F32(0.7))}, 1e-5),
    ("row_sum", "row_sum_f16", lambda r: ({"x": normal(r, 3, 300, dtype=np.float16)}, {}),
     lambda i: {"y": i["x"].astype(np.float64).sum(1)}, 1e-4),
    ("row_sum", "row_sum_i8", lambda r: ({"q": r.integers(-128, 128, (3, 300)).astype(np.int8)}, {}),
     lambda i: {"y": i["q"].astype(np.int64).sum(1)}, 0),
    ("saxpy", "saxpy", lambda r: ({"a": F32(2.5), "x": normal(r, 1500), "y": normal(r, 1500)}, {}),
     lambda i: {"y": 2.5 * i["x"].astype(np.float64) + i["y"]}, 1e-6),
    ("segment_sum_scatter_reduce", "segment_sum",
     lambda r: ({"x": normal(r, 150, 4), "seg": r.integers(-1, 5, 150).astype(np.int32),
                 "out": np.zeros((5, 4), F32), "counts": np.zeros(5, np.int32)}, {}), ref_segment_sum, 1e-5),
    ("sparse_1of2_matmul", "sparse12_matmul",
     lambda r: ({"a": normal(r, 20, 40), "meta": r.integers(0, 2, (20, 40)).astype(np.uint8), "b": normal(r, 80, 35)},
                {}), ref_sparse12, 1e-5),
    ("sparse_2of4_matmul", "sparse24_matmul",
     lambda r: ({"a": normal(r, 20, 40, dtype=np.float16), "meta": valid_24_meta(r, (20, 20)),
                 "b": normal(r, 80, 35, dtype=np.float16)}, {}), ref_sparse24, 1e-3),
    ("special_math", "special_math",
     lambda r: ({"x": normal(r, 50) * 5, "k": r.integers(0, 20, 50).astype(F32), "lambda": r.uniform(0.5, 9, 50)
                 .astype(F32), "h": r.uniform(0, 1, 50).astype(F32)}, {}), ref_special, 1e-5),
    ("stochastic_rounding_bf16", "stochastic_round_bf16", lambda r: ({"x": normal(r, 200), "seed": np.uint64(9)}, {}),
     ref_stochastic, 0),
    ("tiled_matmul", "matmul_tiled", lambda r: ({"a": normal(r, 70, 50, dtype=np.float16),
                                                 "b": normal(r, 50, 66, dtype=np.float16)}, {}),
     lambda i: {"c": (i["a"].astype(np.float64) @ i["b"].astype(np.float64)).astype(np.float16)}, 2e-3),
    ("tuple_record_stats", "row_stats",
     lambda r: ({"x": np.where(r.random((3, 300)) < 0.1, np.inf, normal(r, 3, 300)).astype(F32)}, {}), ref_stats, 1e-5),
    ("vector_add", "vector_add", lambda r: ({"x": normal(r, 2500), "y": normal(r, 2500)}, {}),
     lambda i: {"z": i["x"] + i["y"]}, 0),
    ("welford_generic_reduce", "welford_rows", lambda r: ({"x": normal(r, 4, 33) + 100}, {}), ref_welford, 1e-4),
]


def _compare(name, got, expected, tolerance):
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, name
    if tolerance == 0:
        assert np.array_equal(got.astype(np.float64), expected.astype(np.float64), equal_nan=True), name
    else:
        assert np.allclose(got.astype(np.float64), expected.astype(np.float64), rtol=tolerance, atol=tolerance,
                           equal_nan=True), (name, np.nanmax(np.abs(got.astype(np.float64) - expected)))


@pytest.mark.parametrize("sample,kernel,make,reference,tolerance", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_sample_matches_numpy(sample, kernel, make, reference, tolerance, seed):
    rng = np.random.default_rng(seed)
    inputs, constexprs = make(rng)
    outputs = run((SAMPLES / f"{sample}.kir").read_text(), kernel, inputs, constexprs, seed=seed)
    context = {**inputs, **{f"_{k}": v for k, v in constexprs.items()}, **{f"_out_{k}": v for k, v in outputs.items()}}
    expected = reference(context)
    for name, value in expected.items():
        _compare(name, outputs[name], value, tolerance)
    assert expected or sample == "stochastic_rounding_bf16"


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_activation_enum_other_members(act):
    inputs, constexprs = CASES[0][2](np.random.default_rng(3), act)
    out = run((SAMPLES / "activation_enum.kir").read_text(), "bias_act", inputs, constexprs)
    _compare("y", out["y"], ref_bias_act({**inputs, "_act": act})["y"], 1e-5)


def test_every_sample_kernel_has_a_case():
    import re
    kernels = {(path.stem, name) for path in SAMPLES.glob("*.kir")
               for name in re.findall(r"^kernel @(\w+)", path.read_text(), re.M)}
    covered = {(c[0], c[1]) for c in CASES}
    missing = kernels - covered
    assert not missing, f"samples without a numpy reference: {sorted(missing)}"
