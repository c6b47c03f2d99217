"""MLIR-style diagnostic expectations: `// expected-error@+1 {{substring}}` in the source.

`@+N` / `@-N` are relative to the comment's line, `@N` is an absolute line, and no `@` means
the comment's own line. A diagnostic matches an expectation on its line whose text is a
substring of its message (or is its code). Every expectation must be met and every
diagnostic expected.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..diagnostics import Diagnostic

_EXPECTED = re.compile(r"//\s*expected-(error|warning|note)(?:@([+-]?)(\d+))?\s*\{\{(.*?)\}\}")


@dataclass
class Expectation:
    line: int
    text: str
    written_at: int
    met: bool = False


def expectations(source: str) -> list[Expectation]:
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        for match in _EXPECTED.finditer(line):
            _, sign, offset, text = match.groups()
            target = number if offset is None else _target(number, sign, int(offset))
            found.append(Expectation(target, text, number))
    return found


def _target(line: int, sign: str, offset: int) -> int:
    if sign == "+":
        return line + offset
    if sign == "-":
        return line - offset
    return offset


def unmet(source: str, diagnostics: list[Diagnostic], file: str) -> list[str]:
    """Problems: expectations nothing met and diagnostics nothing expected (empty when all agree)."""
    expected = expectations(source)
    problems = []
    for diagnostic in diagnostics:
        match = next((e for e in expected if not e.met and e.line == diagnostic.line and
                      (e.text in diagnostic.message or e.text == diagnostic.code)), None)
        if match is None:
            problems.append(f"{diagnostic.location()}: unexpected error[{diagnostic.code}]: {diagnostic.message}")
        else:
            match.met = True
    for expectation in expected:
        if not expectation.met:
            problems.append(f"{file}:{expectation.line}: expected error "
                            f"{{{{{expectation.text}}}}} (written on line {expectation.written_at}) was not produced")
    return problems

