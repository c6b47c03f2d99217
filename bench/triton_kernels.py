"""Triton baselines for the GPU benchmarks (`bench/gpu.py`, `bench/gpu_samples.py`) and for
Triton's side of `bench/compile.py`: each kernel does one ir_samples/ kernel's work the way a
Triton author writes it (one program per row or block, the row length as `BLOCK`)."""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def t_add(x, y, z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def t_softmax(x, y, n, inv_t, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    v = tl.load(x + row * n + cols, mask=m, other=-float("inf")) * inv_t
    v = v - tl.max(v, 0)
    e = tl.exp(v)
    tl.store(y + row * n + cols, e / tl.sum(e, 0), mask=m)


@triton.jit
def t_rowsum(x, y, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    tl.store(y + row, tl.sum(tl.load(x + row * n + cols, mask=cols < n, other=0.0), 0))


@triton.jit
def t_cumsum(x, y, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    tl.store(y + row * n + cols, tl.cumsum(tl.load(x + row * n + cols, mask=m, other=0.0), 0), mask=m)


@triton.jit
def t_hist(v, h, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(v + offs, mask=offs < n, other=-1)
    ok = (offs < n) & (x >= 0) & (x < BINS)
    tl.atomic_add(h + tl.where(ok, x, 0), tl.where(ok, 1, 0), mask=ok)


@triton.jit
def t_dropout(x, y, keep, n, seed, offset, p, scale, BLOCK: tl.constexpr):
    """ir_samples/philox_dropout.kir's work: tl.rand is Philox4x32-10 too."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    idx = row * n + cols
    kept = tl.rand(seed, idx + offset) >= p
    tl.store(y + idx, tl.where(kept, tl.load(x + idx, mask=m) * scale, 0.0), mask=m)
    tl.store(keep + idx, kept.to(tl.uint8), mask=m)


@triton.jit
def t_layernorm(x, gamma, beta, y, mean_out, rstd_out, n, eps, BLOCK: tl.constexpr):
    """ir_samples/layernorm.kir: one program a row, two-pass variance as the sample computes it."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    v = tl.load(x + row * n + cols, mask=m, other=0.0)
    mean = tl.sum(v, 0) / n
    d = tl.where(m, v - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(d * d, 0) / n + eps)
    out = d * rstd * tl.load(gamma + cols, mask=m) + tl.load(beta + cols, mask=m)
    tl.store(y + row * n + cols, out, mask=m)
    tl.store(mean_out + row, mean)
    tl.store(rstd_out + row, rstd)


@triton.jit
def t_matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """ir_samples/tiled_matmul.kir's tiling (64x64 output tiles, K in steps of 32, f32
    accumulator, f16 result) for row-major f16 operands."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_tile = tl.load(a + rows[:, None] * K + (k0 + ks)[None, :],
                         mask=(rows[:, None] < M) & ((k0 + ks)[None, :] < K), other=0.0)
        b_tile = tl.load(b + (k0 + ks)[:, None] * N + cols[None, :],
                         mask=((k0 + ks)[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a_tile, b_tile, acc)
    tl.store(c + rows[:, None] * N + cols[None, :], acc.to(tl.float16), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def _affine_then(d1, v1, d2, v2):
    """Composition of s -> d1 * s + v1 followed by s -> d2 * s + v2 (associative)."""
    return d1 * d2, v1 * d2 + v2


@triton.jit
def t_ema(x, y, n, alpha, BLOCK: tl.constexpr):
    """ir_samples/ema_row_buffer.kir's recurrence s[t] = alpha x[t] + (1 - alpha) s[t-1],
    s[0] = x[0], as a scan of affine maps (the parallel form of a linear recurrence)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    v = tl.load(x + row * n + cols, mask=m, other=0.0)
    decay = tl.where(cols == 0, 0.0, 1.0 - alpha)
    value = tl.where(cols == 0, v, alpha * v)
    _, s = tl.associative_scan((decay, value), 0, _affine_then)
    tl.store(y + row * n + cols, s, mask=m)


@triton.jit
def t_ema_sequential(x, y, m, n, alpha, ROWS: tl.constexpr):
    """The same recurrence in the sample's order, a row per lane of the program: s[t] =
    fma(alpha, x[t], (1 - alpha) s[t-1]) (the FMA the sample's `add {fma = lhs}` takes)."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    live = rows < m
    base = rows.to(tl.int64) * n
    beta = 1.0 - alpha
    s = tl.load(x + base, mask=live & (n > 0), other=0.0)
    tl.store(y + base, s, mask=live & (n > 0))
    for t in range(1, n):
        s = tl.fma(alpha, tl.load(x + base + t, mask=live, other=0.0), beta * s)
        tl.store(y + base + t, s, mask=live)


@triton.jit
def t_murmur(keys, hashes, buckets, n, nbuckets, BLOCK: tl.constexpr):
    """ir_samples/integer_hash_u32.kir @murmur3_bucket: murmur3's 32-bit finalizer."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    h = tl.load(keys + offs, mask=m)
    h ^= h >> 16
    h *= 0x85EBCA6B
    h ^= h >> 13
    h *= 0xC2B2AE35
    h ^= h >> 16
    tl.store(hashes + offs, h, mask=m)
    tl.store(buckets + offs, h % nbuckets.to(tl.uint32), mask=m)


@triton.jit
def t_pcg(x, y, n, BLOCK: tl.constexpr):
    """ir_samples/integer_hash_u32.kir @pcg_hash over the flattened matrix."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    state = tl.load(x + offs, mask=m) * 747796405 + 2891336453
    word = ((state >> ((state >> 28) + 4)) ^ state) * 277803737
    tl.store(y + offs, (word >> 22) ^ word, mask=m)


@triton.jit
def t_stochastic_round(x, y, n, seed, BLOCK: tl.constexpr):
    """ir_samples/stochastic_rounding_bf16.kir: add 16 random low bits, truncate to bf16
    (tl.randint is Philox too; infinities and NaNs pass unchanged)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    noise = tl.randint(seed, offs).to(tl.uint32, bitcast=True) & 0xFFFF
    bits = (v.to(tl.uint32, bitcast=True) + noise) & 0xFFFF0000
    special = (v != v) | (tl.abs(v) == float("inf"))
    chosen = tl.where(special, v, bits.to(tl.float32, bitcast=True))
    tl.store(y + offs, chosen.to(tl.bfloat16), mask=m)
