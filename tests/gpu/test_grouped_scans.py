"""The register-form path `grouped-scans` (docs/gpu.md, "Paths awaiting GPU verification";
tests/codegen/test_cta_scan_groups.py checks its code) on
the GPU against the interpreter: the scans of test_cta_reductions.py at row lengths of
2-4 slot groups (512, 513, 1025, 4096) and tiles, every direction, builtin and generic."""
from __future__ import annotations

import numpy as np
import pytest

from differential import assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from intentc.options import CompileOptions
from sample_paths import sample_text
from test_cta_reductions import AFFINE_SCAN, SCAN_FLAGS, TILE_SCAN, TILE_SHAPES

GROUPED = CompileOptions(gpu_paths=("grouped-scans",))
COLUMNS = [500, 512, 513, 1025, 4096]     # 8 groups of one (generic), 2-4 of four


@requires_gpu()
@pytest.mark.parametrize("cols", COLUMNS)
def test_cumsum(cols):
    from test_cta_mapping import _assert_prefix_sums_close
    x = np.random.default_rng(cols).standard_normal((3, cols)).astype(np.float32)
    got, expected = on_gpu_and_interp(sample_text("cumsum"), "row_cumsum", {"x": x}, options=GROUPED, extents={"N": cols})
    _assert_prefix_sums_close(got["y"], expected["y"], x)


@requires_gpu()
@pytest.mark.parametrize("cols", COLUMNS)
@pytest.mark.parametrize("flags", SCAN_FLAGS)
def test_integer_scans_every_direction_bit_exact(flags, cols):
    text = sample_text("cumsum").split("// @exclusive_offsets")[0].replace("f32", "i32")
    text = text.replace("kind = sum}", f"kind = sum{flags}}}")
    ints = np.random.default_rng(cols + 1).integers(-2 ** 31, 2 ** 31, (3, cols)).astype(np.int32)   # sums wrap
    got, expected = on_gpu_and_interp(text, "row_cumsum", {"x": ints}, options=GROUPED, extents={"N": cols})
    assert_same_bits(got["y"], expected["y"])


@requires_gpu()
@pytest.mark.parametrize("cols", COLUMNS)
@pytest.mark.parametrize("flags", SCAN_FLAGS)
def test_generic_scan_keeps_source_order_bit_exact(flags, cols):
    rng = np.random.default_rng(cols + 2)
    inputs = {"a": rng.integers(-2 ** 31, 2 ** 31, (3, cols)).astype(np.int32),
              "c": rng.integers(-2 ** 31, 2 ** 31, (3, cols)).astype(np.int32)}
    got, expected = on_gpu_and_interp(AFFINE_SCAN.replace("FLAGS", flags), "affine_scan", inputs, options=GROUPED,
                                      extents={"N": cols})
    for name in ("ya", "yc"):
        assert_same_bits(got[name], expected[name], name)


@requires_gpu()
@pytest.mark.parametrize("rows,cols", TILE_SHAPES)
@pytest.mark.parametrize("flags", SCAN_FLAGS)
def test_tile_scans_bit_exact(flags, rows, cols):
    x = np.random.default_rng(rows * cols).integers(-2 ** 31, 2 ** 31, (3, rows, cols)).astype(np.int32)
    got, expected = on_gpu_and_interp(TILE_SCAN.replace("FLAGS", flags), "tile_scan", {"x": x}, options=GROUPED,
                                      extents={"R": rows, "C": cols})
    assert_same_bits(got["y"], expected["y"])
