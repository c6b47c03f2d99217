"""The warp-rows mapping (docs/gpu.md, "Quantized rows and dot rows") against the
interpreter. `q4k_q8k_matvec.kir` bit for bit (the integer sums are exact and the float
sequence is the reference's): Q4_K rows of random bytes (their f16 d and dmin include
infinities and NaNs) and of quantized data, a Q8_K vector from the interpreter's own
quantizer, row counts that fill no warp group, no blocks at all. `dot_f16_f32acc.kir`
within the f32 reordering bound."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_required import requires_gpu
from sample_paths import sample_text

pytestmark = requires_gpu()


def _inputs(rows: int, blocks: int, seed: int, raw: bool) -> dict:
    from intentc.interp.quant import quantize_q4_k, quantize_q8_k
    rng = np.random.default_rng(seed)
    if raw:
        w = rng.integers(0, 256, (rows, blocks, 144), dtype=np.uint8)
    else:
        w = quantize_q4_k(rng.standard_normal((rows * blocks, 256)).astype(np.float32)).reshape(rows, blocks, 144)
    x = quantize_q8_k(rng.standard_normal((blocks, 256)).astype(np.float32)).reshape(blocks, 292)
    return {"w": np.ascontiguousarray(w, dtype=np.uint8), "x": np.ascontiguousarray(x, dtype=np.uint8)}


@pytest.mark.parametrize("static", [False, True], ids=["dynamic-NB", "static-NB"])
@pytest.mark.parametrize("rows,blocks,raw", [(1, 1, False), (37, 3, False), (1000, 2, True), (9, 0, False),
                                             (300, 5, True), (130, 17, False)])
def test_q4k_q8k_rows_match_the_interpreter_bit_for_bit(rows, blocks, raw, static):
    """`static`: NB fixed at compile time, so the CTA stages the Q8_K vector in shared memory."""
    from intentc.api import run
    from intentc.runtime.cuda import compile_cuda
    text = sample_text("q4k_q8k_matvec")
    values = _inputs(rows, blocks, seed=rows + blocks, raw=raw)
    compiled = compile_cuda(text, "q4k_q8k_matvec", {"extents": {"NB": blocks}} if static else None)
    assert compiled.launch_config.mapping == "warp-rows", compiled.launch_config.mapping
    assert compiled.launch_config.plan["staged_x_blocks"] == (blocks if static else 0)
    got = np.asarray(compiled(values)["y"])
    expected = np.asarray(run(text, "q4k_q8k_matvec", values)["y"])
    assert got.dtype == expected.dtype == np.float32
    np.testing.assert_array_equal(got, expected)        # exact values, NaN where NaN


@pytest.mark.parametrize("static", [False, True], ids=["dynamic-NB", "static-NB"])
@pytest.mark.parametrize("layout", ["padded", "reversed", "offset"])
def test_q4k_q8k_rows_of_unaligned_and_strided_views(layout, static):
    """Views the 16-byte loads cannot take (blocks 145 bytes apart, rows walked backwards,
    an odd byte offset) take the lane groups' byte-wise loads (or the staging's): still bit
    for bit."""
    from intentc.api import View, run
    from intentc.runtime.cuda import compile_cuda
    text = sample_text("q4k_q8k_matvec")
    rows, blocks = 70, 3
    values = _inputs(rows, blocks, seed=7, raw=True)
    if layout == "padded":
        padded = np.zeros((rows, blocks, 145), dtype=np.uint8)
        padded[:, :, :144] = values["w"]
        values["w"] = padded[:, :, :144]
    elif layout == "reversed":
        values["w"] = values["w"][::-1]
    else:
        flat = np.concatenate([np.zeros(1, np.uint8), values["x"].reshape(-1)])
        values["x"] = View(flat, offset=1, strides=(292, 1), shape=(blocks, 292))
    compiled = compile_cuda(text, "q4k_q8k_matvec", {"extents": {"NB": blocks}} if static else None)
    got = np.asarray(compiled(values)["y"])
    np.testing.assert_array_equal(got, np.asarray(run(text, "q4k_q8k_matvec", values)["y"]))


# ---- dot rows (dot_f16_f32acc.kir) ----------------------------------------------------------------
@pytest.mark.parametrize("rows,width", [(1, 1), (37, 300), (1000, 2048), (9, 0), (64, 517)])
def test_batched_dot_rows_against_the_interpreter(rows, width):
    """f16 rows of every length (one vector run short of a lane, several chunks, none), f32
    sums in another order than the interpreter's (§6), and the f16 output correctly
    rounded from this run's own f32 sum."""
    from intentc.api import run
    from intentc.runtime.cuda import compile_cuda
    text = sample_text("dot_f16_f32acc")
    rng = np.random.default_rng(rows + width)
    values = {"x": rng.standard_normal((rows, width)).astype(np.float16),
              "y": rng.standard_normal((rows, width)).astype(np.float16)}
    if rows > 5 and width > 3:
        values["x"][2, 1], values["y"][3, 2], values["x"][4, 0] = np.inf, np.nan, 60000
        values["y"][4, 0] = 60000           # a product past f16's range: f32 keeps it
    compiled = compile_cuda(text, "batched_dot_f16")
    assert compiled.launch_config.mapping == "warp-rows", compiled.launch_config.mapping
    got = compiled(values)
    expected = run(text, "batched_dot_f16", values)
    out, want = np.asarray(got["out"]).astype(np.float64), np.asarray(expected["out"]).astype(np.float64)
    assert (np.isnan(out) == np.isnan(want)).all() and (out[np.isinf(want)] == want[np.isinf(want)]).all()
    magnitude = np.abs(values["x"].astype(np.float64) * values["y"].astype(np.float64)).sum(axis=1)
    finite = np.isfinite(want)
    assert (np.abs(out - want)[finite] <= (width * 2.0 ** -23 * magnitude)[finite]).all()
    assert np.array_equal(np.asarray(got["out_h"]), np.asarray(got["out"]).astype(np.float16), equal_nan=True)
