"""How the GPU ors run-time checks into their sites' i8 flags (`TargetHooks.raise_flag`).

An unrolled register-form iteration checks every slot of every access. `flag | zext(bad)` a
slot made chains of `or` that InstCombine folds into one chain of i1 ors a flag, and then asks
`isImpliedCondition` about every link against the others (about 2/3 of the kernel pipeline's
time for vector add). `umax(flag, zext(bad))` means the same (nonzero once any `bad` held) and
InstCombine leaves it alone. Emitted where the check is, its `selp` and `max` a slot sit
between the slots' loads, and the H200 ran vector add 13 % and softmax 7 % slower
(bench/results/gpu-samples-ab-20261201-s5-h200-llvmopt-r2.json); so the checks of a basic
block are settled at its end (before its terminator), after its loads, when the flags are
next read (`Emitter.flush_checks`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter


class PendingChecks:
    """The checks raised since the flags were last read, by basic block."""

    def __init__(self) -> None:
        self.pending: dict[ir.Block, list[tuple[ir.Value, ir.Value]]] = {}

    def raise_flag(self, em: Emitter, flag: ir.Value, bad: ir.Value) -> None:
        self.pending.setdefault(em.b.block, []).append((flag, bad))

    def settle(self, em: Emitter) -> None:
        here = em.b.block
        for block, checks in self.pending.items():
            if block.is_terminated:
                em.b.position_before(block.terminator)
            else:
                em.b.position_at_end(block)
            raised: dict[ir.Value, list[ir.Value]] = {}
            for flag, bad in checks:
                raised.setdefault(flag, []).append(bad)
            for flag, bads in raised.items():
                value = em.b.load(flag)
                for bad in bads:
                    value = _umax(em, value, bad)
                em.b.store(value, flag)
        self.pending.clear()
        em.b.position_at_end(here)


def _umax(em: Emitter, flag: ir.Value, bad: ir.Value) -> ir.Value:
    umax = em.declare(f"llvm.umax.{flag.type}", flag.type, [flag.type, flag.type])
    return em.b.call(umax, [flag, em.b.zext(bad, flag.type)])
