"""Helper functions emitted once per module and called where the lowering would otherwise
repeat a long straight-line body (a special function evaluated for every register slot of
an unrolled row): LLVM and the code generator then see the body once. The function is
internal and `noinline`, so the kernel pipeline (`nvptx/machine.py`) keeps it a call."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from .builder import LoweringBuilder

if TYPE_CHECKING:
    from .emitter import Emitter


def outlined(em: Emitter, name: str, type_: ir.FunctionType, body: Callable[..., ir.Value]) -> ir.Function:
    """The module's function `name` of `type_`, whose result is body(*arguments), built with
    `em` (its builder moved into the function while the body is emitted) on first use. The
    body must not allocate (no entry-block slots) nor raise checks: it is pure arithmetic."""
    existing = em.module.globals.get(name)
    if existing is not None:
        return existing
    function = ir.Function(em.module, type_, name)
    function.linkage = "internal"
    function.attributes.add("noinline")
    outer = em.b
    em.b = LoweringBuilder(function.append_basic_block("entry"))
    try:
        em.b.ret(body(*function.args))
    finally:
        em.b = outer
    return function
