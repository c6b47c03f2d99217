"""`intentc verify`: check KIR files against the spec; with --verify-diagnostics, check that
the diagnostics are exactly the `// expected-error` annotations of the input (MLIR style)."""
from __future__ import annotations

import sys
from pathlib import Path

from ..diagnostics import Diagnostic, DiagnosticError
from ..verify import verify
from ..verify.expectations import unmet
from .common import EXIT_INPUT_ERROR, EXIT_OK, Chunk, chunks, load, read_text, report_one, report_summary


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("verify", help="check KIR files against the language rules")
    p.add_argument("files", nargs="+", metavar="FILE", help="KIR text (.kir) or KIR JSON (.json) files; - for stdin")
    p.add_argument("--verify-diagnostics", action="store_true",
                   help="expect exactly the `// expected-error@+N {{text}}` annotations of the input")
    p.add_argument("--split-input-file", action="store_true", help="verify each `// -----` piece alone")
    p.set_defaults(run=run)


def diagnostics_of(chunk: Chunk, fmt: str = "kir") -> list[Diagnostic]:
    """Parse and verify one input; parse errors and verifier errors alike are diagnostics."""
    try:
        module = load(chunk, fmt)
    except DiagnosticError as error:
        return list(error.diagnostics)
    return verify(module, chunk.file)


def run(args) -> int:
    status, inputs, problems = EXIT_OK, 0, 0
    for path in args.files:
        text = read_text(path)
        fmt = "json" if Path(path).suffix == ".json" else "kir"
        for chunk in chunks(path, text, args.split_input_file and fmt == "kir"):
            inputs += 1
            found = diagnostics_of(chunk, fmt)
            if args.verify_diagnostics:
                failures = unmet(chunk.text, found, path)
                for failure in failures:
                    print(failure, file=sys.stderr)
                problems += len(failures)
            else:
                for diagnostic in found:
                    report_one(diagnostic, chunk.text)
                problems += len(found)
    if problems:
        status = EXIT_INPUT_ERROR
        noun = "expectation problem(s)" if args.verify_diagnostics else "error(s)"
        report_summary(f"intentc verify: {problems} {noun} in {inputs} input(s)")
    return status
