"""Math functions on the GPU against the interpreter, in ULPs of the result format. f32 uses
libdevice's f32 functions, held to the CUDA Programming Guide's single-precision ULP table,
whose numbers the spec adopts for log1p (1), erfc (4) and i0 (6) — an integer ULP distance
from the interpreter's (correctly rounded) f32 result; f64 uses libdevice's f64 functions,
held to the CPU suite's bounds. Special values give the interpreter's results."""
from __future__ import annotations

import pytest

from differential import ulp_distance
from gpu_differential import load_test_module, on_gpu_and_interp
from gpu_required import requires_gpu
from programs import unary_kernel

cpu_math = load_test_module("tests/codegen/test_cpu_math.py", "cpu_math_cases_gpu")

# CUDA C++ Programming Guide, "Single-Precision Floating-Point Functions" (maximum ULP error,
# without -use_fast_math); functions evaluated exactly (sqrt, floor, ...) must give the bits.
F32_BOUND = {"exp": 2, "exp2": 2, "expm1": 1, "log": 1, "log2": 1, "log1p": 1, "sin": 2, "cos": 2, "tan": 4,
             "asin": 2, "acos": 2, "atan": 2, "sinh": 3, "cosh": 2, "tanh": 2, "erf": 2, "erfc": 4, "i0": 6,
             "lgamma": 6, "rsqrt": 2}


@requires_gpu()
@pytest.mark.parametrize("name,dtype", cpu_math.CASES)
def test_math_within_ulps_of_interpreter_on_gpu(name, dtype):
    kir = {"float32": "f32", "float64": "f64"}[dtype]
    x = cpu_math._inputs(dtype, name)
    got, expected = on_gpu_and_interp(unary_kernel(name, kir, kir), "k", {"x": x})
    bound = F32_BOUND.get(name, 0) if dtype == "float32" else cpu_math.BOUND.get(name, 2)
    distance = ulp_distance(got["y"], expected["y"])
    assert distance.max() <= bound, (x[distance.argmax()], got["y"][distance.argmax()], distance.max())


@requires_gpu()
def test_lgamma_f64_on_gpu_within_the_adopted_bound():
    """f64 lgamma (libdevice) within docs/kir.md §4's 4 ULP of mpmath for x > 0."""
    from intentc.runtime.cuda import compile_cuda
    assert cpu_math.lgamma_f64_ulps_from_exact(lambda kernel, inputs: compile_cuda(kernel, "k")(inputs)) <= 4
