"""`parallel` on the host's cores: a top-level parallel runs in chunks of its flattened
domain on the thread pool; results are the same with 1 and N threads, chunks cover the
domain exactly once, and checks failing on worker threads are reported."""
from __future__ import annotations

import functools
import os
import select
import signal

import ml_dtypes
import numpy as np
import pytest

from intentc.api import run
from intentc.diagnostics import DiagnosticError
from intentc.runtime import cpu_threads
from intentc.runtime.cpu import compile_cpu
from sample_paths import sample_text

# A 3-d domain over a top-level lazy tensor (`%w`, captured into the chunks as a temporary):
# chunk boundaries fall inside rows, so the coordinates are carried across axes.
GRID = """kernel @grid(%x: view<f32, [%A, %B, %C], in>, %y: view<f32, [%A, %B, %C], out>) {
  %c = iota : tensor<index, [%C]>
  %cf = cast %c : tensor<f32, [%C]>
  %half = constant {value = 0.5} : f32
  %h = broadcast %half : tensor<f32, [%C]>
  %w = mul %cf, %h : tensor<f32, [%C]>
  parallel %A, %B {
  ^ij(%i: index, %j: index):
    %v = read %x index(%i, %j, %c) : tensor<f32, [%C]>
    %e = exp %v : tensor<f32, [%C]>
    %r = add %e, %w : tensor<f32, [%C]>
    write %y, %r index(%i, %j, %c)
  }
}"""

# Row i divides by d[i]: a zero divisor in one row is an illegal input found on some thread.
DIVIDE = """kernel @k(%x: view<i32, [%M, %N], in>, %d: view<i32, [%M], in>, %y: view<i32, [%M, %N], out>) {
  %cols = iota : tensor<index, [%N]>
  parallel %M {
  ^row(%i: index):
    %v = read %x index(%i, %cols) : tensor<i32, [%N]>
    %s = read %d index(%i) : i32
    %sb = broadcast %s : tensor<i32, [%N]>
    %q = floordiv %v, %sb : tensor<i32, [%N]>
    write %y, %q index(%i, %cols)
  }
}"""


# Rows summed into one bf16 row: a 16-bit element cannot be updated atomically here.
SCATTER_BF16 = """kernel @k(%x: view<bf16, [%M, %N], in>, %out: view<bf16, [%N], inout>) {
  %cols = iota : tensor<index, [%N]>
  parallel %M {
  ^row(%i: index):
    %v = read %x index(%i, %cols) : tensor<bf16, [%N]>
    scatter_reduce %out, %v index(%cols) {kind = add}
  }
}"""


@pytest.fixture
def recorded_chunks(monkeypatch):
    """(begin, end) of every chunk the pool runs."""
    seen: list[tuple[int, int]] = []
    real = cpu_threads._chunk_function

    def recording(address):
        chunk = real(address)

        def call(ctx, status, begin, end):
            seen.append((begin, end))
            chunk(ctx, status, begin, end)
        return call
    monkeypatch.setattr(cpu_threads, "_chunk_function", recording)
    return seen


def _with_threads(monkeypatch, count: int, launch):
    monkeypatch.setenv("INTENTC_CPU_THREADS", str(count))
    return launch()


def test_big_parallel_kernel_is_identical_with_one_and_many_threads(monkeypatch, recorded_chunks):
    kernel = compile_cpu(sample_text("row_softmax"), "row_softmax")
    x = np.random.default_rng(5).standard_normal((1000, 257)).astype(np.float32)
    serial = _with_threads(monkeypatch, 1, lambda: kernel({"x": x, "t": np.float32(0.7)})["y"])
    assert recorded_chunks == [(0, 1000)]
    recorded_chunks.clear()
    threaded = _with_threads(monkeypatch, 4, lambda: kernel({"x": x, "t": np.float32(0.7)})["y"])
    assert len(recorded_chunks) == 16
    assert np.array_equal(threaded.view(np.uint32), serial.view(np.uint32))


def test_chunks_cover_a_multi_axis_domain_once(monkeypatch, recorded_chunks):
    x = np.random.default_rng(6).standard_normal((7, 5, 33)).astype(np.float32)
    got = _with_threads(monkeypatch, 3, lambda: compile_cpu(GRID, "grid")({"x": x})["y"])
    assert sorted(recorded_chunks)[0][0] == 0 and sorted(recorded_chunks)[-1][1] == 35
    assert all(a[1] == b[0] for a, b in zip(sorted(recorded_chunks), sorted(recorded_chunks)[1:]))
    expected = run(GRID, "grid", {"x": x})["y"]
    assert np.allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_scatter_reduce_is_atomic_across_threads(monkeypatch, recorded_chunks):
    values = np.random.default_rng(7).integers(-5, 300, 200_000).astype(np.int32)
    expected = np.bincount(values[(values >= 0) & (values < 256)], minlength=256)
    kernel = compile_cpu(sample_text("histogram_masked"), "histogram256")
    for threads in (1, 4):
        hist = np.zeros(256, np.int32)
        _with_threads(monkeypatch, threads, functools.partial(kernel.launch, values=values, hist=hist))
        assert np.array_equal(hist, expected)
    assert len(recorded_chunks) == 1 + 16


def test_scatter_reduce_into_low_precision_views_keeps_iterations_serial(monkeypatch, recorded_chunks):
    source = SCATTER_BF16
    x = np.arange(40, dtype=np.float32).reshape(8, 5).astype(ml_dtypes.bfloat16)
    out = _with_threads(monkeypatch, 4, lambda: compile_cpu(source, "k")({"x": x, "out": np.zeros(5, x.dtype)}))
    assert recorded_chunks == []
    expected = run(source, "k", {"x": x, "out": np.zeros(5, x.dtype)})
    assert np.array_equal(out["out"].astype(np.float32), expected["out"].astype(np.float32))


def test_illegal_input_on_a_worker_thread_is_reported(monkeypatch):
    x = np.arange(64 * 40, dtype=np.int32).reshape(64, 40)
    d = np.ones(64, np.int32)
    d[50] = 0
    with pytest.raises(DiagnosticError) as interpreted:
        run(DIVIDE, "k", {"x": x, "d": d})
    with pytest.raises(DiagnosticError) as compiled:
        _with_threads(monkeypatch, 4, lambda: compile_cpu(DIVIDE, "k")({"x": x, "d": d}))
    (expected,), (got,) = interpreted.value.diagnostics, compiled.value.diagnostics
    assert got.code == expected.code == "R0201"
    assert (got.line, got.col) == (expected.line, expected.col)
    d[50] = 3
    legal = _with_threads(monkeypatch, 4, lambda: compile_cpu(DIVIDE, "k")({"x": x, "d": d})["y"])
    assert np.array_equal(legal, x // d[:, None])


def test_thread_count_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("INTENTC_CPU_THREADS", "3")
    assert cpu_threads.thread_count() == 3
    monkeypatch.delenv("INTENTC_CPU_THREADS")
    assert cpu_threads.thread_count() == (os.cpu_count() or 1)


def test_a_forked_child_runs_parallel_kernels(monkeypatch):
    monkeypatch.setenv("INTENTC_CPU_THREADS", "2")
    kernel = compile_cpu(sample_text("row_softmax"), "row_softmax")
    x = np.random.default_rng(8).standard_normal((64, 33)).astype(np.float32)
    expected = kernel({"x": x, "t": np.float32(1)})["y"]       # the parent's pool exists now
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        same = np.array_equal(kernel({"x": x, "t": np.float32(1)})["y"], expected)
        os.write(writer, b"1" if same else b"0")
        os._exit(0)
    os.close(writer)
    answered, _, _ = select.select([reader], [], [], 60)
    if not answered:                                            # the child hangs on a dead pool
        os.kill(child, signal.SIGKILL)
    _, code = os.waitpid(child, 0)
    assert answered and os.read(reader, 1) == b"1" and code == 0
