"""`intentc compile --target llvm|cpu` and `intentc run --target cpu`: outputs and exit codes."""
from __future__ import annotations

import numpy as np

from intentc.cli.main import main
from sample_paths import SAMPLES


def test_compile_llvm_prints_ir(capsys):
    assert main(["compile", str(SAMPLES / "saxpy.kir"), "--kernel", "saxpy", "--target", "llvm"]) == 0
    text = capsys.readouterr().out
    assert "define void @intentc_kernel_saxpy" in text and "fma" in text


def test_compile_cpu_writes_an_object(tmp_path):
    out = tmp_path / "saxpy.o"
    assert main(["compile", str(SAMPLES / "saxpy.kir"), "--kernel", "saxpy", "--target", "cpu", "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x7fELF"


def test_compile_lowers_quantization_and_reports_bad_requests(capsys):
    assert main(["compile", str(SAMPLES / "quantize_q8_k.kir"), "--kernel", "quantize_q8_k", "--target", "llvm"]) == 0
    assert "define void @intentc_kernel_quantize_q8_k" in capsys.readouterr().out
    assert main(["compile", str(SAMPLES / "saxpy.kir"), "--kernel", "nope"]) == 1
    assert main(["compile", str(SAMPLES / "saxpy.kir"), "--kernel", "saxpy", "--target", "nope"]) == 1
    assert main(["compile", str(SAMPLES / "missing.kir"), "--kernel", "saxpy"]) == 2


def test_run_on_cpu_matches_interp(tmp_path):
    x = np.random.default_rng(0).standard_normal((3, 20)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x, t=np.float32(0.9))
    results = {}
    for target in ("interp", "cpu"):
        out = tmp_path / f"{target}.npz"
        assert main(["run", str(SAMPLES / "row_softmax.kir"), "--kernel", "row_softmax", "--target", target,
                     "--inputs", str(tmp_path / "in.npz"), "--outputs", str(out)]) == 0
        results[target] = np.load(out)["y"]
    assert np.allclose(results["cpu"], results["interp"], rtol=1e-6)


def test_run_specialized_to_an_extent_checks_the_arrays_against_it(tmp_path, capsys):
    x = np.random.default_rng(1).standard_normal((2, 20)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x, t=np.float32(1.0))
    command = ["run", str(SAMPLES / "row_softmax.kir"), "--kernel", "row_softmax", "--target", "cpu",
               "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz")]
    assert main([*command, "--extent", "N=20"]) == 0
    assert main([*command, "--extent", "N=16"]) == 1
    error = capsys.readouterr().err
    assert "R0105" in error and "compiled for extent %N = 16" in error and "^" in error
    assert main([*command, "--extent", "N=-1"]) == 1
    assert "E0065" in capsys.readouterr().err


def test_a_specialized_index_parameter_must_match_at_launch():
    from intentc.diagnostics import DiagnosticError
    from intentc.runtime.cpu import compile_cpu
    text = """kernel @k(%n: index, %y: view<f32, [%M], out>) {
  %i = iota : tensor<index, [%n]>
  %f = cast %i : tensor<f32, [%n]>
  write %y, %f index(%i)
}"""
    kernel = compile_cpu(text, "k", {"extents": {"n": 4}})
    assert list(kernel({"n": 4, "y": np.zeros(8, np.float32)})["y"][:5]) == [0, 1, 2, 3, 0]
    try:
        kernel({"n": 5, "y": np.zeros(8, np.float32)})
    except DiagnosticError as error:
        assert error.diagnostics[0].code == "R0105" and "compiled for %n = 4" in error.diagnostics[0].message
    else:
        raise AssertionError("a launch against the specialization must fail")
