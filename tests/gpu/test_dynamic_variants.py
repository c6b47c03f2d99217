"""Register-form variants for dynamic row extents (docs/gpu.md, "Variants for dynamic
extents"), on the GPU against the interpreter: each kernel is compiled once with its row
length dynamic — lazily (each variant compiled on the first launch in its bucket, what the
runtime does by default) and eagerly (every variant of VARIANT_SIZES in the module) — and
launched at every bucket boundary (0, 1, the edges of the lazy buckets of the row lengths
tested, 2^k - 1, 2^k, 2^k + 1, and past the largest variant, where the kernel's own entry
runs)."""
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

# 63/64/65 and 960/961: edges of softmax's lazy buckets of 64 (T = 64 up to 1024); 1472/1473
# and 3000: inside larger buckets; 2^k ± 1: the eager variants' bounds; 19384: past the
# eager variants (the kernel's own entry), in a lazy bucket of T = 1024; 33768: past every
# lazy variant (softmax's: 32 slots × 1024 threads)
BOUNDARIES = sorted({0, 1, 2, 63, 64, 65, 960, 961, 1472, 1473, 3000,
                     *(size + delta for size in VARIANT_SIZES for delta in (-1, 0, 1)), VARIANT_SIZES[-1] + 3000,
                     33768})
ROWS = 3
FORMS = ("lazy", "eager")


@functools.cache
def _compiled(sample: str, kernel: str, form: str):
    from intentc.runtime.cuda import compile_cuda
    compiled = compile_cuda(sample_text(sample), kernel, {"lazy_variants": form == "lazy"})
    if form == "lazy":
        assert compiled.launch_config.variant_rule and not compiled.launch_config.variants
    else:
        assert compiled.launch_config.variants, "compiled without register-form variants"
    return compiled


def _both(sample: str, kernel: str, inputs: dict, form: str):
    return _compiled(sample, kernel, form)(inputs), run(sample_text(sample), kernel, inputs)


def _rows(rng, cols: int) -> np.ndarray:
    return rng.standard_normal((ROWS, cols)).astype(np.float32)


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", BOUNDARIES)
def test_softmax_and_layernorm_at_bucket_boundaries(cols, form):
    rng = np.random.default_rng(cols)
    x = _rows(rng, cols)
    got, expected = _both("row_softmax", "row_softmax", {"x": x, "t": np.float32(0.7)}, form)
    assert_close(got["y"], expected["y"], 1e-6)
    if cols == 0:
        return                                   # layernorm divides by N: rows are non-empty
    inputs = {"x": x, "gamma": _rows(rng, cols)[0], "beta": _rows(rng, cols)[0], "eps": np.float32(1e-5)}
    got, expected = _both("layernorm", "layernorm", inputs, form)
    for name in ("y", "mean_out", "rstd_out"):
        assert_close(got[name], expected[name], 1e-5, name)


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", BOUNDARIES)
def test_row_sums_and_flips_bit_exact_at_bucket_boundaries(cols, form):
    rng = np.random.default_rng(cols + 1)
    got, expected = _both("row_sum", "row_sum_i8", {"q": rng.integers(-128, 128, (ROWS, cols), dtype=np.int8)}, form)
    assert_same_bits(got["y"], expected["y"])
    got, expected = _both("reverse_copy_negative_stride", "flip_rows", {"x": _rows(rng, cols)}, form)
    assert_same_bits(got["y"], expected["y"])


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", BOUNDARIES)
def test_cumsum_and_dropout_at_bucket_boundaries(cols, form):
    rng = np.random.default_rng(cols + 2)
    x = _rows(rng, cols)
    if cols <= VARIANT_SIZES[-1]:
        # longer rows run cumsum's own entry, grid-stride, whose per-thread scan temporaries
        # (device malloc, row length × 4 bytes a thread) exhaust the heap past 16384
        got, expected = _both("cumsum", "row_cumsum", {"x": x}, form)
        _assert_prefix_sums_close(got["y"], expected["y"], x)
    inputs = {"x": x, "seed": np.uint64(1234), "offset": np.int64(7), "p": np.float32(0.25)}
    got, expected = _both("philox_dropout", "dropout", inputs, form)
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
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", [5, VARIANT_SIZES[-1] + 5, 40000])
def test_an_illegal_read_is_reported_at_its_op_by_every_entry(cols, form):
    """Every entry of a module numbers its check sites alike, and a lazily compiled variant
    decodes its own, so a variant's status names the read."""
    from intentc.runtime.cuda import compile_cuda
    kernel = compile_cuda(SHIFTED_READ, "shifted", {"lazy_variants": form == "lazy"})
    with pytest.raises(DiagnosticError) as raised:
        kernel({"x": np.zeros((2, cols), np.float32)})
    assert raised.value.diagnostics[0].code == "R0301" and raised.value.diagnostics[0].line == 9


@requires_gpu()
def test_load_in_place_compiles_each_bucket_once_and_reports_its_checks():
    """`intentc.load` launches on GPU tensors: the first launch of a row length compiles its
    bucket's variant, later launches (the prepared fast path) reuse it; a variant's illegal
    read is reported at the next synchronize."""
    torch = pytest.importorskip("torch", reason="in-place launches take torch tensors")
    import intentc
    kernel = intentc.load(sample_text("row_softmax"), "row_softmax", target="cuda")
    lazy = kernel.runner.variants       # a DynamicRowKernel's (runtime/dynamic_rows.py)
    assert lazy.built == {}             # loading compiled nothing
    for cols in (1000, 1024, 1000, 40000, 1000):
        x = torch.randn(ROWS, cols, device="cuda")
        y = torch.empty_like(x)
        kernel(x=x, t=0.7, y=y)
        kernel.synchronize()
        expected = run(sample_text("row_softmax"), "row_softmax", {"x": x.cpu().numpy(), "t": np.float32(0.7)})
        assert_close(y.cpu().numpy(), expected["y"], 1e-6)
    # 1000 runs the bucket of rows that leave the last group partial (groups of 64 threads x 4:
    # the launch facts give softmax vector groups), 1024 the one they fill; 40000 runs the
    # kernel's own entry
    assert sorted(lazy.built) == [(769, 1023), (1024, 1024)] and not kernel.launch_config.variants
    shifted = intentc.load(SHIFTED_READ, "shifted", target="cuda")
    shifted(x=torch.zeros(2, 5, device="cuda"), y=torch.zeros(2, 5, device="cuda"))
    with pytest.raises(DiagnosticError) as raised:
        shifted.synchronize()
    assert raised.value.diagnostics[0].code == "R0301" and raised.value.diagnostics[0].line == 9
