"""§8–§11: views with offsets and strides, buffers, collisions, atomics, launches, illegal access."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from intentc.api import View, run
from intentc.diagnostics import DiagnosticError

COPY = """kernel @copy(%x: view<f32, [%M, %N], in>, %y: view<f32, [%M, %N], out>) {
  parallel %M {
  ^row(%i: index):
    %c = iota : tensor<index, [%N]>
    %v = read %x index(%i, %c) : tensor<f32, [%N]>
    write %y, %v index(%i, %c)
  }
}
"""


@pytest.mark.parametrize("make", [
    lambda a: a, lambda a: a[::-1], lambda a: a[:, ::-2], lambda a: a.T, lambda a: a[1:, 2:5],
    lambda a: np.broadcast_to(a[0], (4, a.shape[1])),                       # zero stride
    lambda a: np.lib.stride_tricks.as_strided(a, (3, 4), (8, 4)),          # overlapping rows
])
def test_views_honour_offset_and_strides(make):
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    x = make(base)
    assert np.array_equal(run(COPY, "copy", {"x": x})["y"], x)
    assert np.array_equal(base, np.arange(48, dtype=np.float32).reshape(6, 8))   # inputs untouched


def test_explicit_view_with_negative_stride():
    base = np.arange(10, dtype=np.float32)
    view = View(base, offset=9, strides=(-2, -1), shape=(3, 2))
    expected = np.array([[9, 8], [7, 6], [5, 4]], dtype=np.float32)
    assert np.array_equal(run(COPY, "copy", {"x": view})["y"], expected)


def test_aliasing_views_share_memory():
    text = """kernel @shift(%a: view<f32, [%N], in>, %b: view<f32, [%N], inout>) {
  %c = iota : tensor<index, [%N]>
  %v = read %a index(%c) : tensor<f32, [%N]>
  write %b, %v index(%c)
  %w = read %a index(%c) : tensor<f32, [%N]>
  %two = full {value = 2.0} : tensor<f32, [%N]>
  %d = mul %w, %two : tensor<f32, [%N]>
  write %b, %d index(%c)
}
"""
    memory = np.arange(6, dtype=np.float32)
    out = run(text, "shift", {"a": memory[0:4], "b": memory[2:6]})
    # b[0:2] overlap a[2:4]: the first write changed a, so the second read sees it
    assert out["b"].tolist() == [0.0, 2.0, 0.0, 2.0]


OOB = """kernel @g(%x: view<f32, [%N], in>, %idx: view<index, [%K], in>, %y: view<f32, [%K], out>) {
  %c = iota : tensor<index, [%K]>
  %i = read %idx index(%c) : tensor<index, [%K]>
  %n = dim %x {axis = 0} : index
  %nb = broadcast %n : tensor<index, [%K]>
  %ok = lt %i, %nb : tensor<bool, [%K]>
  %zero = constant {value = 0.0} : f32
  %v = read %x index(%i) mask(%ok) fill(%zero) : tensor<f32, [%K]>
  %w = read %x index(%i) : tensor<f32, [%K]>
  %s = add %v, %w : tensor<f32, [%K]>
  write %y, %s index(%c)
}
"""


def test_masked_lanes_make_no_access_but_active_ones_are_checked():
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(DiagnosticError) as info:
        run(OOB, "g", {"x": x, "idx": np.array([0, 7, 2], dtype=np.int64)})
    diagnostic = info.value.diagnostics[0]
    assert diagnostic.code == "R0301" and diagnostic.line == 9
    assert "index [7]" in diagnostic.message and "lane [1]" in diagnostic.message


BUFFER = """kernel @b(%x: view<f32, [4], in>, %k: index, %y: view<f32, [4], out>) {
  %c = iota : tensor<index, [4]>
  %v = read %x index(%c) : tensor<f32, [4]>
  %buf = buffer : buffer<f32, [4]>
  %two = iota : tensor<index, [2]>
  %half = reshape %v : tensor<f32, [4]>
  %first = read %x index(%two) : tensor<f32, [2]>
  write %buf, %first index(%two)
  %kb = broadcast %k : tensor<index, [4]>
  %lim = lt %c, %kb : tensor<bool, [4]>
  %z = constant {value = -1.0} : f32
  %r = read %buf index(%c) mask(%lim) fill(%z) : tensor<f32, [4]>
  write %y, %r index(%c)
}
"""


def test_buffer_reads_of_written_elements_only():
    x = np.array([1, 2, 3, 4], dtype=np.float32)
    assert run(BUFFER, "b", {"x": x, "k": 2})["y"].tolist() == [1, 2, -1, -1]
    with pytest.raises(DiagnosticError) as info:
        run(BUFFER, "b", {"x": x, "k": 3})
    assert info.value.diagnostics[0].code == "R0302" and "[2]" in info.value.diagnostics[0].message


SCATTER = """kernel @s(%v: view<i32, [%N], in>, %bin: view<index, [%N], in>, %out: view<i32, [4], inout>) {
  %c = iota : tensor<index, [%N]>
  %x = read %v index(%c) : tensor<i32, [%N]>
  %b = read %bin index(%c) : tensor<index, [%N]>
  scatter_reduce %out, %x index(%b) {kind = add}
}
"""


@pytest.mark.parametrize("seed", range(3))
def test_scatter_reduce_combines_colliding_addresses(seed):
    values = np.array([1, 2, 3, 4, 5, 2 ** 31 - 1], dtype=np.int32)
    bins = np.array([0, 0, 3, 0, 3, 1], dtype=np.int64)
    out = run(SCATTER, "s", {"v": values, "bin": bins, "out": np.array([10, 1, 0, 0], np.int32)}, seed=seed)
    assert out["out"].tolist() == [17, -(2 ** 31), 0, 8]     # 1 + (2^31 - 1) wraps


SCATTER_REGION = """kernel @s(%v: view<f32, [%N], in>, %bin: view<index, [%N], in>, %out: view<f32, [2], inout>) {
  %c = iota : tensor<index, [%N]>
  %x = read %v index(%c) : tensor<f32, [%N]>
  %b = read %bin index(%c) : tensor<index, [%N]>
  scatter_reduce %out, %x index(%b) {
  ^combine(%old: f32, %new: f32):
    %m = maximum %old, %new : f32
    yield %m
  }
}
"""


def test_scatter_reduce_with_combine_region():
    out = run(SCATTER_REGION, "s", {"v": np.array([3, 9, 1, 4], np.float32), "bin": np.array([0, 0, 1, 1]),
                                    "out": np.zeros(2, np.float32)})
    assert out["out"].tolist() == [9.0, 4.0]


COUNTER = """kernel @count(%flags: view<i32, [%N], in>, %ctr: view<i32, [1], inout>, %slot: view<i32, [%N], out>) {
  parallel %N {
  ^it(%i: index):
    %z = constant {value = 0} : index
    %one = constant {value = 1} : i32
    %old = atomic_rmw %ctr, %one index(%z) {kind = add, order = relaxed} : i32
    write %slot, %old index(%i)
  }
}
"""


@pytest.mark.parametrize("seed", range(3))
def test_atomic_counter_hands_out_each_ticket_once(seed):
    out = run(COUNTER, "count", {"flags": np.zeros(16, np.int32), "ctr": np.array([5], np.int32)}, seed=seed)
    assert out["ctr"].tolist() == [21]
    assert sorted(out["slot"].tolist()) == list(range(5, 21))


def test_parallel_order_depends_on_seed():
    orders = {tuple(run(COUNTER, "count", {"flags": np.zeros(16, np.int32), "ctr": np.zeros(1, np.int32)},
                        seed=s)["slot"].tolist()) for s in range(4)}
    assert len(orders) > 1


CAS_LANES = """kernel @cas(%x: view<i32, [1], inout>, %e: view<i32, [%N], in>, %d: view<i32, [%N], in>, %old: view<i32, [%N], out>, %ok: view<bool, [%N], out>) {
  %c = iota : tensor<index, [%N]>
  %z = full {value = 0} : tensor<index, [%N]>
  %ev = read %e index(%c) : tensor<i32, [%N]>
  %dv = read %d index(%c) : tensor<i32, [%N]>
  %r = atomic_cas %x, %ev, %dv index(%z) {order = acq_rel} : record<old_value: tensor<i32, [%N]>, success: tensor<bool, [%N]>>
  %o = record_get %r {field = old_value} : tensor<i32, [%N]>
  %s = record_get %r {field = success} : tensor<bool, [%N]>
  write %old, %o index(%c)
  write %ok, %s index(%c)
}
"""


@pytest.mark.parametrize("seed", range(4))
def test_cas_lanes_on_one_address_form_one_modification_order(seed):
    # every lane expects 0 and wants its own id: exactly one wins
    n = 8
    out = run(CAS_LANES, "cas", {"x": np.zeros(1, np.int32), "e": np.zeros(n, np.int32),
                                 "d": np.arange(1, n + 1, dtype=np.int32)}, seed=seed)
    assert out["ok"].sum() == 1
    winner = int(np.flatnonzero(out["ok"])[0]) + 1
    assert out["x"].tolist() == [winner]
    assert (out["old"][~out["ok"]] == winner).all() and out["old"][out["ok"]].tolist() == [0]


def test_write_collision_is_reported():
    text = """kernel @w(%x: view<f32, [4], out>) {
  %z = full {value = 0} : tensor<index, [2]>
  %v = full {value = 1.0} : tensor<f32, [2]>
  write %x, %v index(%z)
}
"""
    with pytest.raises(DiagnosticError) as info:
        run(text, "w", {})
    assert info.value.diagnostics[0].code == "R0303"


def test_histogram_wraps_and_ignores_inactive_lanes():
    text = """kernel @h(%v: view<i32, [%N], in>, %m: view<bool, [%N], in>, %out: view<u8, [3], out>) {
  %c = iota : tensor<index, [%N]>
  %x = read %v index(%c) : tensor<i32, [%N]>
  %a = read %m index(%c) : tensor<bool, [%N]>
  %h = histogram %x valid(%a) : tensor<u8, [3]>
  %b = iota : tensor<index, [3]>
  write %out, %h index(%b)
}
"""
    values = np.array([1] * 257 + [2, 99, -5], dtype=np.int32)
    mask = np.array([True] * 258 + [False, False])
    assert run(text, "h", {"v": values, "m": mask})["out"].tolist() == [0, 1, 1]   # 257 wraps to 1 in u8
    with pytest.raises(DiagnosticError) as info:
        run(text, "h", {"v": values, "m": np.ones(260, bool)})
    assert info.value.diagnostics[0].code == "R0402" and "[258]" in info.value.diagnostics[0].message


# ---- launches ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("inputs,code", [
    ({"x": np.zeros((2, 3), np.float64)}, "R0103"),
    ({"x": np.zeros(3, np.float32)}, "R0104"),
    ({}, "R0101"),
    ({"x": np.zeros((2, 3), np.float32), "zz": np.zeros(1)}, "R0102"),
])
def test_bad_launches_are_diagnostics(inputs, code):
    with pytest.raises(DiagnosticError) as info:
        run(COPY, "copy", inputs)
    assert info.value.diagnostics[0].code == code


def test_extent_identity_is_checked():
    text = """kernel @k(%a: view<f32, [%N], in>, %b: view<f32, [%N], in>, %c: view<f32, [4], out>) {
  %i = iota : tensor<index, [4]>
  %v = read %a index(%i) : tensor<f32, [4]>
  write %c, %v index(%i)
}
"""
    with pytest.raises(DiagnosticError) as info:
        run(text, "k", {"a": np.zeros(4, np.float32), "b": np.zeros(5, np.float32)})
    assert info.value.diagnostics[0].code == "R0105" and "%N" in info.value.diagnostics[0].message


def test_cli_run_round_trip(tmp_path):
    kernel = tmp_path / "copy.kir"
    kernel.write_text(COPY)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.savez(tmp_path / "in.npz", x=x)
    cli = [sys.executable, "-m", "intentc.cli.main", "run", str(kernel), "--kernel", "copy", "--target", "interp",
           "--inputs", str(tmp_path / "in.npz")]
    done = subprocess.run([*cli, "--outputs", str(tmp_path / "out.npz")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(np.load(tmp_path / "out.npz")["y"], x)
    np.savez(tmp_path / "bad.npz", x=x.astype(np.int32))
    bad = subprocess.run([*cli[:-1], str(tmp_path / "bad.npz")], capture_output=True, text=True)
    assert bad.returncode == 1 and "R0103" in bad.stderr and "Traceback" not in bad.stderr
