"""Entry point: parse arguments, dispatch to a subcommand, map failures to exit codes."""
from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import traceback
from pathlib import Path

from ..version import __version__
from . import compile, convert, fmt, opt, remote, run, schema, serve, verify
from .common import EXIT_INTERNAL, EXIT_USAGE, UsageError

SUBCOMMANDS = (fmt, convert, schema, verify, run, opt, serve, remote, compile)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="intentc",
        description="Compiler for KIR. Exit codes: 0 ok, 1 input has errors, 2 bad usage, 3 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"intentc {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        return args.run(args)
    except UsageError as error:
        print(f"intentc: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception:  # noqa: BLE001  (the one place that turns a crash into exit 3)
        path = _write_reproducer(argv)
        print(f"intentc: internal error; a reproducer was written to {path}", file=sys.stderr)
        return EXIT_INTERNAL


def _write_reproducer(argv: list[str]) -> Path:
    """Save the command, its input files and the traceback, so the crash can be replayed."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    directory = Path(tempfile.mkdtemp(prefix=f"intentc-crash-{stamp}-"))
    lines = [f"intentc {__version__}", "command: intentc " + " ".join(argv), "", traceback.format_exc()]
    for arg in argv:
        candidate = Path(arg)
        if candidate.is_file():
            lines += ["", f"--- input {arg} ---", candidate.read_text(encoding="utf-8", errors="replace")]
    report = directory / "reproducer.txt"
    report.write_text("\n".join(lines), encoding="utf-8")
    return report


if __name__ == "__main__":
    sys.exit(main())
