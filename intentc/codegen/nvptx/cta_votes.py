"""A CTA's `any` / `all` of one bool a thread through the barrier's own reduction
(`bar.red.or.pred`, `bar.red.and.pred`): one barrier instead of a butterfly of five shuffles
within each warp, the warps' results through shared memory between a barrier pair, and a
butterfly over them (issue #13: `prefix_logsumexp`'s summarizer asks whether any element is
live, about fifty LLVM instructions a row). An or / and of bools has one result whatever the
order, so every thread gets the same bit either way."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import I32
from .cta import CtaPlan

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

VOTES = {"any": "llvm.nvvm.barrier0.or", "all": "llvm.nvvm.barrier0.and"}


def votes(plan: CtaPlan, kind: str, dtype: str) -> bool:
    """Whether the CTA combines this reduction's partials with one barrier: a bool `any` or
    `all` whose iteration has the whole CTA (several iterations a CTA would mix)."""
    return kind in VOTES and dtype == "bool" and plan.width == plan.threads and not plan.grid


def cta_vote(em: Emitter, kind: str, value: ir.Value) -> ir.Value:
    """The CTA's `kind` of every thread's bool `value` (each thread gets it)."""
    b = em.b
    vote = b.call(em.declare(VOTES[kind], I32, [I32]), [b.zext(value, I32)])
    return b.icmp_unsigned("!=", vote, ir.Constant(I32, 0))
