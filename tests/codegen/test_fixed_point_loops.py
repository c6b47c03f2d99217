"""Loops that stop at a fixed point (codegen/llvm/fixed_point.py): the CPU against the
interpreter, a trip count far too large to run, and loops that must run every trip (a
trip that touches memory, a body that reads its trip index)."""
from __future__ import annotations

import time

import numpy as np

from intentc.api import run

HALVING = """
kernel @halve(%x: view<f32, [1], in>, %n: index, %y: view<f32, [1], out>, %z: view<u32, [1], out>) {
  %c0 = constant {value = 0} : index
  %c1 = constant {value = 1} : index
  %half = constant {value = 0.5} : f32
  %zero = constant {value = 0} : u32
  %one = constant {value = 1} : u32
  %x0 = read %x index(%c0) : f32
  %r, %trips = loop %c0, %n, %c1 iter(%x0, %zero) : f32, u32 {
  ^trip(%k: index, %v: f32, %t: u32):
    %h = mul %v, %half : f32
    %moved = ne %h, %v : bool
    %bump = select %moved, %one, %zero : u32
    %t2 = add %t, %bump : u32
    yield %h, %t2
  }
  write %y, %r index(%c0)
  write %z, %trips index(%c0)
}
"""

COUNTING = """
kernel @count(%n: index, %c: view<u32, [1], inout>, %y: view<f32, [1], out>) {
  %c0 = constant {value = 0} : index
  %c1 = constant {value = 1} : index
  %one = constant {value = 1} : u32
  %v0 = constant {value = 2.0} : f32
  %r = loop %c0, %n, %c1 iter(%v0) : f32 {
  ^trip(%k: index, %v: f32):
    %old = atomic_rmw %c, %one index(%c0) {kind = add, order = relaxed} : u32
    yield %v
  }
  write %y, %r index(%c0)
}
"""

INDEXED = """
kernel @ksum(%n: index, %y: view<i64, [1], out>) {
  %c0 = constant {value = 0} : index
  %c1 = constant {value = 1} : index
  %zero = constant {value = 0} : i64
  %r = loop %c0, %n, %c1 iter(%zero) : i64 {
  ^trip(%k: index, %s: i64):
    %kk = cast %k : i64
    %big = constant {value = 40} : i64
    %late = constant {value = 60} : i64
    %bonus = constant {value = 1000} : i64
    %past = ge %kk, %big : bool
    %at_late = eq %kk, %late : bool
    %after = select %at_late, %bonus, %zero : i64
    %add = select %past, %after, %kk : i64
    %s2 = add %s, %add : i64
    yield %s2
  }
  write %y, %r index(%c0)
}
"""


def _cpu(source, kernel, inputs):
    return run(source, kernel, inputs, target="cpu")


def test_a_settled_loop_matches_the_interpreter_and_skips_its_remaining_trips():
    inputs = {"x": np.array([3.5], np.float32), "n": np.int64(400)}
    expected = run(HALVING, "halve", inputs)
    assert expected["y"][0] == 0.0 and expected["z"][0] > 100       # settles after ~150 halvings
    for trips in (0, 1, 7, 400):
        small = {**inputs, "n": np.int64(trips)}
        got, want = _cpu(HALVING, "halve", small), run(HALVING, "halve", small)
        assert got["y"].tobytes() == want["y"].tobytes() and np.array_equal(got["z"], want["z"])
    start = time.perf_counter()
    huge = _cpu(HALVING, "halve", {**inputs, "n": np.int64(1 << 60)})
    assert time.perf_counter() - start < 30                     # 2^60 trips would never end
    assert huge["y"].tobytes() == expected["y"].tobytes() and np.array_equal(huge["z"], expected["z"])


def test_a_loop_touching_memory_every_trip_runs_every_trip():
    inputs = {"n": np.int64(50), "c": np.array([7], np.uint32)}
    got, want = _cpu(COUNTING, "count", inputs), run(COUNTING, "count", inputs)
    assert got["c"][0] == want["c"][0] == 57 and got["y"][0] == want["y"][0] == 2.0


def test_a_loop_reading_its_trip_index_runs_every_trip():
    inputs = {"n": np.int64(100)}
    got, want = _cpu(INDEXED, "ksum", inputs), run(INDEXED, "ksum", inputs)
    assert got["y"][0] == want["y"][0] == sum(range(40)) + 1000     # trips 40..59 change nothing
