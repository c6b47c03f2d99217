"""Launch-inferred layout facts on the GPU (docs/runtime.md, "Launch facts"): the kernels
whose own compile moves 16-byte vectors without run-time checks (vector add, f32 and f16
row sums, cumsum, softmax: `fact_vectors.py`) give the interpreter's results on dense aligned tensors
(the own compile) and on tensors one element off alignment, strided or transposed (the
variants for the facts they hold), the same kernel object taking turns between them on every
launch path (a full binding, a seen call, new memory)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from differential import assert_close, assert_same_bits
from gpu_required import requires_gpu

import intentc

pytestmark = requires_gpu()
torch = pytest.importorskip("torch", reason="the launch-facts tests pass torch tensors")

SAMPLES = Path(__file__).resolve().parents[2] / "ir_samples"


def _row_sum_f32() -> str:
    text = (SAMPLES / "row_sum.kir").read_text()
    return text[text.index("kernel @row_sum_f16"):text.index("kernel @row_sum_i8")].replace("f16", "f32")


def _layouts(shape: tuple[int, ...], dtype=None) -> dict:
    """Tensors of `shape`: dense, one element off 16-byte alignment, every other column."""
    count = int(np.prod(shape))
    dtype = dtype or torch.float32
    return {"dense": lambda: torch.randn(shape, device="cuda", dtype=dtype),
            "shifted": lambda: torch.randn(count + 1, device="cuda", dtype=dtype)[1:].view(shape),
            "strided": lambda: torch.randn(*shape[:-1], 2 * shape[-1], device="cuda", dtype=dtype)[..., ::2]}


def _interpreted(text: str, kernel: str, inputs: dict) -> dict:
    host = {name: value.cpu().numpy() if hasattr(value, "cpu") else value for name, value in inputs.items()}
    return intentc.run(text, kernel, host)


def _check(name: str, got: np.ndarray, expected: np.ndarray, x: np.ndarray) -> None:
    """Vector add to the bit; sums (which may reassociate, §6) within the bound of any
    summation order, n·2⁻²⁴·Σ|x| (a scan's each prefix); softmax as the CTA tests check it."""
    if name == "vector_add":
        assert_same_bits(got, expected, name)
    elif name == "softmax":
        assert_close(got, expected, 1e-6, name)
    else:
        magnitude = np.cumsum(np.abs(x), -1) if name == "cumsum" else np.abs(x).sum(-1)
        bound = x.shape[-1] * 2.0 ** -24 * magnitude
        assert (np.abs(got.astype(np.float64) - expected.astype(np.float64)) <= bound).all(), name


CASES = {   # name: (text, kernel, extents, input shape, output shape, scalars)
    "vector_add": ((SAMPLES / "vector_add.kir").read_text(), "vector_add", {}, (5000,), (5000,), {}),
    "row_sum_f32": (_row_sum_f32(), "row_sum_f32", {"N": 1024}, (70, 1024), (70,), {}),
    "row_sum_f16": ((SAMPLES / "row_sum.kir").read_text(), "row_sum_f16", {"N": 2048}, (70, 2048), (70,), {}),
    "cumsum": ((SAMPLES / "cumsum.kir").read_text(), "row_cumsum", {"N": 1024}, (70, 1024), (70, 1024), {}),
    "softmax": ((SAMPLES / "row_softmax.kir").read_text(), "row_softmax", {"N": 1024}, (70, 1024), (70, 1024),
                {"t": 0.5}),
}


@pytest.mark.parametrize("name", CASES)
def test_every_layout_matches_the_interpreter_through_one_kernel_object(name):
    text, kernel_name, extents, shape, out_shape, scalars = CASES[name]
    kernel = intentc.load(text, kernel_name, target="cuda", extents=extents or None)
    views = [p.name for p in kernel.kernel.params if getattr(p.type, "direction", None)]
    inputs, output = views[:-1], views[-1]
    for layout in ("dense", "shifted", "strided", "dense", "shifted", "dense"):   # fresh memory each time
        dtype = torch.float16 if name.endswith("f16") else None
        arrays = {v: _layouts(shape, dtype)[layout]() for v in inputs}
        for _ in range(2):                                                      # then the same tensors
            out = _layouts(out_shape)[layout]().zero_()
            kernel(**arrays, **scalars, **{output: out})
            kernel.synchronize()
            expected = _interpreted(text, kernel_name, {**arrays, **scalars})[output]
            _check(name, out.cpu().numpy(), expected, arrays[inputs[0]].cpu().numpy().astype(np.float64))
    variants = [variant.specialization for variant in kernel._variants.values()]
    assert len(variants) == 2 and all(not set(views) <= {*spec.aligned16} & {*spec.contiguous} for spec in variants)
