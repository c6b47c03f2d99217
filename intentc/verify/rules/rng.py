"""Deterministic RNG (§12): u64 seed, u64 or index counter, u32 bits, f32 uniform."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.nodes import Op
from . import Args, rule
from .common import Results, expect_result, scalar_of, tensor_of

if TYPE_CHECKING:
    from ..walk import Verifier

_RESULT = {"random_bits": ("u32", "random_bits yields one u32 Philox word per counter"),
           "uniform": ("f32", "uniform is defined only as f32(bits >> 8) * 2^-24")}


@rule("random_bits", "uniform")
def random(ctx: Verifier, op: Op, args: Args) -> Results:
    if not scalar_of(ctx, op, args[0], "seed", ("u64",), "E901", "cast the seed to u64: Philox keys are "
                     "the low and high 32 bits of a u64"):
        return None
    counter = tensor_of(ctx, op, args[1], "counter")
    if counter is None:
        return None
    if counter.dtype not in ("u64", "index"):
        ctx.error("E902", op, f"the counter of `{op.name}` is `{counter.dtype}`, not u64 or index",
                  "cast the counter to u64 or index (non-negative)")
        return None
    dtype, why = _RESULT[op.name]
    expect_result(ctx, op, dtype, counter.shape, "E903", why)
    return None
