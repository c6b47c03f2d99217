"""`intentc opt`: output, exit codes, instrumentation flags and crash reproducers."""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from intentc.cli.main import main
from intentc.ir.nodes import Module
from intentc.parse import parse
from intentc.passes import DEFAULT_PIPELINE, Pass, PassContext, parse_pipeline, print_pipeline, register_pass
from intentc.passes.base import unregister_pass
from intentc.passes.reproducer import MARKER

SAMPLES = Path(__file__).resolve().parents[2] / "ir_samples"
SAXPY = str(SAMPLES / "saxpy.kir")


def opt(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["opt", *args])
    return status, out.getvalue(), err.getvalue()


def test_prints_optimized_kir_that_parses():
    status, out, _ = opt(SAXPY)
    assert status == 0
    module = parse(out)
    assert "{fma = lhs}" in out and "address_width = 64" in out and module.find("saxpy") is not None


def test_print_pipeline_is_the_compile_default():
    status, out, _ = opt("--print-pipeline")
    assert status == 0 and out.strip() == print_pipeline(parse_pipeline(DEFAULT_PIPELINE))


def test_bad_pipeline_is_a_usage_error_with_a_diagnostic():
    status, out, err = opt(SAXPY, "--pass-pipeline", "cse,nope")
    assert (status, out) == (2, "")
    assert "error[E0070]: unknown pass `nope`" in err


def test_input_that_does_not_verify_exits_1(tmp_path):
    bad = tmp_path / "bad.kir"
    bad.write_text("kernel @k(%x: view<f32, [4], in>) {\n  %y = exp %nothing : f32\n}\n")
    status, _, err = opt(str(bad), "--pass-pipeline", "cse")
    assert status == 1 and "E0050" in err


def test_missing_file_without_print_pipeline_is_usage():
    assert opt()[0] == 2


def test_print_ir_after_all_change_and_name():
    _, _, every = opt(SAXPY, "--pass-pipeline", "cse,fusion-legality", "--print-ir-after-all")
    assert every.count("IR Dump After") == 2
    _, _, changed = opt(SAXPY, "--pass-pipeline", "cse,fusion-legality", "--print-ir-after-change")
    assert changed.count("IR Dump After") == 1 and "IR Dump After fusion-legality" in changed
    _, _, named = opt(SAXPY, "--pass-pipeline", "cse,dce,cse", "--print-ir-after", "cse")
    assert named.count("IR Dump After cse") == 2 and "After dce" not in named


def test_timing_table_names_each_pass():
    status, _, err = opt(SAXPY, "--timing", "--no-verify-each")
    assert status == 0
    for name in ("canonicalize", "cse", "fusion-legality", "online-reduction", "dce", "address-width", "total"):
        assert name in err


def test_split_input_file_optimizes_each_piece(tmp_path):
    text = SAMPLES.joinpath("vector_add.kir").read_text() + "// -----\n" + SAMPLES.joinpath("saxpy.kir").read_text()
    path = tmp_path / "two.kir"
    path.write_text(text)
    status, out, _ = opt(str(path), "--split-input-file", "--pass-pipeline", "address-width")
    assert status == 0 and out.count("// -----") == 1 and out.count("address_width") >= 5


@dataclass(frozen=True)
class _Crash(Pass):          # registered only while a test uses `crash_pass`
    name = "test-crash"
    summary = "raises, for reproducer tests"

    def run(self, module: Module, ctx: PassContext) -> Module:
        raise RuntimeError("boom")


@pytest.fixture
def crash_pass():
    register_pass(_Crash)
    yield
    unregister_pass("test-crash")


def test_crash_writes_a_reproducer_that_replays(tmp_path, crash_pass):
    path = tmp_path / "repro.kir"
    status, _, err = opt(SAXPY, "--pass-pipeline", "cse,test-crash,dce", "--numerics", "relaxed_normalization",
                         "--crash-reproducer", str(path))
    assert status == 3 and "RuntimeError: boom" in err and str(path) in err
    text = path.read_text()
    assert text.startswith(MARKER) and '"pipeline": "test-crash,dce"' in text
    assert '"numerics": "relaxed_normalization"' in text and "kernel @saxpy" in text
    again = tmp_path / "again.kir"
    status, _, err = opt("--run-reproducer", str(path), "--crash-reproducer", str(again))
    assert status == 3 and "boom" in err and again.exists()


def test_replay_of_a_reproducer_without_the_crash_prints_ir(tmp_path, crash_pass):
    path = tmp_path / "repro.kir"
    opt(SAXPY, "--pass-pipeline", "test-crash", "--crash-reproducer", str(path))
    path.write_text(path.read_text().replace('"pipeline": "test-crash"', '"pipeline": "dce"'))
    status, out, _ = opt("--run-reproducer", str(path))
    assert status == 0 and "kernel @saxpy" in out


def test_not_a_reproducer_is_a_usage_error():
    assert opt("--run-reproducer", SAXPY)[0] == 2


def test_invalid_pass_output_is_caught_by_verify_each(tmp_path):
    @register_pass
    @dataclass(frozen=True)
    class DropEverything(Pass):
        name = "test-drop-defs"
        summary = "removes the first op of each kernel, breaking SSA"

        def run(self, module, ctx):
            items = tuple(i.model_copy(update={"body": i.body[1:]}) for i in module.items)
            return module.model_copy(update={"items": items})
    try:
        path = tmp_path / "r.kir"
        status, _, err = opt(SAXPY, "--pass-pipeline", "test-drop-defs", "--crash-reproducer", str(path))
        assert status == 3 and "does not verify" in err and path.exists()
        status, out, _ = opt(SAXPY, "--pass-pipeline", "test-drop-defs", "--no-verify-each")
        assert status == 0 and "%c511 = constant" not in out
    finally:
        unregister_pass("test-drop-defs")
