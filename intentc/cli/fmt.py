"""`intentc fmt`: print, check or rewrite files in canonical form."""
from __future__ import annotations

import sys
from pathlib import Path

from ..diagnostics import DiagnosticError
from .common import (
    EXIT_INPUT_ERROR, EXIT_OK, UsageError, canonical, chunks, join_chunks, load, read_text, report, write_file,
)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("fmt", help="print KIR files in canonical form")
    p.add_argument("files", nargs="+", metavar="FILE", help="KIR files (- for stdin)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if a file is not canonical")
    mode.add_argument("--in-place", "-i", action="store_true", help="rewrite files in canonical form")
    p.add_argument("--split-input-file", action="store_true", help="format each `// -----` piece alone")
    p.set_defaults(run=run)


def run(args) -> int:
    if args.in_place and "-" in args.files:
        raise UsageError("--in-place cannot rewrite stdin")
    status = EXIT_OK
    for path in args.files:
        text = read_text(path)
        try:
            formatted = join_chunks([canonical(load(c)) for c in chunks(path, text, args.split_input_file)])
        except DiagnosticError as error:
            report(error)
            status = EXIT_INPUT_ERROR
            continue
        if args.check:
            if formatted != text:
                print(f"{path}: not in canonical form (run `intentc fmt --in-place {path}`)", file=sys.stderr)
                status = EXIT_INPUT_ERROR
        elif args.in_place:
            if formatted != text:
                write_file(Path(path), formatted)
        else:
            sys.stdout.write(formatted)
    return status
