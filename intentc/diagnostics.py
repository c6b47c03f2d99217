"""Diagnostics: `file:line:col: error[CODE]: message`, the source line and a caret.

Every stage reports problems as `Diagnostic`s; a stage that cannot go on raises
`DiagnosticError` with all it found. The codes are listed in docs/diagnostics.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    line: int
    col: int
    file: str = "<input>"
    hint: str = ""
    severity: str = "error"

    def location(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def render(self, source: str | None = None) -> str:
        head = f"{self.location()}: {self.severity}[{self.code}]: {self.message}"
        lines = [head]
        excerpt = _source_line(source, self.line)
        if excerpt is not None:
            gutter = f"{self.line:>5} | "
            lines.append(gutter + excerpt)
            caret_col = max(1, min(self.col, len(excerpt) + 1))
            lines.append(" " * (len(gutter) - 2) + "| " + " " * (caret_col - 1) + "^")
        if self.hint:
            lines.append(f"      = help: {self.hint}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "code": self.code, "message": self.message, "file": self.file,
            "line": self.line, "col": self.col, "hint": self.hint, "severity": self.severity,
        }


def _source_line(source: str | None, line: int) -> str | None:
    if source is None or line < 1:
        return None
    lines = source.split("\n")
    if line > len(lines):
        return None
    return lines[line - 1].expandtabs(1)


@dataclass
class DiagnosticError(Exception):
    diagnostics: list[Diagnostic]
    source: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        return "\n".join(d.render(self.source) for d in self.diagnostics)
