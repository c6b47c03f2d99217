"""Run-time diagnostics of the interpreter: illegal inputs and bad launches.

Codes (see the report / docs/diagnostics.md): R01xx launch problems, R02xx illegal
arithmetic and conversions, R03xx illegal memory access, R04xx illegal operands of
structured ops, R09xx programs the interpreter cannot run.
"""
from __future__ import annotations

import numpy as np

from ..diagnostics import Diagnostic, DiagnosticError

LAUNCH_MISSING_INPUT = "R0101"
LAUNCH_UNKNOWN_INPUT = "R0102"
LAUNCH_DTYPE = "R0103"
LAUNCH_RANK = "R0104"
LAUNCH_EXTENT = "R0105"
LAUNCH_CONSTEXPR = "R0106"
LAUNCH_NO_KERNEL = "R0107"
LAUNCH_LAYOUT = "R0108"

DIVISION_BY_ZERO = "R0201"
DIVISION_OVERFLOW = "R0202"
SHIFT_OUT_OF_RANGE = "R0203"
FLOAT_TO_INT = "R0204"
F8E4M3_OVERFLOW = "R0205"
NEGATIVE_EXTENT = "R0206"
NEGATIVE_COUNTER = "R0207"

OUT_OF_BOUNDS = "R0301"
UNWRITTEN_READ = "R0302"
WRITE_COLLISION = "R0303"
NOT_INJECTIVE = "R0304"
ASSUME_VIOLATED = "R0305"
WRONG_DIRECTION = "R0306"
DATA_RACE = "R0307"

SPARSE_METADATA = "R0401"
HISTOGRAM_RANGE = "R0402"
LOOP_STEP = "R0403"
SHAPE_MISMATCH = "R0404"
EMPTY_ARG_REDUCE = "R0405"

UNSUPPORTED = "R0901"
RESULT_TYPE = "R0902"


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
