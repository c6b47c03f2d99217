"""FileCheck tests of generated code: every `filecheck/*.kir` file holds lit-style RUN lines

    // RUN: intentc compile %s --kernel K --target ptx --arch sm_90 | filecheck %s --check-prefix=PTX

Each RUN line runs `intentc compile` in-process on the file and checks the artifact (LLVM IR
or PTX text) with the `filecheck` package against the file's lines of that prefix. Several
RUN lines with the same compile command share one compile: a file checks properties of the
whole output (no `.ftz` anywhere) under a prefix of only CHECK-NOT lines, next to the
ordered checks of another prefix, without compiling twice.
"""
from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path

import pytest

from lit_runner import filecheck, run_intentc

CASES = sorted((Path(__file__).parent / "filecheck").glob("*.kir"))
RUN_LINE = re.compile(r"^// RUN: intentc compile %s(?P<compile>[^|]*)\| filecheck %s(?P<check>.*)$", re.M)


def _runs():
    for path in CASES:
        lines = RUN_LINE.findall(path.read_text())
        assert lines, f"{path.name} has no RUN line"
        for compile_args, check_args in lines:
            prefix = re.search(r"--check-prefix[= ](\S+)", check_args)
            yield pytest.param(path, compile_args.strip(), check_args,
                               id=f"{path.stem}:{prefix.group(1) if prefix else 'CHECK'}")


@functools.cache
def compile_artifact(path: Path, compile_args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `intentc compile` on `path`; cached per command."""
    return run_intentc(["compile", str(path), *shlex.split(compile_args)])


@pytest.mark.parametrize("path, compile_args, check_args", list(_runs()))
def test_codegen_filecheck(path, compile_args, check_args, tmp_path, capsys):
    status, output, errors = compile_artifact(path, compile_args)
    assert status == 0, errors
    produced = tmp_path / "artifact.txt"
    produced.write_text(output)
    assert filecheck(path, produced, check_args) == 0, capsys.readouterr().err + "\n--- artifact ---\n" + output
