"""FileCheck tests: every `filecheck/*.kir` file holds lit-style RUN lines

    // RUN: intentc opt %s --pass-pipeline=cse | filecheck %s --check-prefix=CHECK

Each RUN line runs `intentc opt` in-process on the file and checks its stdout with the
`filecheck` package against the file's CHECK lines. Comment lines are dropped from the
output first: the printer keeps comments, and the CHECK lines themselves would otherwise
be found in the output and match themselves.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from lit_runner import filecheck, run_intentc

CASES = sorted((Path(__file__).parent / "filecheck").glob("*.kir"))
RUN_LINE = re.compile(r"^// RUN: intentc opt %s(?P<opt>[^|]*)\| filecheck %s(?P<check>.*)$", re.M)
COMMENT_LINE = re.compile(r"^\s*//.*\n?", re.M)


def _runs():
    for path in CASES:
        lines = RUN_LINE.findall(path.read_text())
        assert lines, f"{path.name} has no RUN line"
        for number, (opt_args, check_args) in enumerate(lines):
            yield pytest.param(path, opt_args, check_args, id=f"{path.stem}:{number}")


@pytest.mark.parametrize("path, opt_args, check_args", list(_runs()))
def test_filecheck(path, opt_args, check_args, tmp_path, capsys):
    status, output, errors = run_intentc(["opt", str(path), *shlex.split(opt_args)])
    assert status == 0, errors
    produced = tmp_path / "output.kir"
    produced.write_text(COMMENT_LINE.sub("", output))
    assert filecheck(path, produced, check_args) == 0, capsys.readouterr().err + "\n--- output ---\n" + produced.read_text()
