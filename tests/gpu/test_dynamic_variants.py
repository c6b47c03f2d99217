"""Register-form variants for dynamic row extents (docs/gpu.md, "Variants for dynamic
extents"), on the GPU against the interpreter: each kernel is compiled once with its row
length dynamic and launched at every bucket boundary (0, 1, 2^k - 1, 2^k, 2^k + 1, and
past the largest bucket, where the kernel's own entry runs)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from differential import assert_close, assert_same_bits
from gpu_required import requires_gpu
from sample_paths import sample_text
from test_cta_mapping import _assert_prefix_sums_close

from intentc.api import run
from intentc.codegen.nvptx.variants import VARIANT_SIZES
from intentc.diagnostics import DiagnosticError

BOUNDARIES = sorted({0, 1, 2, *(size + delta for size in VARIANT_SIZES for delta in (-1, 0, 1)),
                     VARIANT_SIZES[-1] + 3000})
ROWS = 3


@functools.cache
def _compiled(sample: str, kernel: str):
    from intentc.runtime.cuda import compile_cuda
    compiled = compile_cuda(sample_text(sample), kernel)
    assert compiled.launch_config.variants, "compiled without register-form variants"
    return compiled


def _both(sample: str, kernel: str, inputs: dict):
    return _compiled(sample, kernel)(inputs), run(sample_text(sample), kernel, inputs)


def _rows(rng, cols: int) -> np.ndarray:
    return rng.standard_normal((ROWS, cols)).astype(np.float32)


@requires_gpu()
@pytest.mark.parametrize("cols", BOUNDARIES)
def test_softmax_and_layernorm_at_bucket_boundaries(cols):
    rng = np.random.default_rng(cols)
    x = _rows(rng, cols)
    got, expected = _both("row_softmax", "row_softmax", {"x": x, "t": np.float32(0.7)})
    assert_close(got["y"], expected["y"], 1e-6)
    if cols == 0:
        return                                   # layernorm divides by N: rows are non-empty
    inputs = {"x": x, "gamma": _rows(rng, cols)[0], "beta": _rows(rng, cols)[0], "eps": np.float32(1e-5)}
    got, expected = _both("layernorm", "layernorm", inputs)
    for name in ("y", "mean_out", "rstd_out"):
        assert_close(got[name], expected[name], 1e-5, name)


@requires_gpu()
@pytest.mark.parametrize("cols", BOUNDARIES)
def test_row_sums_and_flips_bit_exact_at_bucket_boundaries(cols):
    rng = np.random.default_rng(cols + 1)
    got, expected = _both("row_sum", "row_sum_i8", {"q": rng.integers(-128, 128, (ROWS, cols), dtype=np.int8)})
    assert_same_bits(got["y"], expected["y"])
    got, expected = _both("reverse_copy_negative_stride", "flip_rows", {"x": _rows(rng, cols)})
    assert_same_bits(got["y"], expected["y"])


@requires_gpu()
@pytest.mark.parametrize("cols", BOUNDARIES)
def test_cumsum_and_dropout_at_bucket_boundaries(cols):
    rng = np.random.default_rng(cols + 2)
    x = _rows(rng, cols)
    if cols <= VARIANT_SIZES[-1]:
        # longer rows run cumsum's own entry, grid-stride, whose per-thread scan temporaries
        # (device malloc, row length × 4 bytes a thread) exhaust the heap past 16384
        got, expected = _both("cumsum", "row_cumsum", {"x": x})
        _assert_prefix_sums_close(got["y"], expected["y"], x)
    inputs = {"x": x, "seed": np.uint64(1234), "offset": np.int64(7), "p": np.float32(0.25)}
    got, expected = _both("philox_dropout", "dropout", inputs)
    assert_same_bits(got["keep_out"], expected["keep_out"])
    assert_same_bits(got["y"], expected["y"])


SHIFTED_READ = """
kernel @shifted(%x: view<f32, [%M, %N], in>, %y: view<f32, [%M, %N], out>) {
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%N]>
    %one = constant {value = 1} : index
    %one_b = broadcast %one : tensor<index, [%N]>
    %next = add %cols, %one_b : tensor<index, [%N]>
    %v = read %x index(%i, %next) : tensor<f32, [%N]>
    write %y, %v index(%i, %cols)
  }
}
"""


@requires_gpu()
@pytest.mark.parametrize("cols", [5, VARIANT_SIZES[-1] + 5])
def test_an_illegal_read_is_reported_at_its_op_by_every_entry(cols):
    """Every entry numbers its check sites alike, so a variant's status names the read."""
    from intentc.runtime.cuda import compile_cuda
    kernel = compile_cuda(SHIFTED_READ, "shifted")
    with pytest.raises(DiagnosticError) as raised:
        kernel({"x": np.zeros((2, cols), np.float32)})
    assert raised.value.diagnostics[0].code == "R0301" and raised.value.diagnostics[0].line == 9
