"""Scalar effects in a CTA-mapped iteration (docs/gpu.md, "Tiles, gathers and effects"):
an atomic on one element (a block's count added to a counter, a flag published, a CAS
retry loop) must happen once an iteration, not once a thread. Thread 0 of the iteration
makes the access and writes its results to shared memory; after a barrier every thread
reads them, so the values (a CAS's old value and success, a loaded flag) stay the same on
every thread and the control flow that depends on them stays uniform. The barrier before
the access also orders the other threads' earlier writes before a release made by
thread 0 (bar.sync, then a release at gpu scope: the PTX memory model's cumulativity).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.types import I32, I64
from .cta import CtaPlan, barrier, from_word, on_thread_zero, to_word

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

MAX_RESULTS = 4             # an access's results (a CAS: old value, success)


def _words(em: Emitter) -> ir.GlobalVariable:
    name = "intentc_cta_once"
    existing = em.module.globals.get(name)
    if existing is None:
        existing = ir.GlobalVariable(em.module, ir.ArrayType(I64, MAX_RESULTS), name, addrspace=3)
        existing.linkage = "internal"
        existing.initializer = ir.Constant(ir.ArrayType(I64, MAX_RESULTS), None)
    return existing


def once(em: Emitter, plan: CtaPlan, effect: Callable[[], Sequence[ir.Value]]) -> list[ir.Value]:
    """effect() on the iteration's thread 0; every thread gets its values."""
    b, words, zero = em.b, _words(em), ir.Constant(I32, 0)
    barrier(em)             # earlier readers of the words are done; earlier writes are ordered
    types: list[ir.Type] = []

    def run() -> None:
        for number, value in enumerate(effect()):
            types.append(value.type)
            b.store(to_word(em, value), b.gep(words, [zero, ir.Constant(I32, number)], inbounds=True))
    on_thread_zero(em, plan, run)
    barrier(em)
    return [from_word(em, b.load(b.gep(words, [zero, ir.Constant(I32, number)], inbounds=True)), type_)
            for number, type_ in enumerate(types)]
