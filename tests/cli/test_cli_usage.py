"""Usage errors with the subcommand's usage and a did-you-mean; diagnostics as JSON lines for
tools, coloured only on a terminal without NO_COLOR (issue 17)."""
from __future__ import annotations

import io
import json
import subprocess
import sys

from sample_files import ROOT
from intentc.cli import common
from intentc.cli.main import main

BAD = "kernel @k(%a: f32) {\n  %r = exp %a : f33\n  %s = add %a, %a : f32\n  %s = neg %a : f32\n}\n"


def test_a_misspelt_option_prints_the_subcommand_usage_and_a_suggestion(capsys):
    assert main(["compile", str(ROOT / "ir_samples" / "saxpy.kir"), "--kernal", "saxpy"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("usage: intentc compile ")
    assert "unrecognized arguments: --kernal saxpy (did you mean `--kernel`?)" in error


def test_a_misspelt_subcommand_gets_a_suggestion(capsys):
    assert main(["verfy", "x.kir"]) == 2
    assert "(did you mean `verify`?)" in capsys.readouterr().err


def test_json_diagnostics_are_one_object_a_line_with_the_service_fields(tmp_path, capsys):
    path = tmp_path / "bad.kir"
    path.write_text(BAD)
    for argv in (["verify", "--diagnostics-format", "json", str(path)],
                 ["--diagnostics-format=json", "verify", str(path)]):
        assert main(argv) == 1
        lines = capsys.readouterr().err.splitlines()
        objects = [json.loads(line) for line in lines]
        assert objects and all(set(o) == {"code", "message", "file", "line", "col", "hint", "severity"}
                               for o in objects)
        assert objects[0]["code"] == "E0011" and objects[0]["line"] == 2 and objects[0]["file"] == str(path)


def test_json_diagnostics_from_the_verifier(tmp_path, capsys):
    path = tmp_path / "twice.kir"
    path.write_text(BAD.replace("f33", "f32"))
    assert main(["verify", "--diagnostics-format", "json", str(path)]) == 1
    (only,) = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert (only["code"], only["line"]) == ("E0051", 4)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stderr", _Terminal())
    try:
        common.configure_diagnostics("text")
        assert common.STYLE.color
        monkeypatch.setenv("NO_COLOR", "1")
        common.configure_diagnostics("text")
        assert not common.STYLE.color
        monkeypatch.delenv("NO_COLOR")
        monkeypatch.setattr(sys, "stderr", io.StringIO())
        common.configure_diagnostics("text")
        assert not common.STYLE.color
    finally:
        common.configure_diagnostics("text")


def test_coloured_text_has_the_same_words(tmp_path):
    from intentc import DiagnosticError, parse
    try:
        parse(BAD, "bad.kir")
    except DiagnosticError as error:
        plain, coloured = error.render(), error.render(color=True)
    assert "\x1b[" in coloured and "\x1b[" not in plain
    assert __import__("re").sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_piped_output_has_no_colour(tmp_path):
    path = tmp_path / "bad.kir"
    path.write_text(BAD)
    result = subprocess.run([sys.executable, "-m", "intentc.cli.main", "verify", str(path)],
                            capture_output=True, text=True, env={"TERM": "xterm", "PATH": ""})
    assert result.returncode == 1 and "error[E0011]" in result.stderr and "\x1b[" not in result.stderr


def test_stdin_is_decoded_as_strictly_as_a_file():
    result = subprocess.run([sys.executable, "-m", "intentc.cli.main", "verify", "-"], input=b"kernel \xff",
                            capture_output=True)
    assert result.returncode == 2 and b"is not UTF-8 text" in result.stderr
