"""Accesses whose mask keeps the index inside the view (`codegen/llvm/mask_bounds.py`) emit
no bounds check along that axis; any doubt (an index that may be negative or wrap, a mask
against another extent) keeps the check, and an active lane outside the view is still
reported like the interpreter reports it."""
from __future__ import annotations

import numpy as np
import pytest

from intentc import parse
from intentc.api import run
from intentc.codegen.llvm.mask_bounds import masked_in_bounds
from intentc.diagnostics import DiagnosticError
from intentc.driver import compile_kernel
from intentc.ir.nodes import Kernel
from intentc.options import Specialization
from intentc.runtime.cpu import compile_cpu
from sample_paths import SAMPLES

# `%offs` = block * 1024 + iota; `SHIFT` and `EXTENT` are filled per case
BLOCKED = """kernel @k(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>, %w: view<f32, [%M], in>) {{
  %c1023 = constant {{value = 1023}} : index
  %c1024 = constant {{value = 1024}} : index
  %shift = constant {{value = {shift}}} : index
  %zero = constant {{value = 0.0}} : f32
  %padded = add %N, %c1023 : index
  %nblocks = floordiv %padded, %c1024 : index
  parallel %nblocks {{
  ^block(%b: index):
    %base = mul %b, %c1024 : index
    %lane = iota : tensor<index, [1024]>
    %base_b = broadcast %base : tensor<index, [1024]>
    %at = add %base_b, %lane : tensor<index, [1024]>
    %shift_b = broadcast %shift : tensor<index, [1024]>
    %offs = {step} %at, %shift_b : tensor<index, [1024]>
    %n_b = broadcast %{extent} : tensor<index, [1024]>
    %inb = lt %offs, %n_b : tensor<bool, [1024]>
    %v = read %x index(%offs) mask(%inb) fill(%zero) : tensor<f32, [1024]>
    write %y, %v index(%offs) mask(%inb)
  }}
}}"""


def _kernel(text: str) -> Kernel:
    kernel = parse(text, "k.kir").find("k")
    assert isinstance(kernel, Kernel)
    return kernel


def _implied(text: str) -> list[frozenset[int]]:
    return list(masked_in_bounds(_kernel(text)).values())


def test_a_blocked_index_masked_by_its_extent_needs_no_check():
    assert _implied(BLOCKED.format(shift=0, step="add", extent="N")) == [frozenset({0})] * 2


@pytest.mark.parametrize("shift,step,extent,why", [
    (1, "sub", "N", "the index may be -1"),
    (0, "add", "M", "the mask bounds it by another view's extent"),
    (1 << 62, "add", "N", "the index may wrap past 2^63"),
])
def test_any_doubt_keeps_the_check(shift, step, extent, why):
    assert _implied(BLOCKED.format(shift=shift, step=step, extent=extent)) == [], why


def test_a_conjunct_of_the_mask_and_a_dim_of_the_view_count_too():
    text = """kernel @k(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>, %on: bool) {
  %n = dim %x {axis = 0} : index
  parallel %n {
  ^i(%i: index):
    %cols = iota : tensor<index, [64]>
    %n_b = broadcast %n : tensor<index, [64]>
    %inb = lt %cols, %n_b : tensor<bool, [64]>
    %on_b = broadcast %on : tensor<bool, [64]>
    %m = and %inb, %on_b : tensor<bool, [64]>
    %zero = constant {value = 0.0} : f32
    %v = read %x index(%cols) mask(%m) fill(%zero) : tensor<f32, [64]>
    write %y, %v index(%cols) mask(%m)
  }
}"""
    assert _implied(text) == [frozenset({0})] * 2


def test_the_vector_add_sample_checks_no_access():
    # contiguous views (as the benchmarks run them): no address is compared with the allocation either
    text = (SAMPLES / "vector_add.kir").read_text()
    specialization = Specialization(contiguous=("x", "y", "z"))
    compiled = compile_kernel(text, "vector_add", "ptx", "sm_90", specialization=specialization).artifacts["kernel.ptx"]
    # one status write is left: the block count's floordiv; none for the accesses
    assert compiled.count("atom.relaxed.gpu.global.cas") + compiled.count("atom.global.cas") <= 1


def test_an_active_lane_outside_the_view_is_still_reported():
    text = BLOCKED.format(shift=1, step="sub", extent="N")
    inputs = {"x": np.zeros(5, np.float32), "y": np.zeros(5, np.float32), "w": np.zeros(1, np.float32)}
    with pytest.raises(DiagnosticError) as interpreted:
        run(text, "k", inputs)
    with pytest.raises(DiagnosticError) as compiled:
        compile_cpu(text, "k")(inputs)
    (expected,), (got,) = interpreted.value.diagnostics, compiled.value.diagnostics
    assert got.code == expected.code == "R0301"


# a 64x64 tile masked by row and column bounds: rows broadcast down the tile, columns across
TILE = """kernel @k(%a: view<f32, [%M, %N], inout>) {{
  %c63 = constant {{value = 63}} : index
  %c64 = constant {{value = 64}} : index
  %zero = constant {{value = 0.0}} : f32
  %m_pad = add %M, %c63 : index
  %tiles_m = floordiv %m_pad, %c64 : index
  %n_pad = add %N, %c63 : index
  %tiles_n = floordiv %n_pad, %c64 : index
  %lane = iota : tensor<index, [64]>
  %m_b = broadcast %M : tensor<index, [64]>
  %n_b = broadcast %N : tensor<index, [64]>
  parallel %tiles_m, %tiles_n {{
  ^tile(%ti: index, %tj: index):
    %m0 = mul %ti, %c64 : index
    %n0 = mul %tj, %c64 : index
    %m0_b = broadcast %m0 : tensor<index, [64]>
    %rows = add %m0_b, %lane : tensor<index, [64]>
    %n0_b = broadcast %n0 : tensor<index, [64]>
    %cols = add %n0_b, %lane : tensor<index, [64]>
    %row_ok = lt %rows, %m_b : tensor<bool, [64]>
    %col_ok = lt %cols, %n_b : tensor<bool, [64]>
    %rows2 = reshape %rows : tensor<index, [64, 1]>
    %row_ok2 = reshape %{row_mask} : tensor<bool, [64, 1]>
    %row_ok_t = broadcast %row_ok2 : tensor<bool, [64, 64]>
    %col_ok_t = broadcast %col_ok : tensor<bool, [64, 64]>
    %mask = and %row_ok_t, %col_ok_t : tensor<bool, [64, 64]>
    %old = read %a index(%rows2, %cols) mask(%mask) fill(%zero) : tensor<f32, [64, 64]>
    write %a, %old index(%rows2, %cols) mask(%mask)
  }}
}}"""


def test_row_and_column_bounds_of_a_tile_through_reshapes_and_broadcasts():
    assert _implied(TILE.format(row_mask="row_ok")) == [frozenset({0, 1})] * 2


def test_a_bound_broadcast_along_the_other_axis_proves_nothing_there():
    # the column bound laid down the rows: lane (r, c) tests cols[r], not the column it accesses
    assert _implied(TILE.format(row_mask="col_ok")) == [frozenset({1})] * 2


def test_a_tile_origin_that_may_wrap_proves_nothing():
    # one tile per coordinate of M: %ti * 64 may pass 2^63
    assert _implied(TILE.format(row_mask="row_ok").replace("parallel %tiles_m, %tiles_n", "parallel %M, %N")) == []


# an index read from data (segment ids), masked by a lower bound `{floor}` and `lt %ids, cast(%S)`
GATHERED = """kernel @k(%ids: view<i32, [%N], in>, %x: view<f32, [%S], in>, %y: view<f32, [%N], out>) {{
  %c = constant {{value = {constant}}} : i32
  %zero = constant {{value = 0.0}} : f32
  %s_i = cast %S : i32
  parallel %N {{
  ^i(%n: index):
    %id = read %ids index(%n) : i32
    %low = {floor} %id, %c : bool
    %high = lt %id, %s_i : bool
    %ok = and %low, %high : bool
    %v = read %x index(%id) mask(%ok) fill(%zero) : f32
    write %y, %v index(%n)
  }}
}}"""


def _gathered_axes(floor: str, constant: int) -> set:
    kernel = _kernel(GATHERED.format(floor=floor, constant=constant))
    gather = next(op for op in kernel.body[-1].regions[0].ops if op.name == "read" and op.operands[0] == "x")
    return set(masked_in_bounds(kernel).get(id(gather), frozenset()))


@pytest.mark.parametrize("floor,constant", [("ge", 0), ("ge", 3), ("gt", -1), ("gt", 0)])
def test_a_data_index_its_mask_bounds_on_both_sides_needs_no_check(floor, constant):
    assert _gathered_axes(floor, constant) == {0}


@pytest.mark.parametrize("floor,constant", [("ge", -1), ("gt", -2), ("lt", 0)])
def test_a_data_index_that_may_be_negative_keeps_its_check(floor, constant):
    assert _gathered_axes(floor, constant) == set()


def test_a_negative_data_index_is_still_reported():
    text = GATHERED.format(floor="ge", constant=-1)
    inputs = {"ids": np.array([0, -1, 1], np.int32), "x": np.zeros(2, np.float32), "y": np.zeros(3, np.float32)}
    with pytest.raises(DiagnosticError) as interpreted:
        run(text, "k", inputs)
    with pytest.raises(DiagnosticError) as compiled:
        compile_cpu(text, "k")(inputs)
    (expected,), (got,) = interpreted.value.diagnostics, compiled.value.diagnostics
    assert got.code == expected.code


def test_segment_sum_scatters_without_checks():
    kernel = _kernel((SAMPLES / "segment_sum_scatter_reduce.kir").read_text().replace("@segment_sum", "@k"))
    found = masked_in_bounds(kernel)
    scatters = [op for op in kernel.body[-1].regions[0].ops if op.name == "scatter_reduce"]
    assert [found.get(id(op)) for op in scatters] == [frozenset({0})] * 2     # the ids (the columns: an iota)
