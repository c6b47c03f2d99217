"""Programs the kernel fuzzer (tools/fuzz_kernels.py) found crashing or misbehaving on the
interpreter, minimized."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.api import run
from intentc.diagnostics import DiagnosticError

ANY_DOWN_COLUMNS = """kernel @k(%x: view<bool, [%M, %N], in>, %y: view<bool, [%N], out>) {
  %r = iota {axis = 0} : tensor<index, [%M, %N]>
  %c = iota {axis = 1} : tensor<index, [%M, %N]>
  %v = read %x index(%r, %c) : tensor<bool, [%M, %N]>
  %a = reduce %v {axes = [0], kind = any} : tensor<bool, [%N]>
  %i = iota : tensor<index, [%N]>
  write %y, %a index(%i)
}
"""


@pytest.mark.parametrize("shape", [(3, 0), (0, 0), (0, 3), (2, 3)])
def test_a_reduction_beside_an_empty_kept_axis(shape):
    x = np.arange(np.prod(shape)).reshape(shape) % 2 == 1
    assert np.array_equal(run(ANY_DOWN_COLUMNS, "k", {"x": x})["y"], x.any(axis=0))


# The helper's extent %N is bound by each call's argument (the kernel calls it with %M).
POLYMORPHIC_HELPER = """helper @negate(%p: tensor<f32, [%N]>) -> (tensor<f32, [%N]>) {
  %r = neg %p : tensor<f32, [%N]>
  yield %r
}

kernel @k(%x: view<f32, [%M], in>, %y: view<f32, [%M], out>) {
  %i = iota : tensor<index, [%M]>
  %v = read %x index(%i) : tensor<f32, [%M]>
  %w = call %v {callee = @negate} : tensor<f32, [%M]>
  write %y, %w index(%i)
}
"""


def test_a_helper_binds_its_extents_from_the_call():
    x = np.array([1.5, -2.0, 0.0], dtype=np.float32)
    assert np.array_equal(run(POLYMORPHIC_HELPER, "k", {"x": x})["y"], -x)


def test_an_ill_typed_module_is_refused_before_it_runs():
    mixed = """kernel @k(%x: view<f32, [%N], in>, %z: view<i32, [%N], in>, %y: view<f32, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %w = read %z index(%i) : tensor<i32, [%N]>
  %r = add %v, %w : tensor<f32, [%N]>
  write %y, %r index(%i)
}
"""
    with pytest.raises(DiagnosticError) as caught:
        run(mixed, "k", {"x": np.ones(4, np.float32), "z": np.ones(4, np.int32)})
    assert caught.value.diagnostics[0].code == "E201" and caught.value.diagnostics[0].line == 5


NUM_PAIR = """kernel @k(%a: view<{t}, [%N], in>, %b: view<{t}, [%N], in>, %lo: view<{t}, [%N], out>, %hi: view<{t}, [%N], out>) {{
  %i = iota : tensor<index, [%N]>
  %x = read %a index(%i) : tensor<{t}, [%N]>
  %y = read %b index(%i) : tensor<{t}, [%N]>
  %l = minimum_num %x, %y : tensor<{t}, [%N]>
  %h = maximum_num %x, %y : tensor<{t}, [%N]>
  write %lo, %l index(%i)
  write %hi, %h index(%i)
}}
"""


@pytest.mark.parametrize("dtype, unsigned, signaling", [("f16", np.uint16, [0xFDE0, 0x7C01]),
                                                        ("f32", np.uint32, [0x7F800001, 0xFFA00000])])
def test_a_signaling_nan_is_a_one_sided_nan_for_the_num_ops(dtype, unsigned, signaling):
    """numpy's fmin/fmax gave NaN for a signaling NaN (an f16 one widened to f32 keeps
    signaling); quiet or signaling is no observable fact (§5.2)."""
    numbers = np.array([6.1e-5, -2.5], dtype=f"f{np.dtype(unsigned).itemsize}")
    nans = np.array(signaling, dtype=unsigned).view(numbers.dtype)
    out = run(NUM_PAIR.format(t=dtype), "k", {"a": numbers, "b": nans})
    assert np.array_equal(out["lo"], numbers) and np.array_equal(out["hi"], numbers)
    out = run(NUM_PAIR.format(t=dtype), "k", {"a": nans, "b": numbers})
    assert np.array_equal(out["lo"], numbers) and np.array_equal(out["hi"], numbers)
