"""On the GPU: views with offsets and strides bind like the interpreter's, illegal inputs
report the interpreter's diagnostics, CUDA failures are clear messages, and the API and
CLI reach the GPU."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_differential import load_test_module
from gpu_required import requires_gpu
from intentc.api import View, run
from intentc.diagnostics import DiagnosticError
from programs import unary_kernel
from sample_paths import SAMPLES

illegal = load_test_module("tests/codegen/test_cpu_illegal_inputs.py", "cpu_illegal_gpu")


@requires_gpu()
def test_strided_offset_and_aliased_views():
    source = unary_kernel("neg", "f32", "f32")
    base = np.arange(20, dtype=np.float32)
    for x in (base[::-3], base[5:15], np.broadcast_to(np.float32(2), (6,))):
        assert np.array_equal(run(source, "k", {"x": x}, target="cuda")["y"], -np.asarray(x))
    flat = np.arange(12, dtype=np.float32)
    view = View(flat, offset=2, strides=(2,), shape=(5,))
    assert np.array_equal(run(source, "k", {"x": view}, target="cuda")["y"], run(source, "k", {"x": view})["y"])


@requires_gpu()
@pytest.mark.parametrize("case", illegal.CASES, ids=[c[0] for c in illegal.CASES])
def test_illegal_inputs_report_like_the_interpreter(case):
    _, source, inputs, code, op = case[:5]
    with pytest.raises(DiagnosticError) as error:
        run(source, "k", inputs, target="cuda")
    diagnostic = error.value.diagnostics[0]
    assert diagnostic.code == code and f"`{op}`" in diagnostic.message


@requires_gpu()
def test_cuda_failure_is_a_diagnostic_not_a_traceback():
    from intentc.runtime.cuda import compile_cuda
    from intentc.driver import front_end
    from intentc.runtime.cuda import CudaKernel
    kernel = compile_cuda(unary_kernel("neg", "f32", "f32"), "k")
    request = front_end(unary_kernel("neg", "f32", "f32"), "k", "cubin", kernel.launch_config.arch)
    with pytest.raises(DiagnosticError) as error:
        CudaKernel(request, {**kernel.artifacts, "kernel.cubin": b"garbage"}, {})
    assert error.value.diagnostics[0].code == "E0090" and "cuModuleLoadData" in error.value.diagnostics[0].message


@requires_gpu()
def test_cli_runs_on_cuda(tmp_path):
    import subprocess
    import sys
    x = np.arange(3000, dtype=np.float32)
    np.savez(tmp_path / "in.npz", x=x, y=x)
    done = subprocess.run([sys.executable, "-m", "intentc.cli.main", "run", str(SAMPLES / "vector_add.kir"),
                           "--kernel", "vector_add", "--target", "cuda", "--inputs", str(tmp_path / "in.npz"),
                           "--outputs", str(tmp_path / "out.npz")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(np.load(tmp_path / "out.npz")["z"], 2 * x)


@requires_gpu()
def test_cli_specializes_to_the_inputs_unless_told_not_to(tmp_path):
    import subprocess
    import sys
    x = np.random.default_rng(3).standard_normal((40, 700)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x, t=np.float32(0.8))
    outputs = {}
    for flags in ([], ["--dynamic-extents"], ["--target", "interp"]):
        out = tmp_path / f"out{len(outputs)}.npz"
        command = [sys.executable, "-m", "intentc.cli.main", "run", str(SAMPLES / "row_softmax.kir"), "--kernel",
                   "row_softmax", "--inputs", str(tmp_path / "in.npz"), "--outputs", str(out)]
        command += flags if flags and flags[0] == "--target" else ["--target", "cuda", *flags]
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        outputs[tuple(flags)] = np.load(out)["y"]
    reference = outputs[("--target", "interp")]
    assert np.allclose(outputs[()], reference, atol=1e-6) and np.allclose(outputs[("--dynamic-extents",)], reference,
                                                                             atol=1e-6)
