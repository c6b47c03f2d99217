"""The lit-style FileCheck machinery the pass and codegen tests share (a plain module:
`conftest` names collide across folders): run `intentc` in-process, check its output
against a file's CHECK lines with the `filecheck` package."""
from __future__ import annotations

import contextlib
import io
import shlex
from pathlib import Path

from filecheck.matcher import Matcher
from filecheck.options import parse_argv_options

from intentc.cli.main import main


def run_intentc(argv: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `intentc argv...`, in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def filecheck(check_file: Path, output: Path, check_args: str) -> int:
    """FileCheck's exit status for `output` against `check_file` (its messages go to stderr)."""
    options = parse_argv_options(["filecheck", str(check_file), "--input-file", str(output), *shlex.split(check_args)])
    return Matcher.from_opts(options).run()
