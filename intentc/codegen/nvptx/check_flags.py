"""How the GPU ors a run-time check into its site's i8 flag (`TargetHooks.raise_flag`).

An unrolled register-form iteration checks every slot of every access: `flag | zext(bad)`
a slot made chains of `or` that InstCombine folds into one i1 `or` chain a flag, and then
asks `isImpliedCondition` about every link against the others (about 2/3 of the kernel
pipeline's time for vector add). `umax(flag, zext(bad))` means the same (nonzero once any
`bad` held) and InstCombine leaves it alone: one `selp` and one `max` a slot in the PTX."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter


def raise_flag(em: Emitter, flag: ir.Value, bad: ir.Value) -> ir.Value:
    umax = em.declare(f"llvm.umax.{flag.type}", flag.type, [flag.type, flag.type])
    return em.b.call(umax, [flag, em.b.zext(bad, flag.type)])
