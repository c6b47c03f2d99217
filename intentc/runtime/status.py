"""The status word a compiled kernel leaves (`intentc.codegen.llvm.abi`) as the diagnostic
the interpreter gives for the same illegal input: the check site's code and message, at its op."""
from __future__ import annotations

from ..codegen.llvm.abi import KernelAbi
from ..diagnostics import Diagnostic, DiagnosticError


def illegal_input(abi: KernelAbi, ident: int, file: str, source: str | None) -> DiagnosticError:
    site = abi.sites[ident - 1]
    return DiagnosticError([Diagnostic(site.code, f"`{site.op}`: {site.message}", site.line, site.col, file,
                                       site.hint)], source)
