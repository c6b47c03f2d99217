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

    def render(self, source: str | None = None, color: bool = False) -> str:
        paint = _paint if color else _plain
        head = (f"{paint(self.location() + ':', BOLD)} {paint(f'{self.severity}[{self.code}]:', RED)} "
                f"{paint(self.message, BOLD)}")
        lines = [head]
        excerpt = _source_line(source, self.line)
        if excerpt is not None:
            excerpt, col = _window(excerpt, self.col)
            gutter = f"{self.line:>5} | "
            lines.append(paint(gutter, BLUE) + excerpt)
            caret_col = max(1, min(col, len(excerpt) + 1))
            lines.append(paint(" " * (len(gutter) - 2) + "| ", BLUE) + " " * (caret_col - 1) + paint("^", GREEN))
        if self.hint:
            lines.append(f"      = {paint('help:', BOLD)} {self.hint}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "code": self.code, "message": self.message, "file": self.file,
            "line": self.line, "col": self.col, "hint": self.hint, "severity": self.severity,
        }


# ANSI styles for terminals (the CLI decides when: a terminal, and no NO_COLOR).
BOLD, RED, GREEN, BLUE = "1", "1;31", "1;32", "1;34"
_EXCERPT_WIDTH = 120


def _paint(text: str, style: str) -> str:
    return f"\x1b[{style}m{text}\x1b[0m"


def _plain(text: str, style: str) -> str:
    return text


def _window(excerpt: str, col: int) -> tuple[str, int]:
    """At most _EXCERPT_WIDTH characters of a long source line, around the column."""
    if len(excerpt) <= _EXCERPT_WIDTH:
        return excerpt, col
    start = max(0, min(col - 1 - _EXCERPT_WIDTH // 2, len(excerpt) - _EXCERPT_WIDTH))
    shown = excerpt[start:start + _EXCERPT_WIDTH]
    prefix = "…" if start else ""
    suffix = "…" if start + _EXCERPT_WIDTH < len(excerpt) else ""
    return prefix + shown + suffix, col - start + len(prefix)


def _source_line(source: str | None, line: int) -> str | None:
    if source is None or line < 1:
        return None
    lines = source.split("\n")
    if line > len(lines):
        return None
    return "".join(_shown(char) for char in lines[line - 1].expandtabs(1))


def _shown(char: str) -> str:
    """A character as the excerpt shows it: one that would end the line for a reader that
    splits lines the Unicode way (U+2028, U+0085, form feed, ...) or another control character
    is one U+FFFD, so the excerpt stays one line and the caret keeps its column."""
    return "\ufffd" if len(f"a{char}b".splitlines()) > 1 or (char < " " and char != "\t") or char == "\x7f" else char


@dataclass
class DiagnosticError(Exception):
    diagnostics: list[Diagnostic]
    source: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        return self.render()

    def render(self, color: bool = False) -> str:
        return "\n".join(d.render(self.source, color) for d in self.diagnostics)
