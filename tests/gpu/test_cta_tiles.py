"""CTA-mapped iterations beyond the row form (docs/gpu.md, "Short rows" and "Tiles, gathers
and effects"): which kernels get it and what their PTX holds (no GPU needed), and on the GPU
the interpreter's results on fresh random inputs for extents 0, 1, odd, larger than a CTA,
several iterations a CTA, with and without specialized extents."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from ml_dtypes import bfloat16

from differential import assert_close, assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu
from intentc import View
from sample_paths import sample_text

TILE_KERNELS = [("rank1_update_outer", "rank1_update"), ("interleave_unique_store", "interleave"),
                ("rope_join_reshape", "rope_interleaved"), ("embedding_assume_in_bounds", "embedding_lookup"),
                ("segment_sum_scatter_reduce", "segment_sum"), ("atomic_counter", "count_above"),
                ("atomic_float_max_cas", "atomic_max_f32"), ("flag_publish_acquire_release", "window2_block_sums")]


def _compile(text: str, kernel: str, extents: dict | None = None) -> tuple[str, dict]:
    from intentc.driver import compile_kernel
    from intentc.options import Specialization
    artifacts = compile_kernel(text, kernel, "ptx", "sm_90", specialization=Specialization(extents=extents or {})).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("sample,kernel", TILE_KERNELS)
def test_tiles_gathers_scatters_and_atomics_are_cta_mapped_without_malloc(sample, kernel):
    ptx, launch = _compile(sample_text(sample), kernel)
    assert launch["mapping"] == "cta" and launch["block"][0] >= 64
    assert "malloc" not in ptx


def test_vectors_beside_a_tile_are_staged_in_shared_memory_and_recorded():
    ptx, launch = _compile(sample_text("rank1_update_outer"), "rank1_update")
    staged = {c["value"] for c in launch["layouts"]["conversions"] if c["through"] == "shared"}
    assert staged == {"uv", "vv"} and launch["layouts"]["values"]["uv"].startswith("#shared")
    assert ptx.count(".shared .align") == 2 and "ld.shared" in ptx


def test_a_transposed_tile_read_is_staged_and_visited_in_the_views_order():
    ptx, launch = _compile(TRANSPOSE_TILE, "transpose_tile")
    assert [c["value"] for c in launch["layouts"]["conversions"] if c["through"] == "shared"] == ["v"]
    assert "ld.shared" in ptx and "st.shared" in ptx


def test_a_copied_f16_row_moves_words_with_predicated_stores():
    # only stored as it is: no decoding or encoding (codegen/llvm/nan_payloads.py, bit_copy_reads)
    ptx, _ = _compile(sample_text("embedding_assume_in_bounds"), "embedding_lookup", {"D": 1024})
    assert "cvt.rn.f16.f64" not in ptx and "cvt.f64.f16" not in ptx
    assert re.search(r"@%p\d+ st\.b16", ptx)


def test_scalar_atomics_happen_once_an_iteration_behind_barriers():
    ptx, _ = _compile(sample_text("atomic_counter"), "count_above", {"N": 1 << 20})
    assert re.search(r"(atom|red)(\.\w+)*\.add\.u32", ptx)
    assert "intentc_cta_once" in ptx and ptx.count("bar.sync") >= 2


def test_short_rows_share_a_cta():
    _, launch = _compile(sample_text("floordiv_mod_i32"), "periodic_wrap", {"N": 4096})
    assert launch["mapping"] == "cta" and launch["iterations_per_cta"] == 128 and launch["block"][0] == 256
    encoding = next(iter(launch["layouts"]["encodings"].values()))
    assert "threadsPerWarp = [2]" in encoding and launch["slots"] == 2   # 3 coordinates on 2 lanes


def test_short_tiles_of_several_sizes_share_a_cta():
    _, launch = _compile(SMALL_TILES, "small_tiles")
    assert (launch["mapping"], launch["iterations_per_cta"], launch["slots"]) == ("cta", 32, 2)


def test_short_reductions_use_the_groups_own_lanes():
    ptx, launch = _compile(SHORT_ROW_SUM, "short_row_sum", {"N": 5})
    assert launch["iterations_per_cta"] == 64 and "shfl.sync.bfly" in ptx and "bar.sync" not in ptx


def test_costly_top_level_values_are_computed_once_a_thread():
    """kaiser's window (i0 of every coordinate, a call of the module's i0 helper) is computed
    before the iteration loop, into the thread's slots, not in every frame."""
    ptx, launch = _compile(sample_text("kaiser_window_i0"), "kaiser_frames", {"L": 1024})
    entry = ptx[ptx.index(".entry"):]
    entry = entry[:entry.index("\n}\n")]       # the kernel's body, without the helpers after it
    loop = entry[entry.index("%ctaid.x"):]
    assert launch["slots"] and "intentc_i0" in entry
    assert "__nv_" not in loop and "fma.rn.f64" not in loop and "intentc_i0" not in loop


# ---- kernels beyond the samples -----------------------------------------------------------------
SHORT_ROW_SUM = """
kernel @short_row_sum(%x: view<f32, [%M, %N], in>, %y: view<f32, [%M, %N], out>, %s: view<f32, [%M], out>) {
  %cols = iota : tensor<index, [%N]>
  parallel %M {
  ^row(%r: index):
    %v = read %x index(%r, %cols) : tensor<f32, [%N]>
    %t = reduce %v {axes = [0], kind = sum} : f32
    %t_b = broadcast %t : tensor<f32, [%N]>
    %d = sub %v, %t_b : tensor<f32, [%N]>
    write %y, %d index(%r, %cols)
    write %s, %t index(%r)
  }
}
"""

# Short 2-D tiles (3 x 5: 16 lanes an iteration) beside their row and column vectors.
SMALL_TILES = """
kernel @small_tiles(%x: view<f32, [%B, 3, 5], in>, %r: view<f32, [%B, 5], in>, %c: view<f32, [%B, 3], in>,
                    %y: view<f32, [%B, 3, 5], out>, %s: view<f32, [%B], out>) {
  %rows = iota {axis = 0} : tensor<index, [3, 1]>
  %cols = iota : tensor<index, [5]>
  %rows1 = iota : tensor<index, [3]>
  parallel %B {
  ^tile(%b: index):
    %xv = read %x index(%b, %rows, %cols) : tensor<f32, [3, 5]>
    %rv = read %r index(%b, %cols) : tensor<f32, [5]>
    %cv = read %c index(%b, %rows1) : tensor<f32, [3]>
    %rb = broadcast %rv : tensor<f32, [3, 5]>
    %cb = broadcast %cv {dims = [0]} : tensor<f32, [3, 5]>
    %p = mul %xv, %cb : tensor<f32, [3, 5]>
    %q = add %p, %rb : tensor<f32, [3, 5]>
    %t = reduce %q {axes = [0, 1], kind = max} : f32
    write %y, %q index(%b, %rows, %cols)
    write %s, %t index(%b)
  }
}
"""

# A plain transpose, tiles of 32 x 32: the read of x runs along y's orientation, so it is
# staged through shared memory, visited in x's orientation (coalesced).
TRANSPOSE_TILE = """
kernel @transpose_tile(%x: view<f32, [%M, %N], in>, %y: view<f32, [%N, %M], out>) {
  %c31 = constant {value = 31} : index
  %c32 = constant {value = 32} : index
  %zero = constant {value = 0.0} : f32
  %m_pad = add %M, %c31 : index
  %tiles_m = floordiv %m_pad, %c32 : index
  %n_pad = add %N, %c31 : index
  %tiles_n = floordiv %n_pad, %c32 : index
  %la = iota {axis = 0} : tensor<index, [32, 1]>
  %lb = iota : tensor<index, [32]>
  parallel %tiles_m, %tiles_n {
  ^tile(%ti: index, %tj: index):
    %i0 = mul %ti, %c32 : index
    %j0 = mul %tj, %c32 : index
    %j0_b = broadcast %j0 : tensor<index, [32, 1]>
    %i0_b = broadcast %i0 : tensor<index, [32]>
    %ya = add %j0_b, %la : tensor<index, [32, 1]>
    %yb = add %i0_b, %lb : tensor<index, [32]>
    %ya_t = broadcast %ya : tensor<index, [32, 32]>
    %yb_t = broadcast %yb : tensor<index, [32, 32]>
    %n_b = broadcast %N : tensor<index, [32, 32]>
    %m_b = broadcast %M : tensor<index, [32, 32]>
    %ok_a = lt %ya_t, %n_b : tensor<bool, [32, 32]>
    %ok_b = lt %yb_t, %m_b : tensor<bool, [32, 32]>
    %ok = and %ok_a, %ok_b : tensor<bool, [32, 32]>
    %v = read %x index(%yb, %ya) mask(%ok) fill(%zero) : tensor<f32, [32, 32]>
    write %y, %v index(%ya, %yb) mask(%ok)
  }
}
"""

# Records and tuples of tensors inside an iteration, and a scalar `if` choosing a value.
RECORDS = """
kernel @records(%x: view<f32, [%M, 40], in>, %y: view<f32, [%M, 40], out>, %s: view<f32, [%M], out>) {
  %cols = iota : tensor<index, [40]>
  %two = full {value = 2.0} : tensor<f32, [40]>
  %zero = constant {value = 0.0} : f32
  parallel %M {
  ^row(%r: index):
    %v = read %x index(%r, %cols) : tensor<f32, [40]>
    %d = mul %v, %two : tensor<f32, [40]>
    %pair = record %v, %d : record<value: tensor<f32, [40]>, double: tensor<f32, [40]>>
    %both = tuple %pair, %zero : tuple<record<value: tensor<f32, [40]>, double: tensor<f32, [40]>>, f32>
    %back = tuple_get %both {index = 0} : record<value: tensor<f32, [40]>, double: tensor<f32, [40]>>
    %dd = record_get %back {field = double} : tensor<f32, [40]>
    %vv = record_get %pair {field = value} : tensor<f32, [40]>
    %w = add %dd, %vv : tensor<f32, [40]>
    %t = reduce %w {axes = [0], kind = sum} : f32
    %positive = gt %t, %zero : bool
    %u = if %positive : f32 {
    ^then:
      yield %t
    } {
    ^else:
      %n = neg %t : f32
      yield %n
    }
    write %y, %w index(%r, %cols)
    write %s, %u index(%r)
  }
}
"""

# A tile transposed: y[j, i] = x[i, j] * scale[i] (tiles of 32 x 16, a broadcast along the
# rows, the tile read transposed), and z[i, 2j + k] = the same product (a join and reshapes).
TRANSPOSE = """
kernel @transpose_scale(%x: view<f32, [%M, %N], in>, %scale: view<f32, [%M], in>, %y: view<f32, [%N, %M], out>, %z: view<f32, [%M, %N2], out>) {
  %c2 = constant {value = 2} : index
  %c15 = constant {value = 15} : index
  %c16 = constant {value = 16} : index
  %c31 = constant {value = 31} : index
  %c32 = constant {value = 32} : index
  %zero = constant {value = 0.0} : f32
  %m_pad = add %M, %c31 : index
  %tiles_m = floordiv %m_pad, %c32 : index
  %n_pad = add %N, %c15 : index
  %tiles_n = floordiv %n_pad, %c16 : index
  %li = iota {axis = 0} : tensor<index, [32, 1]>
  %lj = iota : tensor<index, [16]>
  %lj2 = iota : tensor<index, [32]>
  parallel %tiles_m, %tiles_n {
  ^tile(%ti: index, %tj: index):
    %i0 = mul %ti, %c32 : index
    %j0 = mul %tj, %c16 : index
    %i0_b = broadcast %i0 : tensor<index, [32, 1]>
    %j0_b = broadcast %j0 : tensor<index, [16]>
    %rows = add %i0_b, %li : tensor<index, [32, 1]>
    %cols = add %j0_b, %lj : tensor<index, [16]>
    %rows_t = broadcast %rows : tensor<index, [32, 16]>
    %cols_t = broadcast %cols : tensor<index, [32, 16]>
    %m_b = broadcast %M : tensor<index, [32, 16]>
    %n_b = broadcast %N : tensor<index, [32, 16]>
    %ok_r = lt %rows_t, %m_b : tensor<bool, [32, 16]>
    %ok_c = lt %cols_t, %n_b : tensor<bool, [32, 16]>
    %ok = and %ok_r, %ok_c : tensor<bool, [32, 16]>
    %rows1 = reshape %rows : tensor<index, [32]>
    %m1 = broadcast %M : tensor<index, [32]>
    %ok1 = lt %rows1, %m1 : tensor<bool, [32]>
    %s = read %scale index(%rows1) mask(%ok1) fill(%zero) : tensor<f32, [32]>
    %s_t = broadcast %s {dims = [0]} : tensor<f32, [32, 16]>
    %v = read %x index(%rows, %cols) mask(%ok) fill(%zero) : tensor<f32, [32, 16]>
    %w = mul %v, %s_t : tensor<f32, [32, 16]>
    %cols_c = reshape %cols : tensor<index, [16, 1]>
    %rows_tt = broadcast %rows1 : tensor<index, [16, 32]>
    %cols_tt = broadcast %cols_c : tensor<index, [16, 32]>
    %m_bt = broadcast %M : tensor<index, [16, 32]>
    %n_bt = broadcast %N : tensor<index, [16, 32]>
    %okt_r = lt %rows_tt, %m_bt : tensor<bool, [16, 32]>
    %okt_c = lt %cols_tt, %n_bt : tensor<bool, [16, 32]>
    %ok_t = and %okt_r, %okt_c : tensor<bool, [16, 32]>
    %v_t = read %x index(%rows1, %cols_c) mask(%ok_t) fill(%zero) : tensor<f32, [16, 32]>
    %s_tt = broadcast %s : tensor<f32, [16, 32]>
    %w_t = mul %v_t, %s_tt : tensor<f32, [16, 32]>
    write %y, %w_t index(%cols_c, %rows1) mask(%ok_t)
    %flat = reshape %w : tensor<f32, [512]>
    %tile = reshape %flat : tensor<f32, [32, 16]>
    %pairs = join %tile, %tile : tensor<f32, [32, 16, 2]>
    %wide = reshape %pairs : tensor<f32, [32, 32]>
    %okp = join %ok, %ok : tensor<bool, [32, 16, 2]>
    %ok_wide = reshape %okp : tensor<bool, [32, 32]>
    %j02 = mul %j0, %c2 : index
    %j02_b = broadcast %j02 : tensor<index, [32]>
    %cols2 = add %j02_b, %lj2 : tensor<index, [32]>
    write %z, %wide index(%rows, %cols2) mask(%ok_wide)
  }
}
"""


# A histogram through tensor atomics (results unused): each coordinate's add on its thread.
ATOMIC_HISTOGRAM = """
kernel @atomic_histogram(%x: view<i32, [%N], in>, %h: view<u32, [16], inout>) {
  %c255 = constant {value = 255} : index
  %c256 = constant {value = 256} : index
  %zero = constant {value = 0} : i32
  %padded = add %N, %c255 : index
  %nblocks = floordiv %padded, %c256 : index
  %lane = iota : tensor<index, [256]>
  %n_b = broadcast %N : tensor<index, [256]>
  %fifteen = full {value = 15} : tensor<i32, [256]>
  %ones = full {value = 1} : tensor<u32, [256]>
  parallel %nblocks {
  ^block(%b: index):
    %base = mul %b, %c256 : index
    %base_b = broadcast %base : tensor<index, [256]>
    %i = add %base_b, %lane : tensor<index, [256]>
    %inb = lt %i, %n_b : tensor<bool, [256]>
    %v = read %x index(%i) mask(%inb) fill(%zero) : tensor<i32, [256]>
    %bin = and %v, %fifteen : tensor<i32, [256]>
    %old = atomic_rmw %h, %ones index(%bin) mask(%inb) {kind = add, order = relaxed} : tensor<u32, [256]>
  }
}
"""


def _inputs_rank1(rng, m, n):
    return {"a": rng.standard_normal((m, n)).astype(np.float32), "u": rng.standard_normal(m).astype(np.float32),
            "v": rng.standard_normal(n).astype(np.float32), "alpha": np.float32(0.75)}


def _inputs_interleave(rng, n):
    return {"a": rng.standard_normal(n).astype(np.float32), "b": rng.standard_normal(n).astype(np.float32),
            "out": np.zeros(2 * n, np.float32)}


def _inputs_rope(rng, t, h):
    return {"x": rng.standard_normal((t, h, 128)).astype(bfloat16), "cos": rng.standard_normal((t, 64)).astype(np.float32),
            "sin": rng.standard_normal((t, 64)).astype(np.float32), "y": np.zeros((t, h, 128), bfloat16)}


def _inputs_embedding(rng, n, d, vocab=37):
    """Every f16 bit pattern may occur in the table: NaNs with payloads, infinities, subnormals."""
    table = rng.integers(0, 1 << 16, (vocab, d), dtype=np.uint32).astype(np.uint16).view(np.float16)
    return {"ids": rng.integers(0, vocab, n).astype(np.int32), "table": table, "out": np.zeros((n, d), np.float16)}


def _inputs_segment(rng, n, d, segments=7):
    return {"x": rng.standard_normal((n, d)).astype(np.float32),
            "seg": rng.integers(-1, segments + 1, n).astype(np.int32),     # -1 and S: masked off
            "out": rng.standard_normal((segments, d)).astype(np.float32), "counts": np.zeros(segments, np.int32)}


def _inputs_count(rng, n):
    return {"x": rng.standard_normal(n).astype(np.float32), "threshold": np.float32(0.5),
            "counter": np.array([3], np.uint32)}


def _inputs_max(rng, n):
    return {"x": rng.standard_normal(n).astype(np.float32),
            "slot": np.array([np.float32(-1e30)]).view(np.uint32).copy()}


def _inputs_window(rng, blocks):
    return {"x": rng.standard_normal((blocks, 256)).astype(np.float32), "partial": np.zeros(blocks, np.float32),
            "flag": np.zeros(blocks, np.uint32), "out": np.zeros(blocks, np.float32)}


def _inputs_wrap(rng, n):
    return {"pos": rng.integers(-1000, 1000, (n, 3)).astype(np.int32), "period": np.int32(7),
            "cell": np.zeros((n, 3), np.int32), "wrapped": np.zeros((n, 3), np.int32)}


def _inputs_kaiser(rng, frames, length):
    return {"x": rng.standard_normal((frames, length)).astype(np.float32), "beta": np.float32(6.0),
            "y": np.zeros((frames, length), np.float32)}


QUANTIZE_Q4K = sample_text("quantize_q8_k").replace("@quantize_q8_k", "@quantize_q4_k").replace(
    "format = q8_k", "format = q4_k").replace("292", "144")


def _inputs_quantize(rng, rows, blocks, nbytes):
    x = rng.standard_normal((rows, blocks, 256)).astype(np.float32) * rng.uniform(0.01, 100, (rows, blocks, 1))
    if x.size:
        x[0, 0] = 0.0                      # an all-zero block: scale 0
    return {"x": x.astype(np.float32), "q": np.zeros((rows, blocks, nbytes), np.uint8)}


def _inputs_dequantize(rng, rows, blocks):
    return {"q": rng.integers(0, 256, (rows, blocks, 144)).astype(np.uint8), "x": np.zeros((rows, blocks, 256), np.float32)}


def _inputs_aliased_rank1(rng, n):
    """u and v are one array (views sharing memory), x a transposed strided view."""
    inputs = _inputs_rank1(rng, n, n)
    inputs["v"] = inputs["u"]
    return inputs


def _inputs_strided_transpose(rng, m, n):
    """x[i, j] = base[3 + i + j·(m + 2)]: a column-major view with an offset and padding."""
    inputs = _inputs_transpose(rng, m, n)
    base = rng.standard_normal(3 + n * (m + 2)).astype(np.float32)
    inputs["x"] = View(base, offset=3, strides=(1, m + 2), shape=(m, n))
    return inputs


def _inputs_atomic_histogram(rng, n):
    return {"x": rng.integers(-1000, 1000, n).astype(np.int32), "h": rng.integers(0, 5, 16).astype(np.uint32)}


def _inputs_small_tiles(rng, b):
    return {"x": rng.standard_normal((b, 3, 5)).astype(np.float32), "r": rng.standard_normal((b, 5)).astype(np.float32),
            "c": rng.standard_normal((b, 3)).astype(np.float32), "y": np.zeros((b, 3, 5), np.float32),
            "s": np.zeros(b, np.float32)}


def _inputs_records(rng, m):
    return {"x": rng.standard_normal((m, 40)).astype(np.float32), "y": np.zeros((m, 40), np.float32),
            "s": np.zeros(m, np.float32)}


def _inputs_transpose_tile(rng, m, n):
    return {"x": rng.standard_normal((m, n)).astype(np.float32), "y": np.zeros((n, m), np.float32)}


def _inputs_short_sum(rng, m, n):
    return {"x": rng.standard_normal((m, n)).astype(np.float32), "y": np.zeros((m, n), np.float32),
            "s": np.zeros(m, np.float32)}


def _inputs_transpose(rng, m, n):
    return {"x": rng.standard_normal((m, n)).astype(np.float32), "scale": rng.standard_normal(m).astype(np.float32),
            "y": np.zeros((n, m), np.float32), "z": np.zeros((m, 2 * n), np.float32)}


# (id, source, kernel, make(rng), extents to specialize or None, tolerance; 0: the same bits)
CASES = [
    *[(f"rank1-{m}x{n}{'-spec' if spec else ''}", sample_text("rank1_update_outer"), "rank1_update",
       lambda rng, m=m, n=n: _inputs_rank1(rng, m, n), {"M": m, "N": n} if spec else None, 1e-6)
      for m, n in [(0, 5), (1, 1), (65, 130), (200, 64)] for spec in (False, True)],
    *[(f"interleave-{n}", sample_text("interleave_unique_store"), "interleave",
       lambda rng, n=n: _inputs_interleave(rng, n), None, 0) for n in (0, 1, 255, 257, 5000)],
    *[(f"rope-{t}x{h}", sample_text("rope_join_reshape"), "rope_interleaved",
       lambda rng, t=t, h=h: _inputs_rope(rng, t, h), {"H": h} if h == 8 else None, 1e-2) for t, h in [(0, 3), (1, 1), (5, 3), (33, 8)]],
    *[(f"embedding-{n}x{d}", sample_text("embedding_assume_in_bounds"), "embedding_lookup",
       lambda rng, n=n, d=d: _inputs_embedding(rng, n, d), {"D": d} if d == 1024 else None, 0)
      for n, d in [(0, 4), (1, 1), (7, 33), (300, 1024)]],
    *[(f"segment-{n}x{d}", sample_text("segment_sum_scatter_reduce"), "segment_sum",
       lambda rng, n=n, d=d: _inputs_segment(rng, n, d), None, 1e-5) for n, d in [(0, 3), (1, 1), (63, 5), (1000, 33)]],
    *[(f"count-{n}{'-spec' if spec else ''}", sample_text("atomic_counter"), "count_above",
       lambda rng, n=n: _inputs_count(rng, n), {"N": n} if spec else None, 0) for n in (0, 1, 1023, 5000) for spec in (False, True)],
    *[(f"max-{n}", sample_text("atomic_float_max_cas"), "atomic_max_f32",
       lambda rng, n=n: _inputs_max(rng, n), None, 0) for n in (1, 1025, 5000)],
    *[(f"window-{b}", sample_text("flag_publish_acquire_release"), "window2_block_sums",
       lambda rng, b=b: _inputs_window(rng, b), None, 1e-5) for b in (0, 1, 2, 300)],
    *[(f"wrap-{n}{'-spec' if spec else ''}", sample_text("floordiv_mod_i32"), "periodic_wrap",
       lambda rng, n=n: _inputs_wrap(rng, n), {"N": n} if spec else None, 0) for n in (0, 1, 63, 65, 3000) for spec in (False, True)],
    *[(f"kaiser-{f}x{n}", sample_text("kaiser_window_i0"), "kaiser_frames",
       lambda rng, f=f, n=n: _inputs_kaiser(rng, f, n), {"L": n}, 1e-5) for f, n in [(0, 64), (3, 1024), (5, 33), (70, 100)]],
    *[(f"dequantize-q4k-{r}x{nb}{'-spec' if spec else ''}", sample_text("quantize_q8_k"), "dequantize_q4_k",
       lambda rng, r=r, nb=nb: _inputs_dequantize(rng, r, nb), {"NB": nb} if spec else None, 0)
      for r, nb in [(0, 2), (1, 1), (3, 5), (5, 32)] for spec in (False, True)],   # NB = 32: the bench's 32 rolled slots
    *[(f"quantize-{name}-{r}x{nb}{'-spec' if spec else ''}", source, kernel,
       lambda rng, r=r, nb=nb, nbytes=nbytes: _inputs_quantize(rng, r, nb, nbytes),
       {"NB": nb} if spec else None, 0) for name, source, kernel, nbytes in [
           ("q8k", sample_text("quantize_q8_k"), "quantize_q8_k", 292), ("q4k", QUANTIZE_Q4K, "quantize_q4_k", 144)]
      for r, nb in [(0, 2), (1, 1), (3, 5), (40, 64)] for spec in (True, False)],   # unspecialized: records in CTA scratch
    *[(f"atomic-histogram-{n}", ATOMIC_HISTOGRAM, "atomic_histogram", lambda rng, n=n: _inputs_atomic_histogram(rng, n),
       None, 0) for n in (0, 1, 255, 4099)],
    *[(f"small-tiles-{b}", SMALL_TILES, "small_tiles", lambda rng, b=b: _inputs_small_tiles(rng, b), None, 1e-6)
      for b in (0, 1, 17, 1000)],       # x * c + r: one fma where fusion-legality allows it
    *[(f"records-{m}", RECORDS, "records", lambda rng, m=m: _inputs_records(rng, m), None, 1e-5) for m in (0, 1, 300)],
    *[(f"transpose-tile-{m}x{n}", TRANSPOSE_TILE, "transpose_tile", lambda rng, m=m, n=n: _inputs_transpose_tile(rng, m, n),
       None, 0) for m, n in [(0, 3), (1, 1), (33, 65), (100, 64)]],
    ("rank1-aliased", sample_text("rank1_update_outer"), "rank1_update", lambda rng: _inputs_aliased_rank1(rng, 77), None,
     1e-6),
    ("transpose-strided", TRANSPOSE, "transpose_scale", lambda rng: _inputs_strided_transpose(rng, 45, 19), None, 0),
    *[(f"short-sum-{m}x{n}", SHORT_ROW_SUM, "short_row_sum",
       lambda rng, m=m, n=n: _inputs_short_sum(rng, m, n), {"N": n}, 1e-5) for m, n in [(1, 1), (5, 2), (7, 4), (3, 5), (300, 5), (257, 33), (9, 64), (70, 200)]],
    *[(f"transpose-{m}x{n}", TRANSPOSE, "transpose_scale",
       lambda rng, m=m, n=n: _inputs_transpose(rng, m, n), None, 0) for m, n in [(0, 3), (1, 1), (33, 17), (100, 70)]],
]


@requires_gpu()
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cta_tiles_on_gpu_match_the_interpreter(case):
    _, source, kernel, make, extents, tolerance = case
    inputs = make(np.random.default_rng(len(case[0])))
    got, expected = on_gpu_and_interp(source, kernel, inputs, extents=extents)
    assert set(got) == set(expected)
    for name in expected:
        if tolerance == 0:
            assert_same_bits(got[name], expected[name], name)
        else:
            assert_close(got[name], expected[name], tolerance, name)


@pytest.mark.parametrize("case", [c for c in CASES if c[0].endswith(("-spec", "x1024", "x8")) or c[0].startswith(
    ("transpose-1x", "short-sum", "kaiser", "quantize", "atomic-histogram-1", "small-tiles-1", "records-1", "transpose-tile-1x"))], ids=lambda c: c[0])
def test_every_case_compiles_to_the_cta_mapping_without_malloc(case):
    name, source, kernel, _, extents, _ = case
    ptx, launch = _compile(source, kernel, extents)
    assert launch["mapping"] == "cta"
    # records sized at launch: one CTA scratch block, allocated by thread 0 (cta_buffers.py)
    if name.startswith("quantize-") and extents is None:
        assert ptx.count("call.uni (retval0), malloc") == 1, name
    else:
        assert "malloc" not in ptx, name
