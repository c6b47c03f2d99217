"""Run-time diagnostics of the interpreter: illegal inputs and bad launches.

The codes are shared with compiled code and live in `intentc.ir.errors`.
"""
from __future__ import annotations

import numpy as np

from ..diagnostics import Diagnostic, DiagnosticError


class InterpError(Exception):
    """An illegal input found while evaluating an op; the machine adds the location."""

    def __init__(self, code: str, message: str, hint: str = ""):
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


def first_coordinate(bad: np.ndarray) -> tuple[int, ...]:
    """The row-major-first coordinate where `bad` is true."""
    bad = np.asarray(bad)
    if bad.ndim == 0:
        return ()
    return tuple(int(c) for c in np.unravel_index(int(np.argmax(bad.ravel())), bad.shape))


def at(bad: np.ndarray) -> str:
    coordinate = first_coordinate(bad)
    return f"at element {list(coordinate)}" if coordinate else "on the scalar operand"


def check(bad: np.ndarray, code: str, message: str, hint: str = "") -> None:
    """Raise `code` if any element of `bad` is true, naming the first offending element."""
    bad = np.asarray(bad)
    if bad.any():
        raise InterpError(code, f"{message} {at(bad)}", hint)


def launch_error(code: str, message: str, file: str, line: int = 1, col: int = 1,
                 source: str | None = None, hint: str = "") -> DiagnosticError:
    return DiagnosticError([Diagnostic(code, message, line, col, file, hint)], source)
