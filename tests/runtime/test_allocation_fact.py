"""The `contiguous` fact also promises that the view lies inside its allocation (options.py):
the compiled code then checks an access against the extents only, so the runtime refuses
(R0108) a `View` that reaches past its base, on both binding paths, while an access outside
the extents is still reported (R0301)."""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from intentc.runtime.cpu import compile_cpu

NEGATE = """kernel @neg(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %r = neg %v : tensor<f32, [%N]>
  write %y, %r index(%i)
}
"""
# reads x one past each lane: the last lane's index lies outside x's extent
SHIFTED = NEGATE.replace("@neg", "@shifted").replace(
    "  %v = read %x index(%i)", "  %one = constant {value = 1} : index\n  %ones = broadcast %one : tensor<index, [%N]>\n"
    "  %j = add %i, %ones : tensor<index, [%N]>\n  %v = read %x index(%j)")
FACTS = {"contiguous": ["x", "y"]}


def _diagnostic(work):
    with pytest.raises(intentc.DiagnosticError) as error:
        work()
    return error.value.diagnostics[0]


def test_a_dense_view_inside_its_base_runs():
    kernel = intentc.load(NEGATE, "neg", facts=FACTS)
    base, y = np.arange(20, dtype=np.float32), np.zeros(8, np.float32)
    kernel(x=intentc.View(base, 12, (1,), (8,)), y=y)
    np.testing.assert_array_equal(y, -base[12:20])


@pytest.mark.parametrize("offset", [13, -1])
def test_a_view_reaching_past_its_base_is_refused_in_place(offset):
    kernel = intentc.load(NEGATE, "neg", facts=FACTS)
    base, y = np.arange(20, dtype=np.float32), np.zeros(8, np.float32)
    broken = _diagnostic(lambda: kernel(x=intentc.View(base, offset, (1,), (8,)), y=y))
    assert broken.code == "R0108" and "inside its allocation" in broken.message


def test_a_view_reaching_past_its_base_is_refused_when_copied():
    kernel = compile_cpu(NEGATE, "neg", FACTS)
    base = np.arange(20, dtype=np.float32)
    broken = _diagnostic(lambda: kernel({"x": intentc.View(base, 13, (1,), (8,))}))
    assert broken.code == "R0108" and "inside its allocation" in broken.message
    np.testing.assert_array_equal(kernel({"x": intentc.View(base, 12, (1,), (8,))})["y"], -base[12:20])


def test_an_access_outside_the_extents_is_still_reported():
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    reference = _diagnostic(lambda: intentc.run(SHIFTED, "shifted", {"x": x}))
    ours = _diagnostic(lambda: intentc.load(SHIFTED, "shifted", facts=FACTS)(x=x, y=y))
    assert ours.code == reference.code == "R0301"
