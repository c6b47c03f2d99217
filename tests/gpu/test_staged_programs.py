"""Top-level programs with whole-tensor reductions (builtin, arg_reduce, generic_reduce), dot
products and scans run as stages (docs/gpu.md,
"Staged programs"): the stage plan as launch.json records it (no GPU needed), and on the
GPU the interpreter's results for extents 0, 1, odd, one chunk (of 1024 or 2048), past a
chunk and past the grid (132 SMs x 8 CTAs x a chunk)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from differential import assert_close, assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from sample_paths import sample_text
from staged_programs import (ARGMAX, CUMSUM, DOT_INIT, IDOT_2D, L2_NORMALIZE, NORMALIZE, RANGE, SCALE_2D, SPREAD,
                             staged_inputs)

EXTENTS = [0, 1, 33, 1024, 2049, 3_000_001]
PROGRAMS = {"normalize": NORMALIZE, "spread": SPREAD, "cumsum": CUMSUM,
            "exclusive_offsets": sample_text("cumsum"), "l2_normalize": L2_NORMALIZE, "dot_init": DOT_INIT,
            "vec_argmax": ARGMAX, "range_of": RANGE}
# idot2d's contraction pairs axis 0 with axis 1: the elements it multiplies lie at different
# coordinates, which no thread's slots hold together
TRANSPOSED_IDOT = IDOT_2D.replace("rhs_contract = [0, 1]", "rhs_contract = [1, 0]").replace("%M", "%N")


def _launch(kernel: str, specialization: dict | None = None) -> dict:
    from intentc.driver import compile_kernel
    text = IDOT_2D if kernel == "idot2d" else PROGRAMS[kernel]
    artifacts = compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization).artifacts
    return json.loads(artifacts["launch.json"])


def test_a_scan_is_three_launches_with_one_scratch_word_a_chunk():
    launch = _launch("exclusive_offsets")
    assert launch["mapping"] == "staged"
    assert [(s["role"], s["grid"]) for s in launch["stages"]] == [
        ("partials", "ctas_per_sm:8"), ("combine", "fixed:1"), ("final", "ctas_per_sm:8")]
    assert launch["scratch"]["words_per_chunk"] == 1 and launch["scratch"]["chunk"] == 256 * launch["slots"]
    assert launch["scratch"]["domain"] == [["slot", 4]]      # %B: the extent word of view %counts


def test_dependent_grid_wide_ops_get_one_partials_and_combine_pair_a_depth():
    launch = _launch("spread")
    assert [s["role"] for s in launch["stages"]] == ["partials", "combine", "partials", "combine", "final"]
    depths = {g["value"]: g["depth"] for g in launch["scratch"]["grid_wide"]}
    assert depths == {"mx": 1, "mins": 1, "cs": 2}


@pytest.mark.parametrize("kernel, op", [("l2_normalize", "contract"), ("dot_init", "dot"), ("idot2d", "contract")])
def test_a_full_contraction_to_a_scalar_is_a_grid_wide_op(kernel, op):
    """A dot product (l2_normalize's `reduce sum` of a `mul` is canonicalized to `contract`)
    gets a partials and a combine launch as a reduction does, not one thread."""
    launch = _launch(kernel)
    assert launch["mapping"] == "staged"
    assert [g["op"] for g in launch["scratch"]["grid_wide"]] == [op]
    assert [s["role"] for s in launch["stages"]] == ["partials", "combine", "final"]


@pytest.mark.parametrize("kernel, op, words", [("vec_argmax", "arg_reduce", 2), ("range_of", "generic_reduce", 3)])
def test_a_tuple_reduction_to_scalars_is_a_grid_wide_op_of_several_words(kernel, op, words):
    """arg_reduce's partial is its value and position, generic_reduce's its components and
    presence flag: a scratch word each a chunk, folded by the combine launch."""
    launch = _launch(kernel)
    assert launch["mapping"] == "staged"
    assert [g["op"] for g in launch["scratch"]["grid_wide"]] == [op]
    assert launch["scratch"]["words_per_chunk"] == words


def test_a_generic_reduce_reading_outside_values_is_not_grid_wide():
    """The combine launch runs the author's region alone: one that reads a value of the
    program (here a parameter) stays off this path."""
    from intentc.driver import compile_kernel
    text = RANGE.replace("%lo: view<f32, [], out>)", "%lo: view<f32, [], out>, %s: f32)").replace(
        "%nh = maximum %a0, %x0 : f32", "%xs = mul %x0, %s : f32\n    %nh = maximum %a0, %xs : f32")
    launch = json.loads(compile_kernel(text, "range_of", "ptx", "sm_90").artifacts["launch.json"])
    assert launch["mapping"] != "staged"


def test_a_contraction_pairing_other_axes_is_not_grid_wide():
    from intentc.driver import compile_kernel
    launch = json.loads(compile_kernel(TRANSPOSED_IDOT, "idot2d", "ptx", "sm_90").artifacts["launch.json"])
    assert launch["mapping"] != "staged" and launch["stages"] == []


def test_a_specialized_domain_is_recorded_as_its_extent():
    assert _launch("cumsum", {"extents": {"N": 5000}})["scratch"]["domain"] == [5000]


def test_an_element_wise_program_is_one_chunked_grid_launch():
    from intentc.driver import compile_kernel
    artifacts = compile_kernel(sample_text("integer_hash_u32"), "murmur3_bucket", "ptx", "sm_90").artifacts
    launch = json.loads(artifacts["launch.json"])
    slots = launch["slots"]
    assert launch["mapping"] == "grid" and launch["stages"] == [] and slots > 0
    assert artifacts["kernel.ptx"].count(".entry") == 1
    # both writes in one loop over the chunks, each key loaded once a slot
    assert artifacts["kernel.ptx"].count("ld.global.b32") == slots


def test_every_stage_is_an_entry_of_one_module():
    from intentc.driver import compile_kernel
    ptx = compile_kernel(SPREAD, "spread", "ptx", "sm_90").artifacts["kernel.ptx"]
    assert ptx.count(".entry") == 5 and "malloc" not in ptx and "shfl.sync" in ptx


@requires_gpu()
@pytest.mark.parametrize("kernel, n", [(kernel, n) for kernel in sorted(PROGRAMS) for n in EXTENTS
                                       # an empty arg_reduce is an illegal input (R0405), tested below
                                       if (kernel, n) != ("vec_argmax", 0)])
def test_staged_programs_match_the_interpreter(kernel, n):
    inputs = staged_inputs(kernel, n, np.random.default_rng(n))
    got, expected = on_gpu_and_interp(PROGRAMS[kernel], kernel, inputs)
    for name in expected:
        if kernel == "normalize":               # a reassociated f32 sum (§6)
            assert_close(got[name], expected[name], 1e-5 * max(1.0, np.log2(max(n, 1))), name)
        elif kernel in ("l2_normalize", "dot_init"):     # a sum of products in any order (§5.3)
            _assert_dot_close(kernel, inputs, got[name], expected[name], name)
        elif kernel == "cumsum":                # a parenthesization of the prefix that keeps its order
            scale = np.maximum(1.0, np.abs(np.cumsum(np.abs(inputs["x"].astype(np.float64)))))
            assert np.all(np.abs(got[name] - expected[name]) <= 1e-6 * scale * max(1, np.log2(max(n, 1)))), name
        else:
            assert_same_bits(got[name], expected[name], name)


def _assert_dot_close(kernel: str, inputs: dict, got, expected, name: str) -> None:
    """Within 2^-20 · log2(n) of the sum of the products' magnitudes: a sum of n products in
    any order, rounded each add, errs by far less; one chunk's 1024 products left out or
    counted twice would err by more on these inputs (for l2_normalize, relative to ‖x‖² and
    the quotients' magnitudes)."""
    a, b = (inputs["x"], inputs["x"]) if kernel == "l2_normalize" else (inputs["a"], inputs["b"])
    magnitude = float(np.sum(np.abs(a.astype(np.float64) * b.astype(np.float64)))) + (
        abs(inputs["start"]) if kernel == "dot_init" else 0.0)
    tolerance = 2.0 ** -20 * max(1.0, np.log2(max(a.size, 1)))
    if name == "y":                            # x / ‖x‖: relative to each quotient
        assert_close(got, expected, tolerance, name)
        return
    assert abs(float(got) - float(expected)) <= tolerance * magnitude, (name, float(got), float(expected))


@requires_gpu()
@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (7, 33), (300, 1001), (1500, 2001)])
def test_a_reduction_over_a_2d_domain_matches_the_interpreter(shape):
    x = np.random.default_rng(shape[0]).standard_normal(shape).astype(np.float32)
    got, expected = on_gpu_and_interp(SCALE_2D, "scale2d", {"x": x})
    for name in expected:                      # max is exact; the quotients are correctly rounded
        assert_same_bits(got[name], expected[name], name)


@requires_gpu()
@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (7, 33), (300, 1001), (1500, 2001)])
def test_an_integer_dot_product_over_a_2d_domain_matches_the_interpreter(shape):
    rng = np.random.default_rng(shape[1])
    a, b = (rng.integers(-128, 128, shape).astype(np.int8) for _ in range(2))
    got, expected = on_gpu_and_interp(IDOT_2D, "idot2d", {"a": a, "b": b})
    assert_same_bits(got["out"], expected["out"], "out")     # integers: exact in any order


@requires_gpu()
@pytest.mark.parametrize("n", [1, 7, 200])
def test_a_contraction_pairing_other_axes_matches_the_interpreter(n):
    rng = np.random.default_rng(n)
    a, b = (rng.integers(-128, 128, (n, n)).astype(np.int8) for _ in range(2))
    got, expected = on_gpu_and_interp(TRANSPOSED_IDOT, "idot2d", {"a": a, "b": b})
    assert_same_bits(got["out"], expected["out"], "out")


@requires_gpu()
def test_an_empty_arg_reduce_is_an_error_on_the_gpu_too():
    from intentc.api import run
    from intentc.runtime.cuda import compile_cuda
    x = np.zeros(0, np.float32)
    with pytest.raises(Exception, match="R0405"):
        run(ARGMAX, "vec_argmax", {"x": x})
    with pytest.raises(Exception, match="R0405"):
        compile_cuda(ARGMAX, "vec_argmax", {})({"x": x}, None)


@requires_gpu()
def test_a_staged_kernel_launches_in_place_again_and_again():
    import intentc
    import torch
    from intentc.api import run
    x = staged_inputs("spread", 100_003, np.random.default_rng(5))["x"]
    expected = run(SPREAD, "spread", {"x": x})
    kernel = intentc.load(SPREAD, "spread", target="cuda")
    device = {"x": torch.from_numpy(x).cuda(), "m": torch.empty((), dtype=torch.int32, device="cuda"),
              "c": torch.empty(x.size, dtype=torch.int64, device="cuda"),
              "lo": torch.empty(x.size, dtype=torch.int32, device="cuda")}
    for _ in range(3):
        kernel(**device)
    kernel.synchronize()
    for name in ("m", "c", "lo"):
        assert_same_bits(device[name].cpu().numpy(), expected[name], name)
