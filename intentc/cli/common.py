"""What every subcommand shares: reading inputs, reporting diagnostics, exit codes.

Exit codes: 0 success, 1 the input has errors (diagnostics printed), 2 bad usage,
3 an internal error (a reproducer is written and its path printed).
"""
from __future__ import annotations

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
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
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


def report(error: DiagnosticError) -> None:
    print(error.render(), file=sys.stderr)


def report_one(diagnostic: Diagnostic, source: str | None = None) -> None:
    print(diagnostic.render(source), file=sys.stderr)


def join_chunks(texts: list[str]) -> str:
    return SPLIT_SEPARATOR.join(texts)


def canonical(module: Module) -> str:
    return print_module(module)
