"""Reductions and scans of every kind in CTA-mapped iterations (docs/gpu.md): which kernels
get the CTA mapping and what their PTX holds (here, no GPU needed), and on the GPU the
interpreter's results, in the dynamic form (row length left dynamic) and the register
form (specialized), for row lengths around the warp and CTA sizes and special values.

Bits must match wherever the result does not depend on the parenthesization: max/min
(NaN, ±inf, -0.0), arg_reduce (ties to the lowest index, the first NaN), integer sums and
generic scans over a ring (wrapping i32 arithmetic: any order-keeping parenthesization
gives the same bits, so a non-commutative combine checks source order exactly). Float
sums and Welford merges may reassociate (§6) and are held to a bound.
"""
from __future__ import annotations

import json
import re

import ml_dtypes
import numpy as np
import pytest

from differential import assert_close, assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from sample_paths import sample_text

# empty, one element, past a warp, past a CTA (twice); without --extent rows up to 16384 run
# on register-form variants (nvptx/variants.py), longer ones on the dynamic form
COLUMNS = [0, 1, 33, 1025, 5000, 20000]
FORMS = ["dynamic", "register"]


def _extents(form: str, name: str, cols: int) -> dict | None:
    return {name: cols} if form == "register" else None


def _compile(text: str, kernel: str, extents: dict | None = None) -> tuple[str, dict]:
    from intentc.driver import compile_kernel
    from intentc.options import Specialization
    artifacts = compile_kernel(text, kernel, "ptx", "sm_90", specialization=Specialization(extents=extents or {}))
    return artifacts.artifacts["kernel.ptx"], json.loads(artifacts.artifacts["launch.json"])


# ---- which kernels get the CTA mapping (no GPU) ------------------------------------------------------
CTA_KERNELS = [("row_max", "row_max", "N"), ("row_argmax", "row_argmax", "V"),
               ("welford_generic_reduce", "welford_rows", "N"), ("nan_max_vs_maximum_num", "nan_max", "N"),
               ("tuple_record_stats", "row_stats", "N"), ("cummax", "row_cummax", "N"),
               ("cumsum", "row_cumsum", "N"), ("gelu_helper_call", "gelu_fwd", "N"),
               ("prefix_logsumexp_region_scan", "prefix_logsumexp", "N")]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("sample,kernel,extent", CTA_KERNELS)
def test_reductions_scans_loops_and_calls_get_the_cta_mapping_without_malloc(sample, kernel, extent, form):
    ptx, launch = _compile(sample_text(sample), kernel, _extents(form, extent, 4096))
    assert launch["mapping"] == "cta"
    assert "malloc" not in ptx                      # no per-row temporaries


@pytest.mark.parametrize("sample,kernel", [("row_argmax", "row_argmax"), ("welford_generic_reduce", "welford_rows"),
                                           ("cummax", "row_cummax")])
def test_tuple_reductions_and_scans_combine_through_shuffles_and_shared_memory(sample, kernel):
    ptx, _ = _compile(sample_text(sample), kernel)
    assert "shfl.sync" in ptx and ".shared" in ptx and "bar.sync" in ptx


def test_reverse_scans_shuffle_down_and_forward_ones_up():
    ptx, launch = _compile(sample_text("cummax"), "row_cummax", {"N": 2048})
    assert launch["slots"] > 0
    assert "shfl.sync.up" in ptx and "shfl.sync.down" in ptx


def test_low_float_view_loads_are_predicated_and_decoded_in_hardware():
    # summed in f32, nothing sees a NaN's bits: one cvt.f32.f16 (codegen/llvm/nan_payloads.py)
    ptx, _ = _compile(sample_text("row_sum"), "row_sum_f16", {"N": 2048})
    assert "@%p" in ptx and "ld.global.b16" in ptx and "cvt.f32.f16" in ptx


AFFINE_SCAN = """
kernel @affine_scan(%a: view<i32, [%M, %N], in>, %c: view<i32, [%M, %N], in>, %ya: view<i32, [%M, %N], out>, %yc: view<i32, [%M, %N], out>) {
  %two = constant {value = 2} : i32
  %three = constant {value = 3} : i32
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%N]>
    %ra = read %a index(%i, %cols) : tensor<i32, [%N]>
    %rc = read %c index(%i, %cols) : tensor<i32, [%N]>
    %pa, %pc = generic_scan %ra, %rc init(%two, %three) {axis = 0FLAGS} : tensor<i32, [%N]>, tensor<i32, [%N]> {
    ^combine(%a1: i32, %c1: i32, %a2: i32, %c2: i32):
      %a12 = mul %a1, %a2 : i32
      %t = mul %c1, %a2 : i32
      %c12 = add %t, %c2 : i32
      yield %a12, %c12
    }
    write %ya, %pa index(%i, %cols)
    write %yc, %pc index(%i, %cols)
  }
}
"""
SCAN_FLAGS = ["", ", exclusive = true", ", reverse = true", ", exclusive = true, reverse = true"]


@pytest.mark.parametrize("form", FORMS)
def test_generic_scans_are_block_scans(form):
    ptx, launch = _compile(AFFINE_SCAN.replace("FLAGS", ", reverse = true"), "affine_scan",
                           _extents(form, "N", 3000))
    # the register form scans the threads last to first (shfl.sync.down); the dynamic form
    # numbers a chunk's positions from the end instead, so its block scan runs forward
    assert launch["mapping"] == "cta" and "malloc" not in ptx
    assert ("shfl.sync.down" if form == "register" else "shfl.sync.up") in ptx


def test_a_generic_scans_dynamic_form_runs_small_ctas_of_long_thread_chunks(monkeypatch):
    """The dynamic form of an iteration with a generic scan takes `cta.AUTHOR_SCAN_*` (the
    256 x 8 form, set here so that the test stays about it: CTAs of 256 threads, 8 scan positions a thread, 6
    CTAs an SM asked of ptxas, no Loop Strength Reduction); builtin scans keep 512 threads and
    4 positions; and the block scan's totals are scanned by the first warp alone: its rolled
    loop runs 5 + log2(8) trips there, 5 elsewhere."""
    from intentc.codegen.nvptx import cta
    for name, value in (("THREADS", 256), ("POSITIONS", 8), ("RESIDENT", 6), ("LSR", False)):
        monkeypatch.setattr(cta, f"AUTHOR_SCAN_{name}", value)
    ptx, launch = _compile(AFFINE_SCAN.replace("FLAGS", ""), "affine_scan")
    assert (launch["block"][0], launch["scan_positions"], launch["resident_ctas"]) == (256, 8, 6)
    assert launch["strength_reduce"] is False
    assert ".minnctapersm 6" in ptx and ".maxntid 256" in ptx
    assert re.search(r"selp\.b64\s+%rd\d+, 8, 5, %p\d+;", ptx)     # the first warp's trips, the others'
    _, builtin = _compile(sample_text("cumsum"), "row_cumsum")
    assert (builtin["block"][0], builtin["scan_positions"], builtin["resident_ctas"]) == (512, 4, 0)


# ---- on the GPU -------------------------------------------------------------------------------------
@pytest.mark.parametrize("flags", ["", ", exclusive = true, reverse = true"])
def test_a_generic_scans_combine_is_emitted_in_three_places(flags):
    """The dynamic form's chunk of a generic scan folds and visits its positions in rolled
    loops, and its block scan's two warp scans are one rolled loop: the author's combine
    (a1·a2, c1·a2 + c2: two multiplies) is emitted three times, not once a position, once a
    warp scan and thrice more in the block scan (34 integer multiplies before session 10)."""
    ptx, launch = _compile(AFFINE_SCAN.replace("FLAGS", flags), "affine_scan")
    assert launch["mapping"] == "cta" and launch["slots"] == 0
    assert len(re.findall(r"\b(?:mul|mad)\.lo\.s32", ptx)) <= 3 * 2 + 4     # and the positions' index math


def _special_rows(rng, cols: int, dtype) -> np.ndarray:
    """Four rows: random; random with a NaN; ±0.0 only; random with ±inf."""
    x = rng.standard_normal((4, cols)).astype(np.float32)
    if cols:
        x[1, rng.integers(cols)] = np.nan
        x[2] = np.where(rng.random(cols) < 0.5, -0.0, 0.0)
        x[3, rng.integers(cols)] = np.inf
        x[3, rng.integers(cols)] = -np.inf
    return x.astype(dtype)


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", COLUMNS)
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_low_float_row_max_bit_exact(dtype, cols, form):
    rng = np.random.default_rng(cols)
    numpy_dtype = ml_dtypes.bfloat16 if dtype == "bf16" else np.float16
    text = sample_text("row_max").replace("bf16", dtype)
    x = _special_rows(rng, cols, numpy_dtype)
    got, expected = on_gpu_and_interp(text, "row_max", {"x": x}, extents=_extents(form, "N", cols))
    for name in ("y", "y32"):
        assert_same_bits(got[name], expected[name], name)


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", COLUMNS[1:])        # an empty row is an illegal input (R0405)
@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_arg_reduce_ties_to_the_lowest_index_and_the_first_nan(dtype, kind, cols, form):
    rng = np.random.default_rng(cols + 1)
    text = sample_text("row_argmax").replace("kind = max", f"kind = {kind}").replace("f32", dtype)
    x = rng.integers(-3, 4, (4, cols)).astype(np.float32)     # many ties
    if dtype == "f32" and cols > 1:
        x[1, [cols // 2, cols - 1]] = np.nan                   # the first NaN wins
        x[2] = np.where(rng.random(cols) < 0.5, -0.0, 0.0)
        x[3, -1] = np.inf if kind == "max" else -np.inf
    inputs = {"logits": x.astype(np.float32 if dtype == "f32" else np.int32)}
    got, expected = on_gpu_and_interp(text, "row_argmax", inputs, extents=_extents(form, "V", cols))
    assert_same_bits(got["best"], expected["best"], "best")
    assert_same_bits(got["token"], expected["token"], "token")


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", COLUMNS)
def test_welford_generic_reduce(cols, form):
    rng = np.random.default_rng(cols + 2)
    x = (3.0 + rng.standard_normal((5, cols))).astype(np.float32)
    got, expected = on_gpu_and_interp(sample_text("welford_generic_reduce"), "welford_rows", {"x": x},
                                      extents=_extents(form, "N", cols))
    for name in ("mean_out", "var_out"):                       # merged in a tree (§6), not folded left
        assert_close(got[name], expected[name], 2e-5, name)


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", COLUMNS)
def test_nan_max_builtin_and_generic_reductions_bit_exact(cols, form):
    rng = np.random.default_rng(cols + 3)
    x = np.vstack([_special_rows(rng, cols, np.float32), np.full((1, cols), np.nan, np.float32)])
    got, expected = on_gpu_and_interp(sample_text("nan_max_vs_maximum_num"), "nan_max", {"x": x},
                                      extents=_extents(form, "N", cols))
    # every row, all-NaN ones too: no fold starts from the identity (not neutral for NaN here)
    for name in ("relu_prop", "relu_num", "row_max", "row_nanmax"):
        assert_same_bits(got[name], expected[name], name)


@requires_gpu()
@pytest.mark.parametrize("cols", [0, 1, 255, 257, 1000])
def test_row_stats_loop_of_helper_reductions(cols):
    rng = np.random.default_rng(cols + 4)
    x = _special_rows(rng, cols, np.float32)
    got, expected = on_gpu_and_interp(sample_text("tuple_record_stats"), "row_stats", {"x": x})
    for name in ("mins", "maxs", "counts"):
        assert_same_bits(got[name], expected[name], name)
    assert_close(got["means"], expected["means"], 1e-5, "means")


@requires_gpu()
@pytest.mark.parametrize("n", [0, 1, 1023, 1025, 5000])
def test_gelu_helper_call(n):
    rng = np.random.default_rng(n + 5)
    x = (3 * rng.standard_normal(n)).astype(np.float32)
    got, expected = on_gpu_and_interp(sample_text("gelu_helper_call"), "gelu_fwd", {"x": x})
    for name in ("y", "dydx"):                                  # libdevice erff/expf: a few ulps
        assert_close(got[name], expected[name], 1e-5, name)


SCAN_COLUMNS = [0, 1, 33, 512, 513, 1025, 5000, 20000]


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", SCAN_COLUMNS)
def test_cummax_both_directions_bit_exact(cols, form):
    rng = np.random.default_rng(cols + 6)
    x = _special_rows(rng, cols, np.float32)
    got, expected = on_gpu_and_interp(sample_text("cummax"), "row_cummax", {"x": x},
                                      extents=_extents(form, "N", cols))
    for name in ("prefix", "suffix"):
        assert_same_bits(got[name], expected[name], name)


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", SCAN_COLUMNS)
def test_cumsum_dynamic_and_register_forms(cols, form):
    from test_cta_mapping import _assert_prefix_sums_close
    rng = np.random.default_rng(cols + 7)
    x = rng.standard_normal((3, cols)).astype(np.float32)
    got, expected = on_gpu_and_interp(sample_text("cumsum"), "row_cumsum", {"x": x}, extents=_extents(form, "N", cols))
    _assert_prefix_sums_close(got["y"], expected["y"], x)


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", SCAN_COLUMNS)
@pytest.mark.parametrize("flags", SCAN_FLAGS)
def test_integer_scans_every_direction_bit_exact(flags, cols, form):
    rng = np.random.default_rng(cols + 8)
    text = sample_text("cumsum").split("// @exclusive_offsets")[0].replace("f32", "i32")
    text = text.replace("kind = sum}", f"kind = sum{flags}}}")
    ints = rng.integers(-2 ** 31, 2 ** 31, (3, cols)).astype(np.int32)      # sums wrap
    got, expected = on_gpu_and_interp(text, "row_cumsum", {"x": ints}, extents=_extents(form, "N", cols))
    assert_same_bits(got["y"], expected["y"])


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", SCAN_COLUMNS)
@pytest.mark.parametrize("flags", SCAN_FLAGS)
def test_generic_scan_keeps_source_order_bit_exact(flags, cols, form):
    rng = np.random.default_rng(cols + 9)
    inputs = {"a": rng.integers(-2 ** 31, 2 ** 31, (3, cols)).astype(np.int32),
              "c": rng.integers(-2 ** 31, 2 ** 31, (3, cols)).astype(np.int32)}
    got, expected = on_gpu_and_interp(AFFINE_SCAN.replace("FLAGS", flags), "affine_scan", inputs,
                                      extents=_extents(form, "N", cols))
    for name in ("ya", "yc"):
        assert_same_bits(got[name], expected[name], name)


ROW_VOTES = """
kernel @row_votes(%x: view<f32, [%M, %N], in>, %any_out: view<i32, [%M], out>, %all_out: view<i32, [%M], out>) {
  %zero = constant {value = 0.0} : f32
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%N]>
    %row = read %x index(%i, %cols) : tensor<f32, [%N]>
    %z = broadcast %zero : tensor<f32, [%N]>
    %pos = gt %row, %z : tensor<bool, [%N]>
    %a = reduce %pos {axes = [0], kind = any} : bool
    %l = reduce %pos {axes = [0], kind = all} : bool
    %ai = cast %a : i32
    %li = cast %l : i32
    write %any_out, %ai index(%i)
    write %all_out, %li index(%i)
  }
}
"""


@pytest.mark.parametrize("extents,votes", [(None, True), ({"N": 4096}, True), ({"N": 8}, False)])
def test_bool_any_and_all_over_the_cta_are_barrier_votes(extents, votes):
    """A row's any / all of bools is one `bar.red` where the iteration has the whole CTA;
    several short rows a CTA (N = 8) keep their groups' butterflies."""
    ptx, launch = _compile(ROW_VOTES, "row_votes", extents)
    assert launch["mapping"] == "cta"
    assert ("bar.red.or.pred" in ptx and "bar.red.and.pred" in ptx) == votes
    assert launch["iterations_per_cta"] == 1 or not votes


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cols", [0, 1, 8, 33, 1025, 5000])
def test_bool_any_and_all_bit_exact(cols, form):
    rng = np.random.default_rng(cols + 13)
    x = rng.standard_normal((5, cols)).astype(np.float32)
    x[1] = np.abs(x[1]) + 1                     # every element positive: all true
    x[2] = -np.abs(x[2]) - 1                    # none positive: any false
    if cols:
        x[3] = -1.0
        x[3, -1] = 1.0                          # only the last element positive
        x[4] = 1.0
        x[4, 0] = -1.0                          # all but the first positive
    got, expected = on_gpu_and_interp(ROW_VOTES, "row_votes", {"x": x}, extents=_extents(form, "N", cols))
    for name in ("any_out", "all_out"):
        assert_same_bits(got[name], expected[name], name)


# ---- partial reductions of a 2-D tile (the dynamic form stages their results in shared memory) -------
TILE_SOFTMAX = """
kernel @tile_softmax(%x: view<f32, [%M, ROWS, COLS], in>, %y: view<f32, [%M, ROWS, COLS], out>, %cmax: view<f32, [%M, COLS], out>) {
  parallel %M {
  ^t(%i: index):
    %r = iota {axis = 0} : tensor<index, [ROWS, COLS]>
    %c = iota {axis = 1} : tensor<index, [ROWS, COLS]>
    %ib = broadcast %i : tensor<index, [ROWS, COLS]>
    %tile = read %x index(%ib, %r, %c) : tensor<f32, [ROWS, COLS]>
    %m = reduce %tile {axes = [1], kind = max} : tensor<f32, [ROWS]>
    %mb = broadcast %m {dims = [0]} : tensor<f32, [ROWS, COLS]>
    %e0 = sub %tile, %mb : tensor<f32, [ROWS, COLS]>
    %e = exp %e0 : tensor<f32, [ROWS, COLS]>
    %s = reduce %e {axes = [1], kind = sum} : tensor<f32, [ROWS]>
    %sb = broadcast %s {dims = [0]} : tensor<f32, [ROWS, COLS]>
    %p = div %e, %sb : tensor<f32, [ROWS, COLS]>
    write %y, %p index(%ib, %r, %c)
    %cm = reduce %tile {axes = [0], kind = max} : tensor<f32, [COLS]>
    %c1 = iota : tensor<index, [COLS]>
    %ib1 = broadcast %i : tensor<index, [COLS]>
    write %cmax, %cm index(%ib1, %c1)
  }
}
"""
TILES = [(8, 64), (4, 1000), (64, 8), (1, 1), (3, 33)]


def _tile_softmax(rows: int, cols: int) -> str:
    return TILE_SOFTMAX.replace("ROWS", str(rows)).replace("COLS", str(cols))


@pytest.mark.parametrize("rows,cols", TILES)
def test_partial_reductions_stage_their_results_in_shared_memory(rows, cols):
    ptx, launch = _compile(_tile_softmax(rows, cols), "tile_softmax")
    assert launch["mapping"] == "cta" and "malloc" not in ptx
    values = launch["layouts"]["values"]
    assert all(values[name].startswith("#shared") for name in ("m", "s", "cm"))
    assert values["tile"] == values["p"] and values["tile"].startswith("#layout")


@requires_gpu()
@pytest.mark.parametrize("rows,cols", TILES)
def test_partial_reductions_along_either_axis(rows, cols):
    rng = np.random.default_rng(rows * cols)
    x = rng.standard_normal((5, rows, cols)).astype(np.float32)
    x[1, 0, 0], x[2, -1, -1] = np.nan, -np.inf
    got, expected = on_gpu_and_interp(_tile_softmax(rows, cols), "tile_softmax", {"x": x})
    assert_same_bits(got["cmax"], expected["cmax"], "cmax")
    assert_close(got["y"], expected["y"], 1e-6, "y")


REGION_FOLD = """
kernel @fold_rows(%x: view<i32, [%M, %N], in>, %s: view<i32, [%M], out>, %m: view<i32, [%M], out>) {
  %zero = constant {value = 0} : i32
  %lo = constant {value = -2147483648} : i32
  parallel %M {
  ^row(%i: index):
    %cols = iota : tensor<index, [%N]>
    %row = read %x index(%i, %cols) : tensor<i32, [%N]>
    %fs, %fm = region_fold %row init(%zero, %lo) {axis = 0} : i32, i32 {
    ^summarize(%len: index, %pos: tensor<index, [%len]>, %xs: tensor<i32, [%len]>):
      %w = cast %pos : tensor<i32, [%len]>
      %t = mul %xs, %w : tensor<i32, [%len]>
      %ss = reduce %t {axes = [0], kind = sum} : i32
      %mm = reduce %xs {axes = [0], kind = max} : i32
      yield %ss, %mm
    } {
    ^combine(%a1: i32, %b1: i32, %a2: i32, %b2: i32):
      %a = add %a1, %a2 : i32
      %b = maximum %b1, %b2 : i32
      yield %a, %b
    }
    write %s, %fs index(%i)
    write %m, %fm index(%i)
  }
}
"""


def test_region_folds_to_scalars_summarize_the_row_over_the_cta():
    ptx, launch = _compile(REGION_FOLD, "fold_rows")
    assert launch["mapping"] == "cta" and "malloc" not in ptx and "shfl.sync.bfly" in ptx


@requires_gpu()
@pytest.mark.parametrize("cols", COLUMNS)
def test_region_fold_bit_exact(cols):
    rng = np.random.default_rng(cols + 10)
    x = rng.integers(-2 ** 31, 2 ** 31, (4, cols)).astype(np.int32)
    got, expected = on_gpu_and_interp(REGION_FOLD, "fold_rows", {"x": x})
    for name in ("s", "m"):                     # the empty row gives the identities
        assert_same_bits(got[name], expected[name], name)


def test_a_dynamic_scan_read_other_than_coordinate_by_coordinate_falls_back():
    """A scan of a scan would prime a scan inside another's chunk loop; the dynamic form
    declines it (grid-stride), while the register form scans into registers."""
    text = sample_text("cumsum").split("// @exclusive_offsets")[0].replace(
        "write %y, %c index(%i, %cols)", "%c2 = scan %c {axis = 0, kind = sum} : tensor<f32, [%N]>\n"
        "    write %y, %c2 index(%i, %cols)")
    _, dynamic = _compile(text, "row_cumsum")
    _, register = _compile(text, "row_cumsum", {"N": 1000})
    assert dynamic["mapping"] == "grid-stride" and register["mapping"] == "cta"


@requires_gpu()
@pytest.mark.parametrize("cols", COLUMNS)
def test_region_scan_prefix_logsumexp(cols):
    rng = np.random.default_rng(cols + 11)
    x = (4 * rng.standard_normal((4, cols))).astype(np.float32)
    if cols:
        x[1, : cols // 2 + 1] = -np.inf                         # no live element before the middle
        x[2] = -np.inf                                           # none at all: -inf throughout
    got, expected = on_gpu_and_interp(sample_text("prefix_logsumexp_region_scan"), "prefix_logsumexp", {"x": x})
    for name in ("y", "lse"):                                    # exp/log within libdevice's ulps, merged in a tree
        assert_close(got[name], expected[name], 2e-5, name)


TILE_ARGMAX = """
kernel @tile_argmax(%x: view<f32, [%M, ROWS, COLS], in>, %v: view<f32, [%M, ROWS], out>, %j: view<i32, [%M, ROWS], out>) {
  parallel %M {
  ^t(%i: index):
    %r = iota {axis = 0} : tensor<index, [ROWS, COLS]>
    %c = iota {axis = 1} : tensor<index, [ROWS, COLS]>
    %ib = broadcast %i : tensor<index, [ROWS, COLS]>
    %tile = read %x index(%ib, %r, %c) : tensor<f32, [ROWS, COLS]>
    %bv, %bj = arg_reduce %tile {axis = 1, kind = KIND} : tensor<f32, [ROWS]>, tensor<index, [ROWS]>
    %bj32 = cast %bj : tensor<i32, [ROWS]>
    %r1 = iota : tensor<index, [ROWS]>
    %ib1 = broadcast %i : tensor<index, [ROWS]>
    write %v, %bv index(%ib1, %r1)
    write %j, %bj32 index(%ib1, %r1)
  }
}
"""


def _tile_argmax(rows: int, cols: int, kind: str = "max") -> str:
    return TILE_ARGMAX.replace("ROWS", str(rows)).replace("COLS", str(cols)).replace("KIND", kind)


def test_partial_arg_reduce_stages_values_and_positions_in_shared_memory():
    ptx, launch = _compile(_tile_argmax(8, 64), "tile_argmax")
    assert launch["mapping"] == "cta" and "malloc" not in ptx
    values = launch["layouts"]["values"]
    assert values["bv"].startswith("#shared") and values["bj"].startswith("#shared")


@requires_gpu()
@pytest.mark.parametrize("rows,cols", [(8, 64), (3, 1000), (600, 5), (1, 1)])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_partial_arg_reduce_bit_exact(rows, cols, kind):
    rng = np.random.default_rng(rows + cols)
    x = rng.integers(-3, 4, (4, rows, cols)).astype(np.float32)     # ties
    x[1, 0, -1] = np.nan
    got, expected = on_gpu_and_interp(_tile_argmax(rows, cols, kind), "tile_argmax", {"x": x})
    assert_same_bits(got["v"], expected["v"], "v")
    assert_same_bits(got["j"], expected["j"], "j")


# ---- scans along the last axis of a 2-D tile (its lines: one segmented block scan) -------------------
TILE_SCAN = """
kernel @tile_scan(%x: view<i32, [%M, %R, %C], in>, %y: view<i32, [%M, %R, %C], out>) {
  parallel %M {
  ^t(%i: index):
    %r = iota {axis = 0} : tensor<index, [%R, %C]>
    %c = iota {axis = 1} : tensor<index, [%R, %C]>
    %ib = broadcast %i : tensor<index, [%R, %C]>
    %tile = read %x index(%ib, %r, %c) : tensor<i32, [%R, %C]>
    %s = scan %tile {axis = 1, kind = sum FLAGS} : tensor<i32, [%R, %C]>
    write %y, %s index(%ib, %r, %c)
  }
}
"""
TILE_SHAPES = [(3, 1), (1, 7), (5, 33), (7, 300), (2, 1500)]


@pytest.mark.parametrize("form", FORMS)
def test_scans_along_the_last_axis_of_a_tile_are_segmented_block_scans(form):
    ptx, launch = _compile(TILE_SCAN.replace("FLAGS", ", reverse = true"), "tile_scan",
                           {"R": 5, "C": 33} if form == "register" else None)
    assert launch["mapping"] == "cta" and "malloc" not in ptx and "shfl.sync" in ptx
    assert (launch["slots"] > 0) == (form == "register")


@requires_gpu()
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("rows,cols", TILE_SHAPES)
@pytest.mark.parametrize("flags", SCAN_FLAGS)
def test_tile_scans_bit_exact(flags, rows, cols, form):
    rng = np.random.default_rng(rows * cols + 12)
    x = rng.integers(-2 ** 31, 2 ** 31, (3, rows, cols)).astype(np.int32)
    got, expected = on_gpu_and_interp(TILE_SCAN.replace("FLAGS", flags), "tile_scan", {"x": x},
                                      extents={"R": rows, "C": cols} if form == "register" else None)
    assert_same_bits(got["y"], expected["y"])
