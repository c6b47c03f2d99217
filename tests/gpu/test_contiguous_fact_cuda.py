"""Kernels compiled with the `contiguous` fact (their accesses check the extents only, not
the allocation: options.py) on GPU tensors, as the benchmarks run them: results equal the
interpreter's on fresh random inputs at extents below, at and past a CTA's coordinates, and
an access outside the extents is still reported (R0301). Vector add also with
`independent_slots` (default off, awaiting GPU verification: docs/gpu.md)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gpu_required import requires_gpu

import intentc

pytestmark = requires_gpu()
torch = pytest.importorskip("torch", reason="the CUDA API tests pass torch tensors")

ROOT = Path(__file__).resolve().parents[2]
SHIFTED = """kernel @shifted(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>) {
  %one = constant {value = 1} : index
  %i = iota : tensor<index, [%N]>
  %ones = broadcast %one : tensor<index, [%N]>
  %j = add %i, %ones : tensor<index, [%N]>
  %v = read %x index(%j) : tensor<f32, [%N]>
  write %y, %v index(%i)
}
"""


def _interpreted(text: str, kernel: str, inputs: dict) -> dict:
    return intentc.run(text, kernel, {name: value.cpu().numpy() for name, value in inputs.items()})


@pytest.mark.parametrize("slots", [0, 4])
@pytest.mark.parametrize("n", [1, 1023, 1024, 5000])
def test_vector_add_matches_the_interpreter(n, slots):
    text = (ROOT / "ir_samples" / "vector_add.kir").read_text()
    kernel = intentc.load(text, "vector_add", target="cuda",
                          facts={"contiguous": ["x", "y", "z"], "independent_slots": slots})
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.full_like(x, float("nan"))
    kernel(x=x, y=y, z=z)
    kernel.synchronize()
    np.testing.assert_array_equal(z.cpu().numpy(), _interpreted(text, "vector_add", {"x": x, "y": y})["z"])


@pytest.mark.parametrize("cols", [1, 100, 2048, 3001])
def test_f16_row_sums_match_the_interpreter(cols):
    text = (ROOT / "ir_samples" / "row_sum.kir").read_text()
    kernel = intentc.load(text, "row_sum_f16", target="cuda", extents={"N": cols}, facts={"contiguous": ["x", "y"]})
    x = torch.randn(37, cols, device="cuda").half()
    y = torch.zeros(37, device="cuda")
    kernel(x=x, y=y)
    kernel.synchronize()
    expected = _interpreted(text, "row_sum_f16", {"x": x})["y"]
    np.testing.assert_allclose(y.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)   # sums may reassociate (§6)


def test_an_access_outside_the_extents_is_still_reported():
    kernel = intentc.load(SHIFTED, "shifted", target="cuda", facts={"contiguous": ["x", "y"]})
    x, y = torch.randn(4096, device="cuda"), torch.zeros(4096, device="cuda")
    kernel(x=x, y=y)
    with pytest.raises(intentc.DiagnosticError) as error:
        kernel.synchronize()
    assert error.value.diagnostics[0].code == "R0301"
