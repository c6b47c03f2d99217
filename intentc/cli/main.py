"""Entry point: parse arguments, dispatch to a subcommand, map failures to exit codes."""
from __future__ import annotations

import argparse
import datetime
import difflib
import re
import sys
import tempfile
import traceback
from pathlib import Path

from ..version import __version__
from . import compile, convert, fmt, opt, remote, run, schema, serve, verify
from .common import DIAGNOSTIC_FORMATS, EXIT_INTERNAL, EXIT_USAGE, UsageError, configure_diagnostics

SUBCOMMANDS = (fmt, convert, schema, verify, run, opt, serve, remote, compile)


class _Parser(argparse.ArgumentParser):
    """argparse, with a did-you-mean for a misspelt option or subcommand."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{self._suggestion(message)}\n")

    def _suggestion(self, message: str) -> str:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            word, known = choice.group(1), re.findall(r"'?([\w-]+)'?", choice.group(2))
        else:
            unknown = re.search(r"unrecognized arguments: (\S+)", message)
            if unknown is None:
                return ""
            word, known = unknown.group(1).split("=")[0], list(self._option_string_actions)
        close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
        return f" (did you mean `{close[0]}`?)" if close else ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="intentc",
        description="Compiler for KIR. Exit codes: 0 ok, 1 input has errors, 2 bad usage, 3 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"intentc {__version__}")
    _add_diagnostics_format(parser, "text")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
        command.add_parser(subparsers)
    for subparser in subparsers.choices.values():
        _add_diagnostics_format(subparser, argparse.SUPPRESS)   # given after the command too
        subparser.set_defaults(command_parser=subparser)
    return parser


def _add_diagnostics_format(parser: argparse.ArgumentParser, default) -> None:
    parser.add_argument("--diagnostics-format", choices=DIAGNOSTIC_FORMATS, default=default,
                        help="text (coloured on a terminal unless NO_COLOR is set) or json: one object a line "
                             "with code, message, file, line, col, hint, severity (default text)")


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Unknown options are reported by the subcommand they were given to, with its usage."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    configure_diagnostics(args.diagnostics_format)
    try:
        return args.run(args)
    except UsageError as error:
        print(f"intentc: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception:  # the one place that turns a crash into exit 3
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
