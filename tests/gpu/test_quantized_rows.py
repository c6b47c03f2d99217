"""The warp-rows mapping of `q4k_q8k_matvec.kir` (docs/gpu.md, "Quantized rows") against
the interpreter, bit for bit: the integer sums are exact and the float sequence is the
reference's. Q4_K rows of random bytes (their f16 d and dmin include infinities and NaNs)
and of quantized data, a Q8_K vector from the interpreter's own quantizer; row counts
that fill no warp group, and no blocks at all."""
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


@pytest.mark.parametrize("rows,blocks,raw", [(1, 1, False), (37, 3, False), (1000, 2, True), (9, 0, False),
                                             (300, 5, True)])
def test_q4k_q8k_rows_match_the_interpreter_bit_for_bit(rows, blocks, raw):
    from intentc.api import run
    from intentc.runtime.cuda import compile_cuda
    text = sample_text("q4k_q8k_matvec")
    values = _inputs(rows, blocks, seed=rows + blocks, raw=raw)
    compiled = compile_cuda(text, "q4k_q8k_matvec")
    assert compiled.launch_config.mapping == "warp-rows", compiled.launch_config.mapping
    got = np.asarray(compiled(values)["y"])
    expected = np.asarray(run(text, "q4k_q8k_matvec", values)["y"])
    assert got.dtype == expected.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32)) or \
        (np.isnan(got) == np.isnan(expected)).all() and np.array_equal(got[~np.isnan(got)], expected[~np.isnan(got)])
