"""Philox blocks shared by 4 consecutive counters (`codegen/llvm/rng.py::philox_block`,
`nvptx/staged.py`): a grid program drawing random words gives each thread 4 consecutive
coordinates, whose one Philox4x32 block gives their 4 words (10 rounds for 4 elements, not
4 × 10). The PTX check needs no GPU; on the GPU, the interpreter's bits for domains that
end inside a block, a chunk and the grid."""
from __future__ import annotations

import numpy as np
import pytest

from differential import assert_same_bits
from gpu_differential import on_gpu_and_interp
from gpu_required import requires_gpu

DRAWS = """
kernel @draws(%seed: u64, %bits: view<u32, [%N], out>, %u: view<f32, [%N], out>) {
  %idx = iota : tensor<index, [%N]>
  %r = random_bits %seed, %idx : tensor<u32, [%N]>
  %f = uniform %seed, %idx : tensor<f32, [%N]>
  write %bits, %r index(%idx)
  write %u, %f index(%idx)
}
"""


def test_four_consecutive_counters_share_one_block():
    from intentc.driver import compile_kernel
    ptx = compile_kernel(DRAWS, "draws", "ptx", "sm_90").artifacts["kernel.ptx"]
    # one block (10 rounds, 2 mul.hi each) for a thread's 4 slots, shared by both ops
    assert ptx.count("mul.hi.u32") == 20


@requires_gpu()
@pytest.mark.parametrize("n", [0, 1, 3, 5, 1023, 1025, 4099, 1 << 20])
def test_shared_blocks_draw_the_interpreters_bits(n):
    inputs = {"seed": np.uint64(0x9E3779B97F4A7C15), "bits": np.zeros(n, np.uint32), "u": np.zeros(n, np.float32)}
    got, expected = on_gpu_and_interp(DRAWS, "draws", inputs)
    assert np.array_equal(got["bits"], expected["bits"])
    assert_same_bits(got["u"], expected["u"], "u")
