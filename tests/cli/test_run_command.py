"""`intentc run` on bad files and flags: usage errors or diagnostics, never exit 3 (issue 17),
and a program is verified before it runs (issue 15 item 18)."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from sample_files import ROOT
from intentc.cli.main import main

SOFTMAX = ROOT / "ir_samples" / "row_softmax.kir"
INPUTS = ROOT / "ir_samples" / "inputs" / "row_softmax.npz"


def _run(*args) -> int:
    return main(["run", str(SOFTMAX), *map(str, args)])


@pytest.mark.parametrize("content", [b"", INPUTS.read_bytes()[:120], b"PK\x03\x04 not a zip", b"\x93NUMPY garbage"],
                         ids=["empty", "truncated", "corrupt", "bad-npy-header"])
def test_unreadable_inputs_are_usage_errors(tmp_path, capsys, content):
    bad = tmp_path / "in.npz"
    bad.write_bytes(content)
    assert _run("--inputs", bad) == 2
    assert "cannot read" in capsys.readouterr().err


def test_a_npy_file_given_to_inputs_says_to_use_npz(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros(3, np.float32))
    assert _run("--inputs", tmp_path / "x.npy") == 2
    assert ".npz archive" in capsys.readouterr().err


def test_outputs_into_a_missing_directory_is_a_usage_error_before_running(tmp_path, capsys):
    assert _run("--inputs", INPUTS, "--outputs", tmp_path / "missing" / "out.npz") == 2
    assert "no such directory" in capsys.readouterr().err
    assert _run("--inputs", INPUTS, "--outputs", str(tmp_path / "missing") + "/") == 2


def test_outputs_into_a_directory_writes_inside_it(tmp_path):
    assert _run("--inputs", INPUTS, "--outputs", tmp_path) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["row_softmax.npz"]
    assert np.load(tmp_path / "row_softmax.npz")["y"].shape == np.load(INPUTS)["x"].shape


def test_outputs_to_a_file_writes_exactly_that_path(tmp_path):
    assert _run("--inputs", INPUTS, "--outputs", tmp_path / "result") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result"]


def test_a_negative_seed_is_a_usage_error(capsys):
    assert _run("--inputs", INPUTS, "--seed", "-5") == 2
    assert "--seed" in capsys.readouterr().err


def test_kernel_is_optional_when_the_file_has_one(capsys):
    assert _run("--inputs", INPUTS) == 0
    assert "%y: float32" in capsys.readouterr().out
    assert main(["run", str(ROOT / "ir_samples" / "cumsum.kir")]) == 2
    assert "choose one with --kernel" in capsys.readouterr().err


def test_run_verifies_first_an_ill_typed_program_fails_with_its_static_code(tmp_path, capsys):
    source = tmp_path / "bad.kir"
    source.write_text("kernel @k(%a: f32, %b: i32, %y: view<f32, [1], out>) {\n"
                      "  %s = add %a, %b : f32\n"
                      "  %z = constant {value = 0} : index\n"
                      "  write %y, %s index(%z)\n}\n")
    np.savez(tmp_path / "in.npz", a=np.float32(1), b=np.int32(2), y=np.zeros(1, np.float32))
    for target in ("interp", "cpu"):
        assert main(["run", str(source), "--target", target, "--inputs", str(tmp_path / "in.npz")]) == 1
        error = capsys.readouterr().err
        assert "error[E" in error and "R0902" not in error


class _NoDriverLibrary(RuntimeError):
    """What cuda-bindings raises from cuInit on a machine without libcuda (DynamicLibNotFoundError)."""


@pytest.fixture
def bindings_without_driver(monkeypatch):
    """cuda-bindings importable, but its first call cannot load the driver library."""
    def cu_init(flags):
        raise _NoDriverLibrary('"cuda" is an NVIDIA driver library and can only be found via system search')
    driver = types.SimpleNamespace(cuInit=cu_init)
    bindings = types.ModuleType("cuda.bindings")
    bindings.driver = driver
    cuda = types.ModuleType("cuda")
    cuda.bindings = bindings
    monkeypatch.setitem(sys.modules, "cuda", cuda)
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)
    from intentc.runtime import cuda_driver
    cuda_driver.default_device.cache_clear()
    yield
    cuda_driver.default_device.cache_clear()


def test_target_cuda_without_a_driver_is_a_diagnostic(bindings_without_driver, capsys):
    assert _run("--inputs", INPUTS, "--target", "cuda") == 1
    error = capsys.readouterr().err
    assert "E0090" in error and "no NVIDIA driver" in error


def test_gpu_tests_skip_with_a_reason_when_the_driver_is_missing(bindings_without_driver):
    sys.path.insert(0, str(ROOT / "tests" / "gpu"))
    try:
        import gpu_required
    finally:
        sys.path.remove(str(ROOT / "tests" / "gpu"))
    gpu_required.cuda_unavailable_reason.cache_clear()
    try:
        reason = gpu_required.cuda_unavailable_reason()
    finally:
        gpu_required.cuda_unavailable_reason.cache_clear()
    assert reason is not None and "no NVIDIA driver" in reason
