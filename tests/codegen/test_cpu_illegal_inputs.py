"""Illegal inputs found while running on the CPU are reported like the interpreter reports
them (same code, the op named at its location); the process never crashes."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.api import run
from intentc.diagnostics import DiagnosticError
from intentc.runtime.cpu import compile_cpu
from programs import binary_kernel, unary_kernel

OUT_OF_BOUNDS = """kernel @k(%x: view<f32, [%N], in>, %idx: view<i32, [%M], in>, %y: view<f32, [%M], out>) {
  %i = iota : tensor<index, [%M]>
  %j = read %idx index(%i) : tensor<i32, [%M]>
  %v = read %x index(%j) : tensor<f32, [%M]>
  write %y, %v index(%i)
}"""

BAD_LOOP = """kernel @k(%x: view<i32, [1], inout>, %step: index) {
  %c0 = constant {value = 0} : index
  %c9 = constant {value = 9} : index
  %z = constant {value = 0} : i32
  %r = loop %c0, %c9, %step iter(%z) : i32 {
  ^body(%k: index, %a: i32):
    yield %a
  }
  write %x, %r index(%c0)
}"""

# A check the loop raises before its body must survive the body's own checks (the body's
# ops flush theirs) when the loop then runs zero times.
BAD_LOOP_WITH_BODY = """kernel @k(%x: view<i32, [1], inout>, %step: index) {
  %c0 = constant {value = 0} : index
  %c9 = constant {value = 9} : index
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %r = loop %c0, %c9, %step iter(%z) : i32 {
  ^body(%k: index, %a: i32):
    %b = add %a, %one : i32
    yield %b
  }
  write %x, %r index(%c0)
}"""

NEGATIVE_DOMAIN = """kernel @k(%n: index, %y: view<i64, [4], out>) {
  parallel %n {
  ^b(%i: index):
    %t = cast %i : i64
    write %y, %t index(%i)
  }
}"""

NEGATIVE_SHAPE = """kernel @k(%n: index, %y: view<i64, [1], out>) {
  %c = constant {value = 0} : index
  %i = iota : tensor<index, [%n]>
  %s = reduce %i {axes = [0], kind = sum} : index
  %t = cast %s : i64
  write %y, %t index(%c)
}"""

# Half of a buffer written, then all of it read: element 2 was never written (§9). The
# masked read that skips the unwritten half is legal.
UNWRITTEN_BUFFER = """kernel @k(%y: view<f32, [4], out>, %limit: index) {
  %i = iota : tensor<index, [4]>
  %b = buffer : buffer<f32, [4]>
  %v = full {value = 1.5} : tensor<f32, [2]>
  %j = iota : tensor<index, [2]>
  write %b, %v index(%j)
  %lim = broadcast %limit : tensor<index, [4]>
  %m = lt %i, %lim : tensor<bool, [4]>
  %zero = constant {value = 0.0} : f32
  %r = read %b index(%i) mask(%m) fill(%zero) : tensor<f32, [4]>
  write %y, %r index(%i)
}"""

# scatter_reduce reads the old value of its destination: an unwritten buffer element there
# is as illegal as a read of it.
UNWRITTEN_SCATTER = """kernel @k(%y: view<f32, [2], out>) {
  %j = iota : tensor<index, [2]>
  %b = buffer : buffer<f32, [2]>
  %one = full {value = 1.0} : tensor<f32, [2]>
  scatter_reduce %b, %one index(%j) {kind = add}
  %r = read %b index(%j) : tensor<f32, [2]>
  write %y, %r index(%j)
}"""

CASES = [
    ("division by zero", binary_kernel("floordiv", "i32"),
     {"a": np.array([1, 2, 3], np.int32), "b": np.array([1, 0, 1], np.int32)}, "R0201", "floordiv"),
    ("minimum // -1", binary_kernel("floordiv", "i64"),
     {"a": np.array([-2 ** 63], np.int64), "b": np.array([-1], np.int64)}, "R0202", "floordiv"),
    ("shift out of range", binary_kernel("shl", "u8"),
     {"a": np.array([1], np.uint8), "b": np.array([8], np.uint8)}, "R0203", "shl"),
    ("NaN to int", unary_kernel("cast", "f32", "i32"), {"x": np.array([1.0, np.nan], np.float32)}, "R0204", "cast"),
    ("f8e4m3fn overflow", unary_kernel("cast", "f32", "f8e4m3fn"), {"x": np.array([500.0], np.float32)}, "R0205",
     "cast"),
    ("index out of bounds", OUT_OF_BOUNDS, {"x": np.zeros(4, np.float32), "idx": np.array([0, 4], np.int32)},
     "R0301", "read"),
    ("non-positive loop step", BAD_LOOP, {"x": np.zeros(1, np.int32), "step": 0}, "R0403", "loop"),
    ("non-positive step of a loop with a body", BAD_LOOP_WITH_BODY, {"x": np.zeros(1, np.int32), "step": -1},
     "R0403", "loop"),
    ("negative parallel domain", NEGATIVE_DOMAIN, {"n": -3}, "R0206", "parallel"),
    ("negative extent of a computed tensor", NEGATIVE_SHAPE, {"n": -2}, "R0206", "iota"),
    ("read of an unwritten buffer element", UNWRITTEN_BUFFER, {"limit": 3}, "R0302", "read"),
    ("scatter_reduce into an unwritten buffer element", UNWRITTEN_SCATTER, {}, "R0302", "scatter_reduce"),
]


@pytest.mark.parametrize("what,source,inputs,code,op", CASES, ids=[c[0] for c in CASES])
def test_illegal_input_is_reported_like_the_interpreter(what, source, inputs, code, op):
    with pytest.raises(DiagnosticError) as interpreted:
        run(source, "k", inputs)
    with pytest.raises(DiagnosticError) as compiled:
        compile_cpu(source, "k")(inputs)
    (expected,), (got,) = interpreted.value.diagnostics, compiled.value.diagnostics
    assert got.code == expected.code == code
    assert got.message.startswith(f"`{op}`")
    assert (got.line, got.col) == (expected.line, expected.col)


def test_launch_errors_are_the_interpreters():
    compiled = compile_cpu(binary_kernel("add", "f32"), "k")
    with pytest.raises(DiagnosticError) as error:
        compiled({"a": np.zeros(3, np.float32), "b": np.zeros(4, np.float32)})
    assert error.value.diagnostics[0].code == "R0105"
    with pytest.raises(DiagnosticError) as error:
        compiled({"a": np.zeros(3, np.float64), "b": np.zeros(3, np.float32)})
    assert error.value.diagnostics[0].code == "R0103"


def test_masked_reads_of_written_buffer_elements_are_legal():
    got = compile_cpu(UNWRITTEN_BUFFER, "k")({"limit": 2})["y"]
    assert np.array_equal(got, run(UNWRITTEN_BUFFER, "k", {"limit": 2})["y"])
    assert np.array_equal(got, np.array([1.5, 1.5, 0.0, 0.0], np.float32))
