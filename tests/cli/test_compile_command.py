"""`intentc compile`: where artifacts go (-o FILE, -o -, -o DIR, launch.json beside the PTX),
every kernel without --kernel, and the default arch (issue 17; issue 15 item 20)."""
from __future__ import annotations

import json

import pytest

from sample_files import ROOT
from intentc.cli.main import main

SAMPLES = ROOT / "ir_samples"
SOFTMAX, CUMSUM = SAMPLES / "row_softmax.kir", SAMPLES / "cumsum.kir"


def test_ptx_to_a_file_writes_launch_json_beside_it(tmp_path):
    assert main(["compile", str(SOFTMAX), "--target", "ptx", "-o", str(tmp_path / "softmax.ptx")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["softmax.launch.json", "softmax.ptx"]
    launch = json.loads((tmp_path / "softmax.launch.json").read_text())
    assert launch["kernel"] in (tmp_path / "softmax.ptx").read_text()


def test_ptx_without_arch_is_the_newest_supported_arch(tmp_path, capsys):
    assert main(["compile", str(SOFTMAX), "--target", "ptx"]) == 0
    default = capsys.readouterr().out
    assert ".target sm_90" in default
    assert main(["compile", str(SOFTMAX), "--target", "ptx", "--arch", "sm_90"]) == 0
    assert capsys.readouterr().out == default


def test_dash_o_dash_is_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["compile", str(SOFTMAX), "-o", "-"]) == 0
    assert "define void @intentc_kernel_row_softmax" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_without_kernel_every_kernel_is_compiled_into_a_directory(tmp_path, capsys):
    out = tmp_path / "artifacts"
    assert main(["compile", str(CUMSUM), "--target", "ptx", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "exclusive_offsets.launch.json", "exclusive_offsets.ptx", "row_cumsum.launch.json", "row_cumsum.ptx"]
    assert main(["compile", str(CUMSUM)]) == 2
    assert "write them with -o DIR" in capsys.readouterr().err


def test_one_kernel_files_need_no_kernel_flag_and_a_directory_gets_kernel_named_files(tmp_path):
    assert main(["compile", str(SOFTMAX), "-o", str(tmp_path)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["row_softmax.ll"]


def test_writing_into_a_missing_directory_is_a_usage_error(tmp_path, capsys):
    assert main(["compile", str(SOFTMAX), "-o", str(tmp_path / "missing" / "k.ll")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_print_layouts_shows_the_variant_rule_of_a_dynamic_row(tmp_path, capsys):
    assert main(["compile", str(SOFTMAX), "--target", "ptx", "-o", str(tmp_path / "s.ptx"), "--print-layouts"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "// @row_softmax: mapping cta, block 512, slots 0"
    assert lines[1] == "//   variant rule: N × 1 elements up to 32768, 32 slots, vector 1"
    launch = json.loads((tmp_path / "s.launch.json").read_text())
    assert launch["variants"] == [] and launch["variant_rule"]["extent"] == "N"
    assert ".entry intentc_kernel_row_softmax_s" not in (tmp_path / "s.ptx").read_text()


def test_print_layouts_lists_the_eager_register_form_variants_of_a_dynamic_row(tmp_path, capsys):
    assert main(["compile", str(SOFTMAX), "--target", "ptx", "-o", str(tmp_path / "s.ptx"), "--print-layouts",
                 "--eager-variants"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "// @row_softmax: mapping cta, block 512, slots 0"
    assert lines[1] == "//   variant intentc_kernel_row_softmax_s1024: N in [1, 1024], block 64, slots 16"
    assert lines[2] == "//   variant intentc_kernel_row_softmax_s2048: N in [1025, 2048], block 64, slots 32"


def test_variant_for_compiles_only_the_variant_serving_that_row_length(tmp_path, capsys):
    assert main(["compile", str(SOFTMAX), "--target", "ptx", "--variant-for", "N=1000", "-o", str(tmp_path / "s.ptx"),
                 "--print-layouts"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == ["// @row_softmax: mapping cta, block 64, slots 16", "//   serves N in [961, 1023]"]
    launch = json.loads((tmp_path / "s.launch.json").read_text())
    assert launch["serves"] == {"entry": "intentc_kernel_row_softmax", "extent": "N", "min": 961, "max": 1023,
                                "block": 64, "slots": 16, "ctas_per_sm": 32}
    assert launch["variant_rule"] == {} and launch["variants"] == []
    assert (tmp_path / "s.ptx").read_text().count(".entry ") == 1


@pytest.mark.parametrize("arguments,message", [
    (["--target", "ptx", "--variant-for", "N=40000"], "no register-form variant of kernel @row_softmax serves N = 40000"),
    (["--target", "ptx", "--variant-for", "N=0"], "serves N = 0"),
    (["--target", "ptx", "--variant-for", "M=8"], "serves M = 8"),
    (["--target", "ptx", "--variant-for", "N=1000", "--extent", "N=1000"], "serves N = 1000"),
    (["--target", "kir", "--variant-for", "N=1000"], "serves N = 1000"),
])
def test_variant_for_a_row_no_variant_serves_is_e0066_at_the_kernel(arguments, message, capsys):
    assert main(["compile", str(SOFTMAX), *arguments]) == 1
    err = capsys.readouterr().err
    assert "error[E0066]" in err and message in err and ":5:8:" in err


def test_variant_for_needs_name_equals_integer(capsys):
    assert main(["compile", str(SOFTMAX), "--target", "ptx", "--variant-for", "N"]) == 2
    assert "--variant-for needs NAME=VALUE" in capsys.readouterr().err


