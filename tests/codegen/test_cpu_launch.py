"""Compile once, launch many: the Python API, views with offsets and any strides, launching
in place, specialization, and the compile latency budget's ingredients."""
from __future__ import annotations

import numpy as np
import pytest

from conformance import NOALIAS
from intentc.api import View, run
from intentc.diagnostics import DiagnosticError
from intentc.runtime.cpu import compile_cpu
from programs import binary_kernel, unary_kernel
from sample_paths import sample_text

SOFTMAX = sample_text("row_softmax")


def test_compiled_kernel_launches_many_times():
    kernel = compile_cpu(SOFTMAX, "row_softmax")
    rng = np.random.default_rng(0)
    for rows, cols in [(1, 1), (3, 7), (0, 5), (17, 300)]:
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        got = kernel({"x": x, "t": np.float32(0.5)})["y"]
        expected = run(SOFTMAX, "row_softmax", {"x": x, "t": np.float32(0.5)})["y"]
        assert got.shape == (rows, cols)
        assert np.allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_strided_and_offset_views_bind_like_the_interpreter():
    source = unary_kernel("neg", "f32", "f32")
    base = np.arange(20, dtype=np.float32)
    for x in (base[::-3], base[5:15], np.broadcast_to(np.float32(2), (6,))):
        assert np.array_equal(compile_cpu(source, "k")({"x": x})["y"], -np.asarray(x))
    view = View(base, 4, (2,), (5,))
    assert np.array_equal(compile_cpu(source, "k")({"x": view})["y"], -base[4:14:2])


def test_launch_in_place_writes_the_callers_array():
    kernel = compile_cpu(binary_kernel("add", "i32"), "k")
    a, b = np.arange(10, dtype=np.int32), np.full(10, 5, dtype=np.int32)
    y = np.zeros(20, dtype=np.int32)[::2]
    kernel.launch(a=a, b=b, y=y)
    assert np.array_equal(y, a + 5)
    reversed_out = np.zeros(10, dtype=np.int32)[::-1]
    kernel.launch(a=a, b=b, y=reversed_out)
    assert np.array_equal(reversed_out, a + 5)


def test_specialized_extents_and_unit_strides_give_the_same_results():
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    plain = compile_cpu(SOFTMAX, "row_softmax")({"x": x, "t": np.float32(1)})["y"]
    special = compile_cpu(SOFTMAX, "row_softmax", {"extents": {"N": 64}, "unit_stride": ["x", "y"]})
    assert np.array_equal(special({"x": x, "t": np.float32(1)})["y"], plain)


def test_api_run_takes_a_target():
    x = np.random.default_rng(2).standard_normal((2, 9)).astype(np.float32)
    cpu = run(SOFTMAX, "row_softmax", {"x": x, "t": np.float32(2)}, target="cpu")["y"]
    interp = run(SOFTMAX, "row_softmax", {"x": x, "t": np.float32(2)})["y"]
    assert np.allclose(cpu, interp, rtol=1e-6)


def test_constexpr_enum_is_a_runtime_value_unless_specialized():
    source = sample_text("activation_enum")
    rng = np.random.default_rng(3)
    inputs = {"x": rng.standard_normal((2, 33)).astype(np.float32), "bias": rng.standard_normal(33).astype(np.float32)}
    generic = compile_cpu(source, "bias_act")
    for act in ("relu", "silu", "gelu"):
        expected = run(source, "bias_act", inputs, {"act": act})["y"]
        assert np.allclose(generic(inputs, {"act": act})["y"], expected, rtol=1e-6, atol=1e-7)
        specialized = compile_cpu(source, "bias_act", {"constexprs": {"act": act}})
        assert np.allclose(specialized(inputs)["y"], expected, rtol=1e-6, atol=1e-7)


def test_input_extents_are_what_a_launch_binds():
    from intentc.diagnostics import DiagnosticError
    from intentc.parse import parse
    from intentc.runtime.extents import input_extents
    module = parse(sample_text("row_softmax"))
    kernel = module.find("row_softmax")
    x = np.zeros((2, 3), np.float32)
    assert input_extents(module, kernel, {"x": x, "y": x, "t": 1.0}, "<t>", None) == {"M": 2, "N": 3}
    try:
        input_extents(module, kernel, {"x": x, "y": np.zeros((2, 4), np.float32)}, "<t>", None)
    except DiagnosticError as error:
        assert error.diagnostics[0].code == "R0105"
    else:
        raise AssertionError("views disagreeing on %N must be the launch's R0105")


def test_launch_in_place_reports_overlapping_noalias_views():
    """The in-place launch binds the caller's memory: an overlap there is the illegal R0109 too."""
    kernel = compile_cpu(NOALIAS, "k")
    base = np.arange(8, dtype=np.float32)
    with pytest.raises(DiagnosticError) as info:
        kernel.launch(x=base[0:4], y=base[3:7])
    assert info.value.diagnostics[0].code == "R0109"
    kernel.launch(x=base[0:4], y=base[4:8])
    assert base[4:8].tolist() == [4.0, 6.0, 8.0, 10.0]
