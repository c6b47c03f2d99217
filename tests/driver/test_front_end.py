"""The compile front-end checks every request the same way, whoever calls it: the CLI's
`compile` and `run`, the runtimes and the service's worker get the same diagnostic codes."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from intentc.cli.main import main
from intentc.diagnostics import DiagnosticError
from intentc.driver import compile_kernel, front_end

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = ROOT / "ir_samples" / "row_softmax.kir"
TEXT = SOFTMAX.read_text()
sys.path.insert(0, str(ROOT / "server"))


def _codes(work) -> list[str]:
    with pytest.raises(DiagnosticError) as error:
        work()
    return [d.code for d in error.value.diagnostics]


def _front(**request):
    return front_end(TEXT, request.pop("kernel", "row_softmax"), request.pop("target", "kir"),
                     file="row_softmax.kir", **request)


def test_a_request_is_normalized_to_plain_values():
    import numpy as np
    request = _front(specialization={"extents": {"N": np.int64(64)}, "unit_stride": ["x"]})
    assert request.specialization.extents == {"N": 64} and type(request.specialization.extents["N"]) is int
    assert request.kernel.name == "row_softmax" and {"parse", "verify"} <= set(request.timings)


@pytest.mark.parametrize("extent", [10 ** 30, 2 ** 63, -1])
def test_an_extent_must_fit_the_index_type(extent):
    assert _codes(lambda: _front(specialization={"extents": {"N": extent}})) == ["E0065"]


def test_the_largest_index_is_an_extent():
    assert _front(specialization={"extents": {"N": 2 ** 63 - 1}}).specialization.extents["N"] == 2 ** 63 - 1


def test_unknown_names_are_rejected_with_a_suggestion():
    with pytest.raises(DiagnosticError) as error:
        _front(specialization={"extents": {"NN": 4}, "unit_stride": ["z"], "constexprs": {"t": 1.0}})
    diagnostics = error.value.diagnostics
    assert [d.code for d in diagnostics] == ["E0064"] * 3
    assert "did you mean `N`?" in diagnostics[0].hint
    assert diagnostics[1].hint == "constexpr parameters: none" and diagnostics[2].hint == "view parameters: x, y"
    assert (diagnostics[0].line, diagnostics[0].col) == (5, 8)        # at the kernel


def test_an_arch_only_where_the_target_has_archs():
    assert _codes(lambda: _front(target="kir", arch="sm_90")) == ["E0063"]
    assert _codes(lambda: _front(target="ptx", arch="sm_70")) == ["E0062"]
    assert _codes(lambda: _front(target="nope")) == ["E0061"]


def test_a_missing_kernel_is_the_same_code_everywhere():
    from intentc.runtime.cpu import compile_cpu
    assert _codes(lambda: compile_kernel(TEXT, "nope", "llvm")) == ["E0060"]
    assert _codes(lambda: compile_cpu(TEXT, "nope")) == ["E0060"]


def test_the_cli_reports_the_front_end_diagnostics(capsys):
    assert main(["compile", str(SOFTMAX), "--kernel", "row_softmax", "--target", "kir",
                 "--extent", f"N={10 ** 30}"]) == 1
    assert "error[E0065]" in capsys.readouterr().err
    assert main(["compile", str(SOFTMAX), "--kernel", "row_softmax", "--target", "kir", "--extent", "Q=3"]) == 1
    assert "error[E0064]" in capsys.readouterr().err
    assert main(["compile", str(SOFTMAX), "--kernel", "row_softmax", "--target", "kir", "--arch", "sm_90"]) == 1
    assert "error[E0063]" in capsys.readouterr().err


def test_the_service_worker_rejects_a_negative_extent():
    from intentc_server.worker import compile_
    reply = compile_(TEXT, "row_softmax", "kir", None, {}, {"extents": {"N": -5}})
    assert reply[0] == "diagnostics" and [d["code"] for d in reply[1]] == ["E0065"]


def test_compile_records_every_stage():
    timings = compile_kernel(TEXT, "row_softmax", "kir").timings
    assert {"parse", "verify", "passes", "lower"} <= set(timings)


@pytest.mark.parametrize("target, kept", [("ptx", ["dequantize_e4m3_rowwise"]),
                                          ("llvm", ["dequantize_e4m3_rowwise"]),
                                          ("kir", ["quantize_e4m3_rowwise", "quantize_e5m2_rowwise",
                                                   "dequantize_e4m3_rowwise"])])
def test_a_target_of_one_kernel_optimizes_that_kernel_alone(target, kept):
    """The passes see the file's other kernels only where the artifact holds them (KIR text),
    and the kernel comes out of them the same either way."""
    from intentc.driver import optimized
    text = (ROOT / "ir_samples" / "f8_rowwise_quant.kir").read_text()
    request = front_end(text, "dequantize_e4m3_rowwise", target, "sm_90" if target == "ptx" else None)
    module = optimized(request)
    assert [item.name for item in module.items] == kept
    whole = optimized(front_end(text, "dequantize_e4m3_rowwise", "kir"))
    assert module.find("dequantize_e4m3_rowwise") == whole.find("dequantize_e4m3_rowwise")
