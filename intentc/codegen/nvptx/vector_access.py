"""Predicated 16-byte accesses (`ld.global.v4` / `st.global.v4` under a predicate, as Triton
emits them): a register-form group of V = 4 consecutive 32-bit elements moves in one access
where its lanes are live, aligned and consecutive, and the predicated scalar accesses of the
same lanes cover the other groups, with no branch between them, so a thread's accesses of
all its groups stay in flight together (`TargetHooks.predicated_vector_load`/`_store`).
"""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import I1
from .lane_dots import global_vector

# register type -> the asm constraint of a 32-bit element (moved as .b32 bits)
WORDS = {"float": "f", "i32": "r"}


def load(em, pointer: ir.Value, ready: ir.Value, count: int) -> list[ir.Value] | None:
    word = pointer.type.pointee
    if str(word) not in WORDS or count != 4:
        return None
    return [em.b.bitcast(value, word) for value in global_vector(em.b, pointer, count, ready)]


def store(em, pointer: ir.Value, values: list[ir.Value], ready: ir.Value) -> bool:
    constraint = WORDS.get(str(values[0].type))
    if constraint is None or len(values) != 4:
        return False
    em.b.asm(ir.FunctionType(ir.VoidType(), [pointer.type, I1] + [v.type for v in values]),
             "@$1 st.global.v4.b32 [$0], {$2, $3, $4, $5};", ",".join(["l", "b"] + [constraint] * 4),
             [pointer, ready, *values], side_effect=True)
    return True
