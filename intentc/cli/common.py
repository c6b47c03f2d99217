"""What every subcommand shares: reading inputs, reporting diagnostics, exit codes.

Exit codes: 0 success, 1 the input has errors (diagnostics printed), 2 bad usage,
3 an internal error (a reproducer is written and its path printed).
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.nodes import Module
from ..parse import parse, split_input
from ..printer import print_module
from ..serialize import from_json

EXIT_OK, EXIT_INPUT_ERROR, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
SPLIT_SEPARATOR = "// -----\n"


class UsageError(Exception):
    """A mistake in how intentc was called (exit 2)."""


@dataclass
class Chunk:
    """One independent input: a whole file, or one `// -----` piece of it."""
    file: str
    text: str


def read_text(path: str) -> str:
    """A file (or stdin for `-`) as UTF-8 text, decoded strictly either way."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        return data.decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"is a directory, not a file: {path}") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start})") from None


def chunks(path: str, text: str, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(path, text)]
    return [Chunk(path, piece) for _, piece in split_input(text)]


def load(chunk: Chunk, fmt: str = "kir") -> Module:
    return from_json(chunk.text, chunk.file) if fmt == "json" else parse(chunk.text, chunk.file)


@dataclass
class DiagnosticStyle:
    """How diagnostics go to stderr: `text` (coloured on a terminal unless NO_COLOR is set)
    or `json` (one object a line, the fields the compile service returns)."""
    format: str = "text"
    color: bool = False


STYLE = DiagnosticStyle()
DIAGNOSTIC_FORMATS = ("text", "json")


def configure_diagnostics(format: str) -> None:
    STYLE.format = format
    STYLE.color = format == "text" and _terminal_wants_color(sys.stderr)


def _terminal_wants_color(stream) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def report(error: DiagnosticError) -> None:
    for diagnostic in error.diagnostics:
        report_one(diagnostic, error.source)


def report_one(diagnostic: Diagnostic, source: str | None = None) -> None:
    if STYLE.format == "json":
        print(json.dumps(diagnostic.to_dict(), ensure_ascii=False), file=sys.stderr)
    else:
        print(diagnostic.render(source, STYLE.color), file=sys.stderr)


def report_summary(text: str) -> None:
    """A line for people (`3 error(s) in 2 input(s)`); JSON readers get only diagnostics."""
    if STYLE.format == "text":
        print(text, file=sys.stderr)


def join_chunks(texts: list[str]) -> str:
    return SPLIT_SEPARATOR.join(texts)


def canonical(module: Module) -> str:
    return print_module(module)


def kernel_names(module: Module) -> list[str]:
    from ..ir.nodes import Kernel
    return [item.name for item in module.items if isinstance(item, Kernel)]


def only_kernel(module: Module, file: str, command: str) -> str:
    """The kernel to use when --kernel is left out: the file's one kernel."""
    names = kernel_names(module)
    if len(names) == 1:
        return names[0]
    if not names:
        raise UsageError(f"{file} has no kernel to {command}")
    raise UsageError(f"{file} has {len(names)} kernels ({', '.join('@' + n for n in names)}): "
                     f"choose one with --kernel NAME")


def write_file(path: Path, data: str | bytes) -> None:
    """Write an output file; a missing directory or a refused write is a usage error."""
    try:
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None

