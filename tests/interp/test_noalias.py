"""`noalias` (§8, §13) is a precondition the caller must meet: a launch whose noalias view
shares memory with another view argument is refused (R0109), before anything runs."""
import numpy as np
import pytest

import intentc

COPY = """kernel @copy(%x: view<f32, [%N], in>, %y: view<f32, [%N], out, noalias>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  write %y, %v index(%i)
}
"""


def test_overlapping_memory_is_refused():
    memory = np.arange(12, dtype=np.float32)
    with pytest.raises(intentc.DiagnosticError) as error:
        intentc.run(COPY, "copy", {"x": memory[:8], "y": memory[4:]})
    diagnostic = error.value.diagnostics[0]
    assert diagnostic.code == "R0109" and "%y is noalias" in diagnostic.message and "%x" in diagnostic.message


def test_separate_memory_and_disjoint_parts_of_one_allocation_are_fine():
    memory = np.arange(12, dtype=np.float32)
    assert np.array_equal(intentc.run(COPY, "copy", {"x": memory[:6], "y": memory[6:]})["y"], memory[:6])
    x = np.ones(5, np.float32)
    assert np.array_equal(intentc.run(COPY, "copy", {"x": x})["y"], x)


def test_explicit_views_count_their_whole_base():
    base = np.arange(8, dtype=np.float32)
    with pytest.raises(intentc.DiagnosticError) as error:
        intentc.run(COPY, "copy", {"x": intentc.View(base, 0, (1,), (4,)), "y": base[4:]})
    assert error.value.diagnostics[0].code == "R0109"
