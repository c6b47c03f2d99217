"""Generated kernels (kernel_generator.py) agree between the interpreter and the CPU JIT and
lower to PTX that ptxas accepts; and the minimized programs the generator found broken.

A bounded run here (a few programs; INTENTC_FUZZ_PROGRAMS=N for more, each seed a new
program); the long runs are `python tools/fuzz_kernels.py --seconds 3600`."""
from __future__ import annotations

import os
import random
import warnings

import numpy as np
import pytest

from differential import assert_same_bits, both
from kernel_fuzz import check, ptx_problems
from kernel_generator import generate

PROGRAMS = int(os.environ.get("INTENTC_FUZZ_PROGRAMS", "4"))


@pytest.mark.parametrize("seed", range(PROGRAMS))
def test_a_generated_kernel_agrees_everywhere(seed):
    program = generate(random.Random(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        problems = check(program)
    assert not problems, program.text + "\n" + "\n".join(problems)


def test_the_generator_reaches_every_form_and_the_effects():
    texts = [generate(random.Random(seed)).text for seed in range(60)]
    for fragment in ("parallel %M {", "parallel %M, ", "iota {axis = 1}", "scatter_reduce", "atomic_rmw",
                     "histogram", "region_fold", "region_scan", "generic_scan", "arg_reduce", "mask(", "helper @"):
        assert any(fragment in text for text in texts), fragment


# A row compare of a read (the dot-rows matcher met a value it does not model: KeyError).
ROW_COMPARE = """kernel @k(%x: view<u32, [%M, 31], in>, %y: view<bool, [%M, 31], out>) {
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [31]>
    %v = read %x index(%i, %cols) : tensor<u32, [31]>
    %b = lt %v, %v : tensor<bool, [31]>
    write %y, %b index(%i, %cols)
  }
}
"""


def test_a_row_compare_lowers_to_ptx():
    assert ptx_problems(ROW_COMPARE) == []


# A helper generic in its extent, called with the kernel's own (KeyError in the lowering).
POLYMORPHIC_HELPER = """helper @clamp(%p: tensor<f32, [%N]>, %q: tensor<f32, [%N]>) -> (tensor<f32, [%N]>) {
  %r = maximum %p, %q : tensor<f32, [%N]>
  yield %r
}

kernel @k(%x: view<f32, [%M, %K], in>, %y: view<f32, [%M, %K], out>) {
  %z = constant {value = 0.0} : f32
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%K]>
    %v = read %x index(%i, %cols) : tensor<f32, [%K]>
    %zs = broadcast %z : tensor<f32, [%K]>
    %w = call %v, %zs {callee = @clamp} : tensor<f32, [%K]>
    write %y, %w index(%i, %cols)
  }
}
"""


def test_a_helper_generic_in_its_extent_runs_on_the_cpu_and_lowers_to_ptx():
    x = np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32)
    got, expected = both(POLYMORPHIC_HELPER, "k", {"x": x})
    assert_same_bits(got["y"], expected["y"])
    assert_same_bits(expected["y"], np.maximum(x, 0))
    assert ptx_problems(POLYMORPHIC_HELPER) == []
