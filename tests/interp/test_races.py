"""§10: unordered `parallel` iterations may not conflict on plain accesses; the interpreter
reports a race it observes instead of silently picking one iteration order."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.api import run
from intentc.diagnostics import DiagnosticError
from intentc.interp.launch import run_kernel
from intentc.parse import parse


def interpret(text: str, inputs: dict) -> dict:
    """The interpreter without the verifier (`intentc.run` verifies first): for programs the
    verifier already rejects (E731), whose race the interpreter must still report itself."""
    return run_kernel(parse(text), "k", inputs, source=text)


ALL_ROWS_WRITE_ONE_ELEMENT = """kernel @k(%x: view<f32, [%M], in>, %y: view<f32, [1], out>) {
  %z = constant {value = 0} : index
  parallel %M {
  ^row(%i: index):
    %v = read %x index(%i) : f32
    write %y, %v index(%z)
  }
}
"""

NEIGHBOUR_READ = """kernel @k(%x: view<f32, [%M], inout>) {
  %one = constant {value = 1} : index
  parallel %M {
  ^row(%i: index):
    %j = sub %M, %one : index
    %next = add %i, %one : index
    %safe = minimum %next, %j : index
    %v = read %x index(%safe) : f32
    write %x, %v index(%i)
  }
}
"""

DISJOINT_ROWS_THEN_A_SECOND_PARALLEL = """kernel @k(%x: view<f32, [%M], inout>) {
  %one = constant {value = 1.0} : f32
  parallel %M {
  ^a(%i: index):
    %v = read %x index(%i) : f32
    %w = add %v, %one : f32
    write %x, %w index(%i)
  }
  parallel %M {
  ^b(%i: index):
    %v = read %x index(%i) : f32
    %w = add %v, %one : f32
    write %x, %w index(%i)
  }
}
"""

NESTED_INNER_ITERATIONS_ORDERED_AFTER = """kernel @k(%x: view<f32, [%M, %N], inout>) {
  %one = constant {value = 1.0} : f32
  %z = constant {value = 0} : index
  parallel %M {
  ^row(%i: index):
    parallel %N {
    ^col(%j: index):
      %v = read %x index(%i, %j) : f32
      %w = add %v, %one : f32
      write %x, %w index(%i, %j)
    }
    %first = read %x index(%i, %z) : f32
    write %x, %first index(%i, %z)
  }
}
"""


def test_two_iterations_writing_one_element_is_reported():
    with pytest.raises(DiagnosticError) as caught:
        interpret(ALL_ROWS_WRITE_ONE_ELEMENT, {"x": np.arange(4, dtype=np.float32)})
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.code == "R0307" and "^row iteration" not in diagnostic.message
    assert "row iteration" in diagnostic.message and diagnostic.line == 6


def test_reading_what_another_iteration_writes_is_reported():
    with pytest.raises(DiagnosticError) as caught:
        run(NEIGHBOUR_READ, "k", {"x": np.arange(6, dtype=np.float32)})
    assert caught.value.diagnostics[0].code == "R0307"


def test_a_single_iteration_touches_nothing_shared():
    out = interpret(ALL_ROWS_WRITE_ONE_ELEMENT, {"x": np.array([7.0], dtype=np.float32)})
    np.testing.assert_array_equal(out["y"], [7.0])


def test_sequential_parallel_ops_and_nested_ones_are_ordered():
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(run(DISJOINT_ROWS_THEN_A_SECOND_PARALLEL, "k", {"x": x})["x"], x + 2)
    grid = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(run(NESTED_INNER_ITERATIONS_ORDERED_AFTER, "k", {"x": grid})["x"], grid + 1)
