"""The KIR verifier: every statically checkable rule of the spec chapter *Types, Numerics
and Effects*, as docs/kir.md defines the ops. One walk; each op is checked against the op
table (structure.py), its SSA scope (scope.py) and the rule of its family (rules/)."""
from __future__ import annotations

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.nodes import Module
from .codes import CODES

__all__ = ["CODES", "verify", "verify_or_raise"]


def verify(module: Module, file: str = "<input>") -> list[Diagnostic]:
    """All diagnostics of a module, in source order (empty when it verifies)."""
    from .walk import verify_module
    return sorted(verify_module(module, file), key=lambda d: (d.line, d.col))


def verify_or_raise(module: Module, file: str = "<input>", source: str | None = None) -> Module:
    diagnostics = verify(module, file)
    if diagnostics:
        raise DiagnosticError(diagnostics, source)
    return module
