"""Loops LLVM must not unroll: a loop whose body is emitted once on purpose (compile time,
issue #13: `cta_group_loop.py`'s trips) keeps its one
copy through the kernel pipeline's full unrolling of short constant-trip loops."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir
from llvmlite.ir.values import MDValue

from ..llvm.types import I64

LOOP_IDS = 1 << 20

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter


def rolled_loop(em: Emitter, trips: int, body: Callable[[ir.Value], None], name: str) -> None:
    """body(i) for i = 0 .. trips - 1 (an i64 value) as one loop marked
    `llvm.loop.unroll.disable` (the loop id is the self-referencing node LLVM's loop metadata
    expects)."""
    latches: list[ir.Block] = []

    def trip(index: ir.Value) -> None:
        body(index)
        latches.append(em.b.block)       # em.loop ends this block with the back edge
    em.loop(ir.Constant(I64, 0), ir.Constant(I64, trips), trip, name=name)
    module = em.module
    option = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    # numbered apart from llvmlite's own (it numbers its nodes by their count, some later)
    loop_id = MDValue(module, [], name=str(LOOP_IDS + len(module.metadata)))
    loop_id.operands = (loop_id, option)
    latches[-1].terminator.set_metadata("llvm.loop", loop_id)
