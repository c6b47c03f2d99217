"""The `intentc` command line: fmt, convert, schema, --version and the exit codes."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sample_files import SAMPLES
from intentc.cli.main import main as intentc_main
from intentc.cli import fmt as fmt_command

SAMPLE = SAMPLES[0]
MESSY = "kernel   @k( %x : view<f32,[%N],in> ) {\n// note\n   %a=neg %x : f32\n}\n"
CANONICAL = "kernel @k(%x: view<f32, [%N], in>) {\n  // note\n  %a = neg %x : f32\n}\n"


def intentc(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "intentc.cli.main", *map(str, args)], input=stdin,
                          capture_output=True, text=True)


def test_version():
    result = intentc("--version")
    assert result.returncode == 0 and result.stdout.startswith("intentc ")


def test_fmt_prints_canonical_text(tmp_path):
    path = tmp_path / "messy.kir"
    path.write_text(MESSY)
    result = intentc("fmt", path)
    assert (result.returncode, result.stdout) == (0, CANONICAL)


def test_fmt_check_fails_on_non_canonical_and_passes_on_canonical(tmp_path):
    messy, clean = tmp_path / "messy.kir", tmp_path / "clean.kir"
    messy.write_text(MESSY)
    clean.write_text(CANONICAL)
    assert intentc("fmt", "--check", clean).returncode == 0
    result = intentc("fmt", "--check", messy, clean)
    assert result.returncode == 1 and "messy.kir: not in canonical form" in result.stderr
    assert messy.read_text() == MESSY


def test_fmt_in_place_rewrites(tmp_path):
    path = tmp_path / "messy.kir"
    path.write_text(MESSY)
    assert intentc("fmt", "--in-place", path).returncode == 0
    assert path.read_text() == CANONICAL


def test_fmt_reads_stdin():
    result = intentc("fmt", "-", stdin=MESSY)
    assert (result.returncode, result.stdout) == (0, CANONICAL)


def test_fmt_split_input_file_formats_each_piece(tmp_path):
    path = tmp_path / "split.kir"
    path.write_text(MESSY + "// -----\n" + "kernel @j() {\n}\n")
    result = intentc("fmt", "--split-input-file", path)
    assert result.stdout == CANONICAL + "// -----\n" + "kernel @j() {\n}\n"


def test_split_input_file_keeps_line_numbers(tmp_path):
    path = tmp_path / "split.kir"
    path.write_text("kernel @a() {\n}\n// -----\nkernel @b() {\n  %x = bogus : f32\n}\n")
    result = intentc("fmt", "--split-input-file", path)
    assert result.returncode == 1
    assert f"{path}:5:8: error[E0010]" in result.stderr


def test_syntax_error_exits_1_with_diagnostic(tmp_path):
    path = tmp_path / "bad.kir"
    path.write_text("kernel @k() {\n  %a = add %x,, %y : f32\n}\n")
    result = intentc("fmt", path)
    assert result.returncode == 1
    assert f"{path}:2:15: error[E0001]" in result.stderr and "^" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [(), ("fmt",), ("fmt", "--check", "--in-place", "x.kir"), ("frobnicate",),
                                  ("convert", "x.kir"), ("fmt", "/no/such/file.kir")])
def test_bad_usage_exits_2(args):
    result = intentc(*args)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_convert_kir_json_kir_gives_canonical_text(tmp_path):
    json_path = tmp_path / "sample.json"
    assert intentc("convert", SAMPLE, "--to", "json", "-o", json_path).returncode == 0
    assert json.loads(json_path.read_text())["kir_json"] == 1
    result = intentc("convert", json_path, "--to", "kir")
    assert (result.returncode, result.stdout) == (0, SAMPLE.read_text())


def test_convert_needs_a_known_extension(tmp_path):
    path = tmp_path / "sample.txt"
    shutil.copy(SAMPLE, path)
    result = intentc("convert", path, "--to", "json")
    assert result.returncode == 2 and "name it .kir or .json" in result.stderr


def test_convert_rejects_bad_json_with_a_diagnostic(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"kir_json": 1, "module": {"items": [{"kind": "kernel"}]}}')
    result = intentc("convert", path, "--to", "kir")
    assert result.returncode == 1 and "error[E0022]" in result.stderr


def test_schema_is_json_schema_of_the_module():
    result = intentc("schema")
    schema = json.loads(result.stdout)
    assert result.returncode == 0 and "$defs" in schema and "Op" in schema["$defs"]


def test_internal_error_exits_3_and_writes_a_reproducer(tmp_path, monkeypatch, capsys):
    def crash(args):
        raise RuntimeError("boom")

    monkeypatch.setattr(fmt_command, "run", crash)
    path = tmp_path / "input.kir"
    path.write_text(CANONICAL)
    assert intentc_main(["fmt", str(path)]) == 3
    message = capsys.readouterr().err
    reproducer = message.rsplit(" ", 1)[-1].strip()
    text = Path(reproducer).read_text()
    assert "RuntimeError: boom" in text and CANONICAL in text and "intentc fmt" in text
