"""A dynamic row through every user path (docs/gpu.md, "Variants for dynamic extents"), on
the GPU against the interpreter, at bucket boundaries: the compile service (a runtime kernel
whose compiles, its bucket variants included, go to the service: `ServiceCompiler`, here
over an in-process stand-in that sends each request through the JSON the service receives
and compiles it as a service worker does), `intentc.load` on torch tensors, and `intentc run
--target cuda --dynamic-extents`. (`compile_cuda`: tests/gpu/test_dynamic_variants.py.)"""
from __future__ import annotations

import json

import numpy as np
import pytest
from differential import assert_close
from gpu_required import requires_gpu
from sample_paths import SAMPLES, sample_text

from intentc.api import run
from intentc.client import CompileReply
from intentc.codegen.nvptx.variants import VariantRule
from intentc.driver import compile_kernel
from intentc.options import CompileOptions, Specialization

pytestmark = requires_gpu()

# 0: the kernel's own entry; 1, 63/64/65, 960/961: edges of softmax's buckets of 64 (T = 64
# up to 2048); 1024, 2048: exact buckets (no guard); 2049, 3000: T = 128; 33768: past every
# variant (the kernel's own entry)
BOUNDARIES = (0, 1, 63, 64, 65, 960, 961, 1024, 2047, 2048, 2049, 3000, 33768)
ROWS = 3


class InProcessService:
    """The service's side of a compile, in this process: the request as the JSON body the
    service would receive, parsed back, compiled as its workers compile (`compile_kernel`
    of the text with the body's options and specialization); records each specialization."""

    def __init__(self):
        self.sent: list[Specialization] = []

    def compile(self, source, kernel, target, arch, options, specialization, file):
        body = json.loads(json.dumps({"options": options.model_dump(mode="json"),
                                      "specialization": specialization.model_dump(mode="json")}))
        received = Specialization(**body["specialization"])
        self.sent.append(received)
        result = compile_kernel(source, kernel, target, arch, CompileOptions(**body["options"]), received, file)
        return CompileReply("local", "miss", result.artifacts, {}, result.timings)


def _service_kernel():
    """A fresh kernel and service: what a case asks for does not depend on the cases run
    before it in this process (xdist runs them in any order, any worker)."""
    from intentc.runtime.compilers import ServiceCompiler
    from intentc.runtime.cuda import compile_cuda
    service = InProcessService()
    return compile_cuda(sample_text("row_softmax"), "row_softmax", compiler=ServiceCompiler(service)), service


def _inputs(cols: int) -> dict:
    x = np.random.default_rng(cols).standard_normal((ROWS, cols)).astype(np.float32)
    return {"x": x, "t": np.float32(0.7)}


def _expected(inputs: dict) -> np.ndarray:
    return run(sample_text("row_softmax"), "row_softmax", inputs)["y"]


@pytest.mark.parametrize("cols", BOUNDARIES)
def test_through_the_service(cols):
    """Constructing the kernel asks for nothing; a launch asks for its bucket's variant alone
    (picked from the arrays' shapes), or for the kernel's own entry where no variant serves the
    row (empty, or past every variant); the own entry is compiled when first asked for."""
    kernel, service = _service_kernel()
    assert service.sent == []
    inputs = _inputs(cols)
    assert_close(kernel(inputs)["y"], _expected(inputs), 1e-6)
    bucket = kernel.rule.bucket(cols)
    asked = [s.variant for s in service.sent]
    assert asked == [bucket if bucket is not None else ()]
    assert VariantRule(**kernel.launch_config.variant_rule) == kernel.rule       # launch.json's: the own entry's
    assert [s.variant for s in service.sent] == asked + ([()] if bucket is not None else [])


@pytest.mark.parametrize("cols", BOUNDARIES)
def test_through_intentc_load(cols):
    torch = pytest.importorskip("torch", reason="intentc.load's CUDA kernels take torch tensors here")
    import intentc
    kernel = intentc.load(SAMPLES / "row_softmax.kir", "row_softmax", target="cuda")
    inputs = _inputs(cols)
    x = torch.from_numpy(inputs["x"]).cuda()
    y = torch.empty_like(x)
    kernel(x=x, t=0.7, y=y)
    kernel.synchronize()
    assert_close(y.cpu().numpy(), _expected(inputs), 1e-6)


@pytest.mark.parametrize("cols", (0, 65, 961, 1024, 3000, 33768))
def test_through_intentc_run(cols, tmp_path):
    from intentc.cli.main import main
    inputs = _inputs(cols)
    np.savez(tmp_path / "in.npz", **inputs)
    assert main(["run", str(SAMPLES / "row_softmax.kir"), "--target", "cuda", "--dynamic-extents",
                 "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as outputs:
        assert_close(outputs["y"], _expected(inputs), 1e-6)


@pytest.mark.parametrize("row_length", (961, 1000, 1023))
def test_intentc_compile_variant_for_serves_the_rows_its_launch_json_names(row_length, tmp_path):
    """`intentc compile --target cubin --variant-for N=1000` writes one variant; launched
    from those files, it computes every row length its `serves` names."""
    from intentc.cli.main import main
    from intentc.driver import front_end
    from intentc.runtime.cuda import CudaKernel, device_arch
    arch = device_arch()
    assert main(["compile", str(SAMPLES / "row_softmax.kir"), "--target", "cubin", "--arch", arch,
                 "--variant-for", "N=1000", "-o", str(tmp_path / "k.cubin")]) == 0
    artifacts = {"kernel.cubin": (tmp_path / "k.cubin").read_bytes(),
                 **{name: (tmp_path / f"k.{name}").read_text() for name in ("launch.json", "abi.json", "kernel.ptx")}}
    serves = json.loads(artifacts["launch.json"])["serves"]
    assert serves["min"] <= row_length <= serves["max"]
    request = front_end(sample_text("row_softmax"), "row_softmax", "cubin", arch,
                        specialization={"variant": (serves["min"], serves["max"])})
    inputs = _inputs(row_length)
    got = CudaKernel(request, artifacts, {})(inputs)
    assert_close(got["y"], _expected(inputs), 1e-6)
