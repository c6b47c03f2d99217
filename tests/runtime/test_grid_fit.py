"""The grid a launch gets (`intentc/runtime/grid_fit.py`): a CTA-mapped kernel whose
`parallel` has fewer iterations than the device grid has CTAs is launched with one CTA an
iteration (or a group of iterations), never more CTAs than the full grid nor fewer than one;
kernels whose iterations are not computable from the launch's extents and scalars keep the
full grid, or the CTAs the GPU runs at once where fewer, and other mappings the full grid. On the fake driver of `fake_cuda.py` (4 SMs)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_cuda import FakeDevice, FakeGpuArray, install_driver

import intentc
from intentc.codegen.nvptx.mapping import ITERATION_CTAS_PER_SM

SAMPLES = Path(__file__).parents[2] / "ir_samples"
# The block count read from memory: iterations the launch cannot know.
READ_EXTENT = """kernel @copy_counted(%n: view<index, [1], in>, %x: view<f32, [%N], in>, %y: view<f32, [%N], out>) {
  %c0 = constant {value = 0} : index
  %blocks = read %n index(%c0) : index
  parallel %blocks {
  ^block(%b: index):
    %v = read %x index(%b) : f32
    write %y, %v index(%b)
  }
}
"""


@pytest.fixture
def fake_driver(monkeypatch):
    return install_driver(monkeypatch)


def test_with_fit_grid_off_every_launch_gets_the_full_grid(fake_driver, monkeypatch):
    monkeypatch.setenv("INTENTC_LAUNCH_OFF", "fit_grid")
    kernel = intentc.load(SAMPLES / "vector_add.kir", "vector_add", target="cuda", arch="sm_90")
    kernel(**{name: FakeGpuArray(np.zeros(4096, np.float32)) for name in "xyz"})
    assert fake_driver.launches[-1][0] == kernel.runner.grid() == (32, 1, 1)    # 8 CTAs of 256 threads an SM


@pytest.mark.parametrize(("n", "ctas"), [(0, 1), (1, 1), (1024, 1), (1025, 2), (4096, 4), (31 * 1024 + 1, 32),
                                         (1 << 20, 32)])
def test_a_vector_add_gets_a_cta_a_block_of_1024_up_to_the_full_grid(fake_driver, n, ctas):
    kernel = intentc.load(SAMPLES / "vector_add.kir", "vector_add", target="cuda", arch="sm_90")
    full = kernel.runner.grid()[0]
    assert kernel.launch_config.mapping == "cta" and full == 8 * 4     # CTAs of 256 threads
    vectors = [FakeGpuArray(np.zeros(n, np.float32)) for _ in range(3)]
    kernel(x=vectors[0], y=vectors[1], z=vectors[2])
    assert fake_driver.launches[-1][0] == (ctas, 1, 1)


@pytest.mark.parametrize(("launch_off", "per_sm", "ctas"), [("", 5, 4 * 5), ("resident_grid", 5, 32), ("", 4, 32),
                                                            ("", 3, 4 * 6)])
def test_whole_waves_of_the_ctas_the_gpu_runs_at_once(fake_driver, monkeypatch, launch_off, per_sm, ctas):
    """`per_sm` CTAs an SM fit (the fake's occupancy), of the 8 the launch config asks for:
    the launch gets whole waves of them (5: one wave, 4: two, 3: two); the config's 8 with
    `INTENTC_LAUNCH_OFF=resident_grid`. Kernels whose iterations the launch cannot know too."""
    monkeypatch.setattr(FakeDevice, "resident_ctas", per_sm)
    monkeypatch.setenv("INTENTC_LAUNCH_OFF", launch_off)
    kernel = intentc.load(SAMPLES / "vector_add.kir", "vector_add", target="cuda", arch="sm_90")
    kernel(**{name: FakeGpuArray(np.zeros(1 << 20, np.float32)) for name in "xyz"})
    assert fake_driver.launches[-1][0] == (ctas, 1, 1) and kernel.runner.grid() == (32, 1, 1)
    counted = intentc.load(READ_EXTENT, "copy_counted", target="cuda", arch="sm_90")
    counted(n=FakeGpuArray(np.array([4], np.int64)), x=FakeGpuArray(np.zeros(4, np.float32)),
            y=FakeGpuArray(np.zeros(4, np.float32)))
    full, resident = counted.runner.grid()[0], 4 * per_sm
    waves = full - full % resident if not launch_off and full > resident else full
    assert fake_driver.launches[-1][0] == (waves, 1, 1)


def test_a_scalar_parameter_in_the_extents_is_read_from_the_launch(fake_driver):
    kernel = intentc.load(SAMPLES / "saxpy.kir", "saxpy", target="cuda", arch="sm_90")    # blocks of 512
    kernel(a=2.0, x=FakeGpuArray(np.zeros(5000, np.float32)), y=FakeGpuArray(np.zeros(5000, np.float32)))
    assert fake_driver.launches[-1][0] == (10, 1, 1)


def test_rows_grouped_on_a_cta_count_as_one(fake_driver):
    kernel = intentc.load(SAMPLES / "row_sum.kir", "row_sum_f16", target="cuda", arch="sm_90",
                          extents={"N": 8})
    per_cta = kernel.launch_config.iterations_per_cta
    assert kernel.launch_config.mapping == "cta" and per_cta > 1, "short rows share a CTA"
    kernel(x=FakeGpuArray(np.zeros((10 * per_cta + 1, 8), np.float16)), y=FakeGpuArray(np.zeros(10 * per_cta + 1,
                                                                                                  np.float32)))
    assert fake_driver.launches[-1][0] == (11, 1, 1)


def test_iterations_the_launch_cannot_know_keep_the_full_grid(fake_driver):
    kernel = intentc.load(READ_EXTENT, "copy_counted", target="cuda", arch="sm_90")
    kernel(n=FakeGpuArray(np.array([4], np.int64)), x=FakeGpuArray(np.zeros(4, np.float32)),
           y=FakeGpuArray(np.zeros(4, np.float32)))
    assert fake_driver.launches[-1][0] == kernel.runner.grid()


def test_other_mappings_keep_the_full_grid(fake_driver):
    kernel = intentc.load(SAMPLES / "tiled_matmul.kir", "matmul_tiled", target="cuda", arch="sm_90")
    assert kernel.launch_config.mapping == "mma"
    kernel(a=FakeGpuArray(np.zeros((64, 32), np.float16)), b=FakeGpuArray(np.zeros((32, 64), np.float16)),
           c=FakeGpuArray(np.zeros((64, 64), np.float16)))
    assert fake_driver.launches[-1][0] == kernel.runner.grid()


def test_a_row_scan_gets_a_cta_a_row(fake_driver):
    """A register-form scan's iteration asks ITERATION_CTAS_PER_SM CTAs an SM (a CTA a row, as
    Triton launches a program a row: docs/gpu.md "Layout facts at launch"); the launch cuts it
    to the rows."""
    kernel = intentc.load(SAMPLES / "cumsum.kir", "row_cumsum", target="cuda", arch="sm_90", extents={"N": 256})
    assert kernel.launch_config.mapping == "cta" and kernel.runner.grid() == (4 * ITERATION_CTAS_PER_SM, 1, 1)
    rows = 3 * ITERATION_CTAS_PER_SM + 5
    kernel(x=FakeGpuArray(np.zeros((rows, 256), np.float32)), y=FakeGpuArray(np.zeros((rows, 256), np.float32)))
    assert fake_driver.launches[-1][0] == (rows, 1, 1)
