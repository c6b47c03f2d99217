"""`intentc verify` exit codes and output."""
from __future__ import annotations

import json

from intentc.cli.main import main

CLEAN = "kernel @k(%a: f32) {\n  %b = exp %a : f32\n}\n"
BAD = "kernel @k(%a: i32) {\n  %b = div %a, %a : i32\n}\n"
ANNOTATED = "kernel @k(%a: i32) {\n  // expected-error@+1 {{not defined on integers}}\n  %b = div %a, %a : i32\n}\n"


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_clean_file_exits_0(tmp_path, capsys):
    assert main(["verify", _write(tmp_path, "ok.kir", CLEAN)]) == 0
    assert capsys.readouterr().err == ""


def test_error_exits_1_with_rendered_diagnostic(tmp_path, capsys):
    assert main(["verify", _write(tmp_path, "bad.kir", BAD)]) == 1
    err = capsys.readouterr().err
    assert "error[E301]" in err and "spec §4" in err and "^" in err and "help:" in err


def test_syntax_error_exits_1(tmp_path, capsys):
    assert main(["verify", _write(tmp_path, "syntax.kir", "kernel @k( {\n")]) == 1
    assert "error[E000" in capsys.readouterr().err


def test_missing_file_is_usage_error(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "nope.kir")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_verify_diagnostics_met_exits_0(tmp_path):
    assert main(["verify", "--verify-diagnostics", _write(tmp_path, "a.kir", ANNOTATED)]) == 0


def test_verify_diagnostics_unexpected_error_exits_1(tmp_path, capsys):
    assert main(["verify", "--verify-diagnostics", _write(tmp_path, "b.kir", BAD)]) == 1
    assert "unexpected error[E301]" in capsys.readouterr().err


def test_verify_diagnostics_missing_error_exits_1(tmp_path, capsys):
    text = "// expected-error@+2 {{never}}\n" + CLEAN
    assert main(["verify", "--verify-diagnostics", _write(tmp_path, "c.kir", text)]) == 1
    assert "expected error {{never}}" in capsys.readouterr().err


def test_split_input_file_checks_each_piece(tmp_path):
    text = ANNOTATED + "// -----\n" + CLEAN
    path = _write(tmp_path, "d.kir", text)
    assert main(["verify", "--verify-diagnostics", "--split-input-file", path]) == 0
    assert main(["verify", "--split-input-file", path]) == 1


def test_json_input(tmp_path):
    source = _write(tmp_path, "e.kir", BAD)
    target = str(tmp_path / "e.json")
    assert main(["convert", source, "--to", "json", "-o", target]) == 0
    assert json.loads((tmp_path / "e.json").read_text())["kir_json"] == 1
    assert main(["verify", target]) == 1
