"""One spec per ir_samples/ kernel for `bench/gpu_samples.py`: the full sizes (≥ 64 MiB of
traffic where the kernel allows; contractions at 4096-size GEMM shapes), which extent
shrinks when a launch is too slow, the extents fixed at compile time (Triton's BLOCK), and
a builder that makes inputs on a device and returns the kernel's arguments, the bytes
(read + written once each) and flops, the closest torch / Triton equivalents on the same
data, and a check of intentc's outputs.

Contractions (matmul, contract, dot, scaled, sparse, quantized dot) also get
`torch_matmul`: a dense torch matmul of the same logical shape on operands prepared
beforehand, the TFLOP/s reference. Sparse flops count the dense-equivalent 2·M·N·K.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Callable

try:                      # the table stays importable without torch (tests, listings)
    import torch
    import torch.nn.functional as F
except ImportError:       # pragma: no cover - the GPU machine and dry runs have torch
    torch = F = None

F32_BYTES = 4


@dataclass
class StridedView:
    """A view with an explicit element offset and strides (any sign) into a tensor; on the
    GPU it binds as an array with those strides (`__cuda_array_interface__`)."""
    base: object
    offset: int
    strides: tuple
    shape: tuple

    @property
    def __cuda_array_interface__(self) -> dict:
        itemsize = self.base.element_size()
        return {"shape": tuple(self.shape), "typestr": self.base.__cuda_array_interface__["typestr"],
                "data": (self.base.data_ptr() + self.offset * itemsize, False), "version": 3,
                "strides": tuple(stride * itemsize for stride in self.strides)}


@dataclass
class Case:
    values: dict                               # kernel parameter -> tensor, StridedView or scalar
    bytes: int
    baselines: dict                            # name -> zero-argument launch of an equivalent
    check: Callable[[], object]                # True, or what differs (after one intentc launch)
    flops: int = 0
    reset: Callable[[], None] | None = None    # restores inout state before the checked launch
    # baselines that compute a different (e.g. cheaper) function, with how it differs: timed and
    # shown, but the bar's ratio is against the closest equivalent computing the same function
    differs: dict = field(default_factory=dict)
    # baseline -> a check, after one launch of each, that its outputs equal intentc's bit for bit
    same_bits: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Spec:
    sample: str
    kernel: str
    dims: dict                   # full sizes: the kernel's extents and the builder's parameters
    scaled: str                  # the dim reduced when a launch would be too slow
    builder: Callable[[dict, str], Case]
    static: tuple = ()           # extents fixed at compile time
    small: dict = field(default_factory=dict)   # --no-gpu sizes (the interpreter is slow)
    smallest: int = 4            # the fewest `scaled` to probe (and the --no-gpu default)
    work_exponent: int = 1       # launch time grows as scaled ** this
    contraction: bool = False
    constexprs: dict = field(default_factory=dict)
    strided: tuple = ()          # views bound with a non-unit innermost stride

    def specialization(self, views, dims: dict, dynamic: bool = False) -> dict:
        """What the Triton kernels know too: the non-scaled extents fixed (Triton's BLOCK),
        unit innermost stride and row-major density of the views bound densely, and their
        16-byte alignment (Triton's pointer divisibility; `intentc.load` infers it at the call)."""
        dense = tuple(v for v in views if v not in self.strided)
        return {"extents": {} if dynamic else {name: dims[name] for name in self.static},
                "constexprs": dict(self.constexprs), "unit_stride": dense, "contiguous": dense, "aligned16": dense}

    @property
    def id(self) -> str:
        return f"{self.sample}:{self.kernel}"

    def sized(self, scaled: int, dry_run: bool = False) -> dict:
        dims = {**self.dims, **self.small} if dry_run else dict(self.dims)
        dims[self.scaled] = scaled
        return dims

    def build(self, dims: dict, device: str) -> Case:
        torch.manual_seed(0)
        with torch.device(device):
            return self.builder(dims, device)

    def label(self, dims: dict) -> str:
        return " ".join(f"{k}={v}" for k, v in dims.items())


# ---- helpers --------------------------------------------------------------------------------------
def randn(*shape, dtype=None):
    return torch.randn(*shape).to(dtype or torch.float32)


def empty(*shape, dtype=None):
    return torch.empty(*shape, dtype=dtype or torch.float32)


def u32_random(*shape):
    return torch.randint(-2 ** 31, 2 ** 31, shape, dtype=torch.int32).view(torch.uint32)


def u32_as_i64(t):
    return t.view(torch.int32).to(torch.int64) & 0xFFFFFFFF


def mismatches(ok, what: str) -> bool | str:
    bad = int((~ok).sum())
    return True if bad == 0 else f"{what}: {bad} of {ok.numel()} elements differ"


def same(got, want, what: str = "output") -> bool | str:
    """Equal values (NaN equal to NaN), compared in float64 / int64."""
    got, want = got.reshape(want.shape), want
    if got.dtype.is_floating_point or want.dtype.is_floating_point:
        g, w = got.double(), want.double()
        return mismatches((g == w) | (g.isnan() & w.isnan()), what)
    return mismatches(got.to(torch.int64) == want.to(torch.int64), what)


def close(got, want, rtol: float, atol: float, what: str = "output") -> bool | str:
    g, w = got.double().reshape(want.shape), want.double()
    ok = ((g - w).abs() <= atol + rtol * w.abs()) | (g.isnan() & w.isnan()) | (g == w)
    if bool(ok.all()):
        return True
    return f"{what}: {int((~ok).sum())} of {ok.numel()} beyond rtol {rtol} atol {atol}, max error " \
           f"{float((g - w).abs().nan_to_num(0).max()):.3g}"


def all_of(*verdicts) -> bool | str:
    """The first failing verdict; verdicts are thunks so later ones run only if needed."""
    for verdict in verdicts:
        result = verdict()
        if result is not True:
            return result
    return True


def divide(numerator, denominator):
    """A correctly rounded division where one side is a Python number: torch computes
    `number / tensor` and, on CUDA, `tensor / number` through a reciprocal."""
    if not isinstance(numerator, torch.Tensor):
        numerator = torch.full_like(denominator, numerator)
    if not isinstance(denominator, torch.Tensor):
        denominator = torch.full_like(numerator, denominator)
    return numerator / denominator


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def warps(block: int) -> int:
    return 4 if block <= 2048 else (8 if block <= 8192 else 16)


def tk():
    """The Triton kernels, imported when a builder needs one (Triton may be absent)."""
    from bench import triton_kernels
    return triton_kernels


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


NARROW_BITS = {"bfloat16": "int16", "float8_e4m3fn": "uint8", "float8_e5m2": "uint8"}


def numpy_of(t):
    """A CPU tensor as numpy (bf16 and f8 through their bits as ml_dtypes arrays)."""
    import ml_dtypes
    name = str(t.dtype).removeprefix("torch.")
    if name in NARROW_BITS:
        return t.contiguous().view(getattr(torch, NARROW_BITS[name])).numpy().view(getattr(ml_dtypes, name))
    return t.numpy()


def torch_of(array, dtype):
    import numpy as np
    name = str(dtype).removeprefix("torch.")
    if name in NARROW_BITS:
        return torch.from_numpy(array.view(np.dtype(NARROW_BITS[name]))).view(dtype)
    return torch.from_numpy(array).to(dtype)


# ---- elementwise and whole-tensor kernels -------------------------------------------------------------
def bias_act(d, dev):
    m, n = d["M"], d["N"]
    x, bias, y = randn(m, n), randn(n), empty(m, n)
    return Case({"x": x, "bias": bias, "y": y}, 8 * m * n + 4 * n, {"torch": lambda: F.gelu(x + bias)},
                lambda: close(y, F.gelu(x + bias), 1e-5, 1e-5))


def vector_add(d, dev):
    n = d["N"]
    x, y, z, z2 = randn(n), randn(n), empty(n), empty(n)
    return Case({"x": x, "y": y, "z": z}, 12 * n, {
        "triton": lambda: tk().t_add[(cdiv(n, 1024),)](x, y, z2, n, BLOCK=1024),
        "torch": lambda: torch.add(x, y, out=z2)}, lambda: same(z, x + y))


def saxpy(d, dev):
    n = d["N"]
    x, y0 = randn(n), randn(n)
    y, y2 = y0.clone(), y0.clone()
    return Case({"a": 2.5, "x": x, "y": y}, 12 * n, {"torch": lambda: y2.add_(x, alpha=2.5)},
                lambda: close(y, y0 + 2.5 * x, 1e-6, 1e-6), reset=lambda: y.copy_(y0))


def fast_silu_gelu(d, dev):
    n = d["N"]
    x, silu, gelu = randn(n) * 4, empty(n), empty(n)
    return Case({"x": x, "silu": silu, "gelu": gelu}, 12 * n,
                {"torch": lambda: (F.silu(x), F.gelu(x, approximate="tanh"))},
                lambda: all_of(lambda: close(silu, F.silu(x), 1e-3, 1e-5, "silu"),
                               lambda: close(gelu, F.gelu(x, approximate="tanh"), 1e-3, 1e-5, "gelu")))


def gelu_fwd(d, dev):
    n = d["N"]
    x, y, dydx, ones = randn(n), empty(n), empty(n), torch.ones(d["N"])
    return Case({"x": x, "y": y, "dydx": dydx}, 12 * n,
                {"torch": lambda: (F.gelu(x), torch.ops.aten.gelu_backward(ones, x))},
                lambda: all_of(lambda: close(y, F.gelu(x), 1e-4, 1e-5, "y"),
                               lambda: close(dydx, torch.ops.aten.gelu_backward(ones, x), 1e-4, 1e-5, "dydx")))


def special_math(d, dev):
    n = d["N"]
    x, k = randn(n) * 5, torch.randint(0, 20, (n,)).float()
    lam, h = torch.rand(n) * 8.5 + 0.5, torch.rand(n)
    outs = {name: empty(n) for name in ("softplus", "normal_sf", "poisson_nll", "angle")}

    def equivalent(x=x, k=k, lam=lam, h=h):
        return {"softplus": torch.maximum(x, torch.zeros_like(x)) + torch.log1p(torch.exp(-x.abs())),
                "normal_sf": 0.5 * torch.special.erfc(x * 0.7071067811865476),
                "poisson_nll": lam - k * torch.log(lam) + torch.lgamma(k + 1), "angle": 2 * torch.asin(torch.sqrt(h))}
    # The kernel rounds sqrt(h) to f32 before asin (each op's result is an f32, spec §5),
    # so the reference does too: near h = 1, asin's slope magnifies that rounding to ~2e-4,
    # which the interpreter shows exactly as intentc does against a reference that skips it.
    root = torch.sqrt(h.double()).float()
    reference = lambda: {**equivalent(x.double(), k.double(), lam.double(), h.double()),
                         "angle": 2 * torch.asin(root.double())}
    return Case({"x": x, "k": k, "lambda": lam, "h": h, **outs}, 32 * n,
                {"torch": lambda: (F.softplus(x), equivalent()["normal_sf"], equivalent()["poisson_nll"],
                                   2 * torch.asin(torch.sqrt(h)))},
                lambda: all_of(*[lambda name=name, want=want: close(outs[name], want, 1e-5, 1e-6, name)
                                 for name, want in reference().items()]))


def newton_rsqrt(d, dev):
    n = d["N"]
    x, y = torch.rand(n) * 99.99 + 0.01, empty(n)
    return Case({"x": x, "y": y}, 8 * n, {"torch": lambda: torch.rsqrt(x)},
                lambda: close(y, torch.rsqrt(x.double()), 1e-5, 0))


def sign_ops(d, dev):
    n = d["N"]
    mag, sgn = randn(n), randn(n)
    cs, neg, bit = empty(n), empty(n), empty(n, dtype=torch.uint8)
    return Case({"mag": mag, "sgn": sgn, "copysign": cs, "negated": neg, "signbit": bit}, 17 * n,
                {"torch": lambda: (torch.copysign(mag, sgn), torch.neg(mag), torch.signbit(mag).to(torch.uint8))},
                lambda: all_of(lambda: same(cs, torch.copysign(mag, sgn), "copysign"),
                               lambda: same(neg, -mag, "negated"),
                               lambda: same(bit, torch.signbit(mag).to(torch.uint8), "signbit")))


def periodic_wrap(d, dev):
    n = d["N"]
    pos = torch.randint(-1000, 1000, (n, 3), dtype=torch.int32)
    cell, wrapped = empty(n, 3, dtype=torch.int32), empty(n, 3, dtype=torch.int32)
    return Case({"pos": pos, "period": 7, "cell": cell, "wrapped": wrapped}, 36 * n,
                {"torch": lambda: (torch.div(pos, 7, rounding_mode="floor"), torch.remainder(pos, 7))},
                lambda: all_of(lambda: same(cell, torch.div(pos, 7, rounding_mode="floor"), "cell"),
                               lambda: same(wrapped, torch.remainder(pos, 7), "wrapped")))


def murmur_reference(keys, nbuckets: int):
    h = u32_as_i64(keys)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h, h % nbuckets


def murmur3_bucket(d, dev):
    n = d["N"]
    keys = u32_random(n)
    hashes, buckets = u32_random(n), u32_random(n)
    h2, b2 = u32_random(n), u32_random(n)
    triton = lambda: tk().t_murmur[(cdiv(n, 1024),)](keys, h2, b2, n, 1000, BLOCK=1024)

    def check():
        want_h, want_b = murmur_reference(keys, 1000)
        triton()
        return all_of(lambda: same(u32_as_i64(hashes), want_h, "hash"), lambda: same(u32_as_i64(buckets), want_b, "bucket"),
                      lambda: same(u32_as_i64(h2), want_h, "triton hash"))
    return Case({"keys": keys, "nbuckets": 1000, "hash": hashes, "bucket": buckets}, 12 * n, {"triton": triton}, check)


def pcg_reference(x):
    state = (u32_as_i64(x) * 747796405 + 2891336453) & 0xFFFFFFFF
    word = (((state >> ((state >> 28) + 4)) ^ state) * 277803737) & 0xFFFFFFFF
    return (word >> 22) ^ word


def pcg_hash(d, dev):
    h, w = d["H"], d["W"]
    x, y, y2 = u32_random(h, w), u32_random(h, w), u32_random(h, w)
    triton = lambda: tk().t_pcg[(cdiv(h * w, 1024),)](x, y2, h * w, BLOCK=1024)

    def check():
        want = pcg_reference(x)
        triton()
        return all_of(lambda: same(u32_as_i64(y), want), lambda: same(u32_as_i64(y2), want, "triton"))
    return Case({"x": x, "y": y}, 8 * h * w, {"triton": triton}, check)


def interleave(d, dev):
    n = d["N"]
    a, b, out, out2 = randn(n), randn(n), empty(2 * n), empty(2 * n)
    return Case({"a": a, "b": b, "out": out}, 16 * n, {"torch": lambda: torch.stack((a, b), 1, out=out2.view(n, 2))},
                lambda: same(out, torch.stack((a, b), 1)))


def stochastic_round(d, dev):
    n = d["N"]
    x, y, y2 = randn(n), empty(n, dtype=torch.bfloat16), empty(n, dtype=torch.bfloat16)

    def check():
        down = x.view(torch.int32) & -65536
        lower, upper = down.view(torch.float32), (down + 65536).view(torch.float32)
        got = y.float()
        return mismatches((got == lower) | (got == upper), "y (neither neighbour)")
    return Case({"x": x, "seed": 9, "y": y}, 6 * n, {
        "triton": lambda: tk().t_stochastic_round[(cdiv(n, 1024),)](x, y2, n, 9, BLOCK=1024),
        "torch_rne": lambda: x.to(torch.bfloat16)}, check,
        differs={"torch_rne": "round to nearest even: no random bits (a cheaper function)"})


def exclusive_offsets(d, dev):
    b = d["B"]
    counts = torch.randint(0, 60000, (b,), dtype=torch.int32).to(torch.uint16)
    offsets = empty(b, dtype=torch.int32).view(torch.uint32)

    def equivalent():
        wide = counts.to(torch.int32)
        return torch.cumsum(wide, 0, dtype=torch.int32) - wide
    want = lambda: (torch.cumsum(counts.to(torch.int64), 0) - counts.to(torch.int64)) & 0xFFFFFFFF
    return Case({"counts": counts, "offsets": offsets}, 6 * b, {"torch": equivalent},
                lambda: same(u32_as_i64(offsets), want()))


# ---- rows -----------------------------------------------------------------------------------------------
def rows(d):
    return d["M"], d["N"]


def row_softmax(d, dev):
    m, n = rows(d)
    x, y, y2 = randn(m, n), empty(m, n), empty(m, n)
    block = next_pow2(n)
    return Case({"x": x, "t": 1.0, "y": y}, 8 * m * n, {
        "triton": lambda: tk().t_softmax[(m,)](x, y2, n, 1.0, BLOCK=block, num_warps=warps(block)),
        "torch": lambda: torch.softmax(x, 1)}, lambda: close(y, torch.softmax(x, 1), 1e-5, 1e-6))


def layernorm(d, dev):
    m, n = rows(d)
    x, gamma, beta = randn(m, n), randn(n), randn(n)
    y, mean, rstd = empty(m, n), empty(m), empty(m)
    y2, mean2, rstd2 = empty(m, n), empty(m), empty(m)
    block = next_pow2(n)
    triton = lambda: tk().t_layernorm[(m,)](x, gamma, beta, y2, mean2, rstd2, n, 1e-5, BLOCK=block,
                                              num_warps=warps(block))

    def check():
        want_y, want_mean, want_rstd = torch.native_layer_norm(x, [n], gamma, beta, 1e-5)
        triton()
        return all_of(lambda: close(y, want_y, 1e-4, 1e-4, "y"), lambda: close(mean, want_mean, 1e-5, 1e-6, "mean"),
                      lambda: close(rstd, want_rstd, 1e-4, 1e-6, "rstd"),
                      lambda: close(y2, want_y, 1e-4, 1e-4, "triton y"))
    return Case({"x": x, "gamma": gamma, "beta": beta, "eps": 1e-5, "y": y, "mean_out": mean, "rstd_out": rstd},
                8 * m * n + 8 * n + 8 * m, {"triton": triton,
                                            "torch": lambda: torch.native_layer_norm(x, [n], gamma, beta, 1e-5)},
                check)


def row_sum_f16(d, dev):
    m, n = rows(d)
    x, y = randn(m, n, dtype=torch.float16), empty(m)
    return Case({"x": x, "y": y}, 2 * m * n + 4 * m, {"torch": lambda: x.sum(1, dtype=torch.float32)},
                lambda: close(y, x.double().sum(1), 1e-4, 1e-3))


def row_sum_i8(d, dev):
    m, n = rows(d)
    q, y = torch.randint(-128, 128, (m, n), dtype=torch.int8), empty(m, dtype=torch.int32)
    return Case({"q": q, "y": y}, m * n + 4 * m, {"torch": lambda: q.sum(1, dtype=torch.int32)},
                lambda: same(y, q.sum(1, dtype=torch.int64)))


def row_max(d, dev):
    m, n = rows(d)
    x, y, y32 = randn(m, n, dtype=torch.bfloat16), empty(m, dtype=torch.bfloat16), empty(m)
    return Case({"x": x, "y": y, "y32": y32}, 2 * m * n + 6 * m, {"torch": lambda: x.amax(1).float()},
                lambda: all_of(lambda: same(y, x.amax(1), "y"), lambda: same(y32, x.amax(1).float(), "y32")))


def row_argmax(d, dev):
    m, v = d["M"], d["V"]
    logits, best, token = randn(m, v), empty(m), empty(m, dtype=torch.int64)

    def check():
        values, indices = torch.max(logits, 1)
        return all_of(lambda: same(best, values, "best"), lambda: same(token, indices, "token"))
    return Case({"logits": logits, "best": best, "token": token}, 4 * m * v + 12 * m,
                {"torch": lambda: torch.max(logits, 1)}, check)


def row_cumsum(d, dev):
    m, n = rows(d)
    x, y, y2 = randn(m, n), empty(m, n), empty(m, n)
    block = next_pow2(n)
    return Case({"x": x, "y": y}, 8 * m * n, {
        "triton": lambda: tk().t_cumsum[(m,)](x, y2, n, BLOCK=block, num_warps=8),
        "torch": lambda: torch.cumsum(x, 1, out=y2)},
        lambda: close(y, torch.cumsum(x.double(), 1), 1e-4, 1e-2))


def row_cummax(d, dev):
    m, n = rows(d)
    x, prefix, suffix = randn(m, n), empty(m, n), empty(m, n)

    def equivalent():
        return torch.cummax(x, 1).values, torch.cummax(x.flip(1), 1).values.flip(1)

    def check():
        want_p, want_s = equivalent()
        return all_of(lambda: same(prefix, want_p, "prefix"), lambda: same(suffix, want_s, "suffix"))
    return Case({"x": x, "prefix": prefix, "suffix": suffix}, 12 * m * n, {"torch": equivalent}, check)


def ema_reference(x, alpha: float, rows: int = 64):
    """The recurrence itself, in float64, on the first rows."""
    x = x[:rows].double()
    out = torch.empty_like(x)
    state = x[:, 0]
    out[:, 0] = state
    for t in range(1, x.shape[1]):
        state = alpha * x[:, t] + (1 - alpha) * state
        out[:, t] = state
    return out


def ema_rows(d, dev):
    """Two Triton columns: `triton_seq` runs the sample's order (a row a lane, the steps in
    order, the sample's FMA), the same bits; `triton_scan` a parallel scan of affine maps, a
    reassociation the ordered `loop` does not allow (§10), so other roundings."""
    m, t = d["M"], d["T"]
    x, y, y_scan, y_seq = randn(m, t), empty(m, t), empty(m, t), empty(m, t)
    block = next_pow2(t)
    scan = lambda: tk().t_ema[(m,)](x, y_scan, t, 0.25, BLOCK=block, num_warps=warps(block))
    seq = lambda: tk().t_ema_sequential[(cdiv(m, 32),)](x, y_seq, m, t, 0.25, ROWS=32, num_warps=1)

    def check():
        want = ema_reference(x, 0.25)
        scan()
        seq()
        return all_of(lambda: close(y[:64], want, 1e-4, 1e-5), lambda: close(y_scan[:64], want, 1e-4, 1e-5, "triton_scan"),
                      lambda: close(y_seq[:64], want, 1e-4, 1e-5, "triton_seq"))
    return Case({"x": x, "alpha": 0.25, "y": y}, 8 * m * t, {"triton_seq": seq, "triton_scan": scan}, check,
                differs={"triton_scan": "a parallel scan of affine maps: reassociated, other roundings (§10)"},
                same_bits={"triton_seq": lambda: torch.equal(y, y_seq)})


def welford_rows(d, dev):
    m, n = rows(d)
    x, mean, var = randn(m, n), empty(m), empty(m)

    def check():
        want_var, want_mean = torch.var_mean(x.double(), 1, correction=0)
        return all_of(lambda: close(mean, want_mean, 1e-4, 1e-5, "mean"), lambda: close(var, want_var, 1e-4, 1e-5, "var"))
    return Case({"x": x, "mean_out": mean, "var_out": var}, 4 * m * n + 8 * m,
                {"torch": lambda: torch.var_mean(x, 1, correction=0)}, check)


def row_stats(d, dev):
    m, n = rows(d)
    x = torch.where(torch.rand(m, n) < 1e-3, torch.tensor(float("inf")), randn(m, n))
    outs = {"mins": empty(m), "maxs": empty(m), "means": empty(m), "counts": empty(m, dtype=torch.int32)}

    def equivalent():
        finite = torch.isfinite(x)
        total = torch.where(finite, x, 0.0).sum(1)
        count = finite.sum(1, dtype=torch.int32)
        return {"mins": torch.where(finite, x, float("inf")).amin(1), "maxs": torch.where(finite, x, -float("inf")).amax(1),
                "means": total / count, "counts": count}

    def check():
        want = equivalent()
        return all_of(lambda: same(outs["mins"], want["mins"], "mins"), lambda: same(outs["maxs"], want["maxs"], "maxs"),
                      lambda: close(outs["means"], want["means"], 1e-4, 1e-5, "means"),
                      lambda: same(outs["counts"], want["counts"], "counts"))
    return Case({"x": x, **outs}, 4 * m * n + 16 * m, {"torch": equivalent}, check)


def nan_max(d, dev):
    m, n = rows(d)
    x = torch.where(torch.rand(m, n) < 1e-5, torch.tensor(float("nan")), randn(m, n))
    outs = {"relu_prop": empty(m, n), "relu_num": empty(m, n), "row_max": empty(m), "row_nanmax": empty(m)}
    zero = torch.zeros(())

    def equivalent():
        return {"relu_prop": torch.relu(x), "relu_num": torch.fmax(x, zero), "row_max": x.amax(1),
                "row_nanmax": x.nan_to_num(nan=-float("inf")).amax(1)}

    def check():
        want = equivalent()
        return all_of(*[lambda name=name: same(outs[name], want[name], name) for name in outs])
    return Case({"x": x, **outs}, 12 * m * n + 8 * m, {"torch": equivalent}, check)


def f8_rowwise_quantizer(format_name: str):
    """The f8 row-wise quantizers: q = x * (fmax / amax) in the f8 format, scale = amax / fmax."""
    fmax = 448.0 if format_name == "float8_e4m3fn" else 57344.0

    def build(d, dev):
        dtype_out = getattr(torch, format_name)
        m, n = rows(d)
        x, q, scale = randn(m, n), empty(m, n, dtype=dtype_out), empty(m)

        def equivalent():
            amax = x.abs().amax(1, keepdim=True)
            safe = torch.where(amax > 0, amax, fmax)
            scaled = x * divide(fmax, safe)
            if dtype_out == torch.float8_e4m3fn:
                scaled = scaled.clamp(-fmax, fmax)
            return scaled.to(dtype_out), divide(safe, fmax).squeeze(1)

        def check():
            want_q, want_scale = equivalent()
            return all_of(lambda: same(q.float(), want_q.float(), "q"), lambda: same(scale, want_scale, "scale"))
        name = "x" if dtype_out == torch.float8_e4m3fn else "g"
        return Case({name: x, "q": q, "scale": scale}, 5 * m * n + 4 * m, {"torch": equivalent}, check)
    return build


def dequantize_e4m3(d, dev):
    m, n = rows(d)
    q, scale, x = randn(m, n).to(torch.float8_e4m3fn), randn(m), empty(m, n)
    return Case({"q": q, "scale": scale, "x": x}, 5 * m * n + 4 * m, {"torch": lambda: q.float() * scale[:, None]},
                lambda: same(x, q.float() * scale[:, None]))


def dropout(d, dev):
    m, n = rows(d)
    x, y, keep = randn(m, n), empty(m, n), empty(m, n, dtype=torch.uint8)
    y2, keep2 = empty(m, n), empty(m, n, dtype=torch.uint8)

    def check():      # the kept elements are scaled x, the others 0; about half kept
        kept = keep.bool()
        return all_of(lambda: same(y[kept], x[kept] * 2.0, "kept"), lambda: mismatches(y[~kept] == 0, "dropped"), lambda: abs(kept.float().mean().item() - 0.5) < 0.01 + 2 / kept.numel() ** 0.5 or "keep rate")
    return Case({"x": x, "seed": 1234, "offset": 0, "p": 0.5, "y": y, "keep_out": keep}, 9 * m * n, {
        "triton": lambda: tk().t_dropout[(m,)](x, y2, keep2, n, 1234, 0, 0.5, 2.0, BLOCK=n, num_warps=8),
        "torch": lambda: F.dropout(x, 0.5, training=True)}, check)


def prefix_logsumexp(d, dev):
    m, n = rows(d)
    x, y, lse = randn(m, n), empty(m, n), empty(m)

    def check():
        want = torch.logcumsumexp(x.double(), 1)
        return all_of(lambda: close(y, want, 1e-4, 1e-4, "y"), lambda: close(lse, want[:, -1], 1e-4, 1e-4, "lse"))
    return Case({"x": x, "y": y, "lse": lse}, 8 * m * n + 4 * m, {"torch": lambda: torch.logcumsumexp(x, 1)}, check)


def kaiser_frames(d, dev):
    f, length = d["F"], d["L"]
    x, y = randn(f, length), empty(f, length)
    window = lambda: torch.kaiser_window(length, periodic=False, beta=8.6, device=dev)
    return Case({"x": x, "beta": 8.6, "y": y}, 8 * f * length, {"torch": lambda: x * window()},
                lambda: close(y, x * window(), 1e-4, 1e-6))


def flip_rows(d, dev):
    m, n = rows(d)
    source, y = randn(m, n), empty(m, n)
    x = StridedView(source, n - 1, (n, -1), (m, n))
    return Case({"x": x, "y": y}, 8 * m * n, {"torch": lambda: torch.flip(source, [1])},
                lambda: same(y, source.flip(1)))


def rope_interleaved(d, dev):
    t, h = d["T"], d["H"]
    x, y = randn(t, h, 128, dtype=torch.bfloat16), empty(t, h, 128, dtype=torch.bfloat16)
    cos, sin = randn(t, 64), randn(t, 64)

    def equivalent():
        even, odd = x[..., 0::2].float(), x[..., 1::2].float()
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.stack([even * c - odd * s, even * s + odd * c], -1).flatten(-2).to(torch.bfloat16)
    return Case({"x": x, "cos": cos, "sin": sin, "y": y}, 2 * 2 * t * h * 128 + 8 * 64 * t, {"torch": equivalent},
                lambda: close(y.float(), equivalent().float(), 8e-3, 1e-2))


def embedding_lookup(d, dev):
    n, v, dim = d["N"], d["V"], d["D"]
    ids, table, out = torch.randint(0, v, (n,), dtype=torch.int32), randn(v, dim, dtype=torch.float16), \
        empty(n, dim, dtype=torch.float16)
    return Case({"ids": ids, "table": table, "out": out}, 4 * n + 4 * n * dim, {"torch": lambda: F.embedding(ids, table)},
                lambda: same(out, table[ids.long()]))


def rank1_update(d, dev):
    m, n = rows(d)
    a0, u, v = randn(m, n), randn(m), randn(n)
    a, a2 = a0.clone(), a0.clone()
    return Case({"a": a, "u": u, "v": v, "alpha": 1e-3}, 8 * m * n + 4 * (m + n),
                {"torch": lambda: a2.addr_(u, v, alpha=1e-3)},
                lambda: close(a, a0 + 1e-3 * torch.outer(u, v), 1e-6, 1e-6), reset=lambda: a.copy_(a0))


# ---- atomics, scatters, histograms ----------------------------------------------------------------
def count_above(d, dev):
    n = d["N"]
    x, counter = randn(n), torch.zeros(1, dtype=torch.int32).view(torch.uint32)
    return Case({"x": x, "threshold": 0.3, "counter": counter}, 4 * n, {"torch": lambda: (x > 0.3).sum()},
                lambda: same(u32_as_i64(counter), (x > 0.3).sum().reshape(1)),
                reset=lambda: counter.view(torch.int32).zero_())


def atomic_max_f32(d, dev):
    n = d["N"]
    neg_inf_bits = -8388608      # 0xff800000 as an i32
    x, slot = randn(n), torch.full((1,), neg_inf_bits, dtype=torch.int32).view(torch.uint32)
    return Case({"x": x, "slot": slot}, 4 * n, {"torch": lambda: torch.amax(x)},
                lambda: same(slot.view(torch.float32), torch.amax(x).reshape(1)),
                reset=lambda: slot.view(torch.int32).fill_(neg_inf_bits))


def window2_block_sums(d, dev):
    nb = d["NB"]
    x, partial, flag, out = randn(nb, 256), torch.zeros(nb), torch.zeros(nb, dtype=torch.int32), empty(nb)

    def equivalent():
        sums = x.sum(1)
        return torch.cat([sums[:1], sums[1:] + sums[:-1]])

    def reset():
        partial.zero_()
        flag.zero_()
    return Case({"x": x, "partial": partial, "flag": flag.view(torch.uint32), "out": out}, 1024 * nb + 12 * nb,
                {"torch": equivalent}, lambda: close(out, equivalent(), 1e-4, 1e-4), reset=reset)


def histogram256(d, dev):
    n = d["N"]
    values = torch.randint(-8, 300, (n,), dtype=torch.int32)
    hist, hist2 = torch.zeros(256, dtype=torch.int32), torch.zeros(256, dtype=torch.int32)

    def want():
        return torch.bincount(values[(values >= 0) & (values < 256)], minlength=256)
    return Case({"values": values, "hist": hist}, 4 * n, {
        "triton": lambda: tk().t_hist[(cdiv(n, 2048),)](values, hist2, n, BLOCK=2048, BINS=256),
        "torch": lambda: torch.histc(values.float(), 256, 0, 256)}, lambda: same(hist, want()), reset=hist.zero_)


def segment_sum(d, dev):
    n, dim, s = d["N"], d["D"], d["S"]
    x, seg = randn(n, dim), torch.randint(-1, s, (n,), dtype=torch.int32)
    out, counts = torch.zeros(s, dim), torch.zeros(s, dtype=torch.int32)
    out2, counts2 = torch.zeros(s, dim), torch.zeros(s, dtype=torch.int32)

    def equivalent(out=out2, counts=counts2, x=x):
        valid = seg >= 0
        index = seg.clamp(min=0)
        out.index_add_(0, index, x * valid[:, None])
        counts.index_add_(0, index, valid.to(counts.dtype))
        return out, counts

    def check():
        want_out, want_counts = equivalent(torch.zeros(s, dim, dtype=torch.float64, device=x.device),
                                           torch.zeros(s, dtype=torch.int64, device=x.device), x.double())
        return all_of(lambda: close(out, want_out, 1e-4, 1e-4, "out"), lambda: same(counts, want_counts, "counts"))

    def reset():
        out.zero_()
        counts.zero_()
    return Case({"x": x, "seg": seg, "out": out, "counts": counts}, 8 * n * dim + 8 * n, {"torch": equivalent}, check,
                reset=reset)


# ---- quantized formats ----------------------------------------------------------------------------
def q4k_decode(q):
    """Q4_K records (144 bytes) -> f32 values [records, 256], llama.cpp's dequantize_row_q4_K."""
    q = q.reshape(-1, 144)
    d = q[:, 0:2].contiguous().view(torch.float16).float()
    dmin = q[:, 2:4].contiguous().view(torch.float16).float()
    s = q[:, 4:16].to(torch.int32)
    scale = torch.cat([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)], 1).float()
    mins = torch.cat([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], 1).float()
    nib = q[:, 16:].reshape(-1, 4, 32)
    levels = torch.stack([nib & 15, nib >> 4], 2).reshape(-1, 8, 32).float()
    return ((d * scale)[:, :, None] * levels - (dmin * mins)[:, :, None]).reshape(-1, 256)


def q8k_decode(q):
    q = q.reshape(-1, 292)
    return q[:, :4].contiguous().view(torch.float32) * q[:, 4:260].view(torch.int8).float()


def q8k_encode(x):
    """f32 blocks of 256 -> Q8_K records (292 bytes), quantize_row_q8_K_ref."""
    blocks = x.reshape(-1, 256)
    peak = blocks.gather(1, blocks.abs().argmax(1, keepdim=True))
    iscale = divide(-127.0, peak)
    qs = torch.round(iscale * blocks).clamp(max=127).to(torch.int8)
    bsums = qs.reshape(-1, 16, 16).to(torch.int16).sum(2, dtype=torch.int16)
    return torch.cat([divide(1.0, iscale).view(torch.uint8), qs.view(torch.uint8), bsums.view(torch.uint8)], 1)


def random_q4k(records: int):
    q = torch.randint(0, 256, (records, 144), dtype=torch.int32).to(torch.uint8)
    q[:, 0:2] = torch.tensor([0.01], dtype=torch.float16).view(torch.uint8)
    q[:, 2:4] = torch.tensor([0.002], dtype=torch.float16).view(torch.uint8)
    return q


def q4k_q8k_matvec(d, dev):
    r, nb = d["R"], d["NB"]
    w, x, y = random_q4k(r * nb).reshape(r, nb, 144), q8k_encode(randn(nb, 256)), empty(r)
    dense_w, dense_x = q4k_decode(w).reshape(r, -1), q8k_decode(x).reshape(-1)
    half_w, half_x = dense_w.half(), dense_x.half()
    return Case({"w": w, "x": x, "y": y}, r * nb * 144 + nb * 292 + 4 * r, {
        "torch": lambda: q4k_decode(w).reshape(r, -1) @ q8k_decode(x).reshape(-1),
        "torch_matmul": lambda: half_w @ half_x},
        lambda: close(y, dense_w.double() @ dense_x.double(), 1e-4, 1e-3), flops=2 * r * nb * 256)


def quantize_q8_k(d, dev):
    r, nb = d["R"], d["NB"]
    x, q = randn(r, nb, 256), empty(r, nb, 292, dtype=torch.uint8)
    return Case({"x": x, "q": q}, r * nb * (1024 + 292), {"torch": lambda: q8k_encode(x)},
                lambda: same(q.reshape(-1, 292), q8k_encode(x)))


def dequantize_q4_k(d, dev):
    r, nb = d["R"], d["NB"]
    q, x = random_q4k(r * nb).reshape(r, nb, 144), empty(r, nb, 256)
    return Case({"q": q, "x": x}, r * nb * (144 + 1024), {"torch": lambda: q4k_decode(q)},
                lambda: close(x.reshape(-1, 256), q4k_decode(q), 1e-6, 1e-6))


# ---- contractions -----------------------------------------------------------------------------------
def matmul_check(got, want, rtol: float):
    return close(got, want, rtol, rtol * float(want.abs().max()))


def matmul_tiled(d, dev):
    m, n, k = d["M"], d["N"], d["K"]
    a, b = randn(m, k, dtype=torch.float16), randn(k, n, dtype=torch.float16)
    c, c2 = empty(m, n, dtype=torch.float16), empty(m, n, dtype=torch.float16)
    triton = lambda: tk().t_matmul[(cdiv(m, 64), cdiv(n, 64))](a, b, c2, m, n, k, BM=64, BN=64, BK=32)

    def check():
        want = a.float() @ b.float()
        triton()
        return all_of(lambda: matmul_check(c, want, 2e-3), lambda: matmul_check(c2, want, 2e-3))
    return Case({"a": a, "b": b, "c": c}, 2 * (m * k + k * n + m * n), {
        "triton": triton, "torch_matmul": lambda: torch.matmul(a, b, out=c2)}, check, flops=2 * m * n * k)


E2M1 = [0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6]


def mxfp4_matmul(d, dev):
    m, n, g = d["M"], d["N"], d["G"]
    k = 32 * g
    a, b = torch.randint(0, 256, (m, g, 16), dtype=torch.int32).to(torch.uint8), \
        torch.randint(0, 256, (g, 16, n), dtype=torch.int32).to(torch.uint8)
    a_scale, b_scale = torch.randint(120, 134, (m, g), dtype=torch.int32).to(torch.uint8), \
        torch.randint(120, 134, (n, g), dtype=torch.int32).to(torch.uint8)
    c = empty(m, n)
    table = torch.tensor(E2M1)

    def dequantized():
        pa = torch.stack([table[(a & 15).long()], table[(a >> 4).long()]], 3).reshape(m, g, 32)
        pb = torch.stack([table[(b & 15).long()], table[(b >> 4).long()]], 2).reshape(g, 32, n)
        pa = pa * torch.exp2(a_scale.float() - 127)[:, :, None]
        pb = pb * torch.exp2(b_scale.t().float() - 127)[:, None, :]
        return pa.reshape(m, k), pb.reshape(k, n)
    dense_a, dense_b = dequantized()
    return Case({"a": a, "a_scale": a_scale, "b": b, "b_scale": b_scale, "c": c},
                m * g * 17 + n * g * 17 + 4 * m * n, {
                    "torch": lambda: torch.matmul(*dequantized()),
                    "torch_matmul": lambda: dense_a @ dense_b},
                lambda: matmul_check(c, dense_a.double() @ dense_b.double(), 1e-5), flops=2 * m * n * k)


def sparse12_matmul(d, dev):
    m, kh, n = d["M"], d["KH"], d["N"]
    a, meta, b = randn(m, kh), torch.randint(0, 2, (m, kh), dtype=torch.int32).to(torch.uint8), randn(2 * kh, n)
    c = empty(m, n)

    def densify():
        return torch.zeros(m, kh, 2, device=a.device).scatter_(2, meta.long()[:, :, None], a[:, :, None]).reshape(m, 2 * kh)
    dense = densify()
    return Case({"a": a, "meta": meta, "b": b, "c": c}, 5 * m * kh + 4 * 2 * kh * n + 4 * m * n, {
        "torch": lambda: densify() @ b, "torch_matmul": lambda: dense @ b},
        lambda: matmul_check(c, dense.double() @ b.double(), 1e-5), flops=2 * m * n * 2 * kh)


def sparse24_matmul(d, dev):
    m, kh, n = d["M"], d["KH"], d["N"]
    kq = kh // 2
    codes = torch.tensor([p | (q << 2) for p in range(4) for q in range(p + 1, 4)], dtype=torch.uint8)
    a, meta = randn(m, kh, dtype=torch.float16), codes[torch.randint(0, 6, (m, kq))]
    b, c = randn(2 * kh, n, dtype=torch.float16), empty(m, n)

    def densify():
        values = a.reshape(m, kq, 2)
        dense = torch.zeros(m, kq, 4, dtype=torch.float16, device=a.device)
        dense.scatter_(2, (meta & 3).long()[:, :, None], values[:, :, :1])
        dense.scatter_(2, ((meta >> 2) & 3).long()[:, :, None], values[:, :, 1:])
        return dense.reshape(m, 2 * kh)
    dense = densify()
    baselines = {"torch": lambda: densify() @ b, "torch_matmul": lambda: dense @ b}
    semi = semi_structured(dense)
    if semi is not None:        # torch's 2:4 sparse matmul (cuSPARSELt / CUTLASS), the baseline
        baselines["torch_semi_structured"] = lambda: torch.mm(semi, b)
    return Case({"a": a, "meta": meta, "b": b, "c": c}, 2 * m * kh + m * kq + 2 * 2 * kh * n + 4 * m * n,
                baselines, lambda: matmul_check(c, dense.double() @ b.double(), 1e-4), flops=2 * m * n * 2 * kh)


def semi_structured(dense):
    """`dense` (2:4 sparse along its rows) in torch's semi-structured sparse format, or None
    where this torch or device has none (or the shape does not fit it)."""
    try:
        return torch.sparse.to_sparse_semi_structured(dense)
    except Exception:       # a missing backend or an unsupported shape: no such baseline
        return None


def batched_dot(d, dev):
    b, k = d["B"], d["K"]
    x, y = randn(b, k, dtype=torch.float16), randn(b, k, dtype=torch.float16)
    out, out_h = empty(b), empty(b, dtype=torch.float16)

    def check():
        want = (x.double() * y.double()).sum(1)
        return all_of(lambda: close(out, want, 1e-4, 1e-3, "out"), lambda: same(out_h, out.half(), "out_h"))
    return Case({"x": x, "y": y, "out": out, "out_h": out_h}, 4 * b * k + 6 * b, {
        "torch_matmul": lambda: torch.bmm(x[:, None, :], y[:, :, None])}, check, flops=2 * b * k)


def decode_scores(d, dev):
    b, s, h, dim = d["B"], d["S"], d["H"], d["D"]
    q, k, scores = randn(b, h, dim, dtype=torch.bfloat16), randn(b, s, h, dim, dtype=torch.bfloat16), empty(b, h, s)
    scale = 1 / math.sqrt(dim)
    return Case({"q": q, "k": k, "scale": scale, "scores": scores}, 2 * (b * h * dim + b * s * h * dim) + 4 * b * h * s,
                {"torch_matmul": lambda: torch.einsum("bhd,bshd->bhs", q, k).float() * scale},
                lambda: close(scores, torch.einsum("bhd,bshd->bhs", q.double(), k.double()) * scale, 1e-4, 1e-4),
                flops=2 * b * h * s * dim)


def causal_attention(d, dev):
    t, dim = d["T"], d["D"]
    q, k, v, o = randn(t, dim), randn(t, dim), randn(t, dim), empty(t, dim)
    scale = 1 / math.sqrt(dim)
    sdpa = lambda: F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None],
                                                   is_causal=True, scale=scale)[0, 0]
    return Case({"q": q, "k": k, "v": v, "scale": scale, "o": o}, 16 * t * dim, {"torch": sdpa},
                lambda: close(o, sdpa(), 1e-4, 1e-4), flops=2 * t * t * dim)


def causal_attention_16bit(name):
    """The tensor-core kernels beside torch's flash attention on the same 16-bit tensors."""
    def build(d, dev):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        dtype = getattr(torch, name)
        t, dim = d["T"], d["D"]
        q, k, v, o = randn(t, dim, dtype=dtype), randn(t, dim, dtype=dtype), randn(t, dim, dtype=dtype), \
            empty(t, dim, dtype=dtype)
        scale = 1 / math.sqrt(dim)

        def flash():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None], is_causal=True,
                                                      scale=scale)[0, 0]
        want = lambda: F.scaled_dot_product_attention(q[None, None].double(), k[None, None].double(),
                                                      v[None, None].double(), is_causal=True, scale=scale)[0, 0]
        tolerance = 1e-2 if name == "float16" else 4e-2
        return Case({"q": q, "k": k, "v": v, "scale": scale, "o": o}, 8 * t * dim,
                    {"torch_flash": flash} if dev == "cuda" else {}, lambda: close(o, want(), tolerance, tolerance),
                    flops=2 * t * t * dim)
    return build


# ---- the table ------------------------------------------------------------------------------------
SQUARE = {"M": 4096, "N": 4096}
SPECS = [
    Spec("activation_enum", "bias_act", {"M": 16384, "N": 1024}, "M", bias_act, ("N",), constexprs={"act": "gelu"}),
    Spec("atomic_counter", "count_above", {"N": 1 << 24}, "N", count_above, smallest=3000),
    Spec("atomic_float_max_cas", "atomic_max_f32", {"N": 1 << 24}, "N", atomic_max_f32, smallest=3000),
    Spec("attention_region_fold", "causal_attention", {"T": 4096, "D": 128}, "T", causal_attention, ("D",),
         small={"D": 16}, smallest=8, work_exponent=2),
    Spec("attention_tensor_cores", "causal_attention_f16", {"T": 4096, "D": 128}, "T",
         causal_attention_16bit("float16"), ("D",), small={"D": 16}, smallest=8, work_exponent=2,
         contraction=True),
    Spec("attention_tensor_cores", "causal_attention_bf16", {"T": 4096, "D": 128}, "T",
         causal_attention_16bit("bfloat16"), ("D",), small={"D": 16}, smallest=8, work_exponent=2,
         contraction=True),
    Spec("cummax", "row_cummax", SQUARE, "M", row_cummax, ("N",), small={"N": 100}),
    Spec("cumsum", "row_cumsum", SQUARE, "M", row_cumsum, ("N",), small={"N": 100}),
    Spec("cumsum", "exclusive_offsets", {"B": 1 << 24}, "B", exclusive_offsets, smallest=1000),
    Spec("decode_attention_scores_contract", "decode_scores", {"B": 8, "S": 2048, "H": 32, "D": 128}, "B",
         decode_scores, ("S", "H", "D"), small={"S": 16, "H": 4, "D": 32}, smallest=1, contraction=True),
    Spec("dot_f16_f32acc", "batched_dot_f16", {"B": 16384, "K": 2048}, "B", batched_dot, ("K",), contraction=True),
    Spec("ema_row_buffer", "ema_rows", {"M": 16384, "T": 1024}, "M", ema_rows, ("T",), small={"T": 40}),
    Spec("embedding_assume_in_bounds", "embedding_lookup", {"N": 32768, "V": 50000, "D": 1024}, "N",
         embedding_lookup, ("D",), small={"V": 100, "D": 64}, smallest=16),
    Spec("f8_rowwise_quant", "quantize_e4m3_rowwise", {"M": 16384, "N": 1024}, "M",
         f8_rowwise_quantizer("float8_e4m3fn"), ("N",)),
    Spec("f8_rowwise_quant", "quantize_e5m2_rowwise", {"M": 16384, "N": 1024}, "M",
         f8_rowwise_quantizer("float8_e5m2"), ("N",)),
    Spec("f8_rowwise_quant", "dequantize_e4m3_rowwise", {"M": 16384, "N": 1024}, "M", dequantize_e4m3, ("N",)),
    Spec("fast_activations_approx", "fast_silu_gelu", {"N": 1 << 24}, "N", fast_silu_gelu, smallest=1000),
    Spec("flag_publish_acquire_release", "window2_block_sums", {"NB": 1 << 16}, "NB", window2_block_sums),
    Spec("float_sign_bitcast", "sign_ops", {"N": 1 << 23}, "N", sign_ops, smallest=1000),
    Spec("floordiv_mod_i32", "periodic_wrap", {"N": 1 << 22}, "N", periodic_wrap, smallest=100),
    Spec("gelu_helper_call", "gelu_fwd", {"N": 1 << 24}, "N", gelu_fwd, smallest=3000),
    Spec("histogram_masked", "histogram256", {"N": 1 << 24}, "N", histogram256, smallest=5000),
    Spec("integer_hash_u32", "murmur3_bucket", {"N": 1 << 24}, "N", murmur3_bucket, smallest=1000),
    Spec("integer_hash_u32", "pcg_hash", {"H": 4096, "W": 4096}, "H", pcg_hash, ("W",), small={"W": 64}),
    Spec("interleave_unique_store", "interleave", {"N": 1 << 23}, "N", interleave, smallest=1000),
    Spec("kaiser_window_i0", "kaiser_frames", {"F": 16384, "L": 1024}, "F", kaiser_frames, ("L",), small={"L": 64}),
    Spec("layernorm", "layernorm", {"M": 16384, "N": 1024}, "M", layernorm, ("N",)),
    Spec("mxfp4_scaled_matmul", "mxfp4_matmul", {"M": 4096, "N": 4096, "G": 128}, "M", mxfp4_matmul, ("G",),
         small={"N": 33, "G": 2}, smallest=32, contraction=True),
    Spec("nan_max_vs_maximum_num", "nan_max", {"M": 8192, "N": 2048}, "M", nan_max, ("N",), small={"N": 100}),
    Spec("newton_rsqrt_constexpr", "newton_rsqrt", {"N": 1 << 24}, "N", newton_rsqrt, smallest=1000,
         constexprs={"ITERS": 3}),
    Spec("philox_dropout", "dropout", {"M": 8192, "N": 2048}, "M", dropout, ("N",), small={"N": 128}),
    Spec("prefix_logsumexp_region_scan", "prefix_logsumexp", {"M": 8192, "N": 2048}, "M", prefix_logsumexp, ("N",),
         small={"N": 40}),
    Spec("q4k_q8k_matvec", "q4k_q8k_matvec", {"R": 32768, "NB": 16}, "R", q4k_q8k_matvec, ("NB",),
         small={"NB": 2}, contraction=True),
    Spec("quantize_q8_k", "quantize_q8_k", {"R": 1024, "NB": 64}, "R", quantize_q8_k, ("NB",), small={"NB": 3},
         smallest=2),
    Spec("quantize_q8_k", "dequantize_q4_k", {"R": 2048, "NB": 32}, "R", dequantize_q4_k, ("NB",), small={"NB": 2},
         smallest=2),
    Spec("rank1_update_outer", "rank1_update", SQUARE, "M", rank1_update, small={"N": 65}, smallest=70),
    Spec("reverse_copy_negative_stride", "flip_rows", {"M": 8192, "N": 2048}, "M", flip_rows, ("N",),
         small={"N": 9}, strided=("x",)),
    Spec("rope_join_reshape", "rope_interleaved", {"T": 8192, "H": 32}, "T", rope_interleaved, ("H",),
         small={"H": 3}, smallest=2),
    Spec("row_argmax", "row_argmax", {"M": 512, "V": 32768}, "M", row_argmax, ("V",), small={"V": 40}),
    Spec("row_max", "row_max", {"M": 16384, "N": 2048}, "M", row_max, ("N",), small={"N": 20}),
    Spec("row_softmax", "row_softmax", {"M": 16384, "N": 1024}, "M", row_softmax, ("N",), small={"N": 100}),
    Spec("row_sum", "row_sum_f16", {"M": 16384, "N": 2048}, "M", row_sum_f16, ("N",), small={"N": 300}),
    Spec("row_sum", "row_sum_i8", {"M": 16384, "N": 4096}, "M", row_sum_i8, ("N",), small={"N": 300}),
    Spec("saxpy", "saxpy", {"N": 1 << 24}, "N", saxpy, smallest=1500),
    Spec("segment_sum_scatter_reduce", "segment_sum", {"N": 65536, "D": 256, "S": 1024}, "N", segment_sum, ("D",),
         small={"D": 4, "S": 5}, smallest=150),
    Spec("sparse_1of2_matmul", "sparse12_matmul", {"M": 4096, "KH": 2048, "K": 4096, "N": 4096}, "M",
         sparse12_matmul, ("KH", "K", "N"), small={"KH": 40, "K": 80, "N": 35}, smallest=20, contraction=True),
    Spec("sparse_2of4_matmul", "sparse24_matmul", {"M": 4096, "KH": 2048, "KQ": 1024, "K": 4096, "N": 4096}, "M",
         sparse24_matmul, ("KH", "KQ", "K", "N"), small={"KH": 40, "KQ": 20, "K": 80, "N": 35}, smallest=20,
         contraction=True),
    Spec("special_math", "special_math", {"N": 1 << 22}, "N", special_math, smallest=500),
    Spec("stochastic_rounding_bf16", "stochastic_round_bf16", {"N": 1 << 24}, "N", stochastic_round, smallest=2000),
    Spec("tiled_matmul", "matmul_tiled", {"M": 4096, "N": 4096, "K": 4096}, "M", matmul_tiled, ("K", "N"),
         small={"N": 66, "K": 50}, smallest=70, contraction=True),
    Spec("tuple_record_stats", "row_stats", {"M": 16384, "N": 1024}, "M", row_stats, ("N",), small={"N": 300}),
    Spec("vector_add", "vector_add", {"N": 1 << 24}, "N", vector_add, smallest=2500),
    Spec("welford_generic_reduce", "welford_rows", {"M": 16384, "N": 1024}, "M", welford_rows, ("N",),
         small={"N": 33}),
]
