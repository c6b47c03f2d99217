"""The CUDA layer under the NVPTX backend: LLVM IR → PTX (llvmlite's NVPTX target) → cubin
(ptxas) → load, copy, launch through the driver API, checked against numpy."""
import numpy as np
import pytest

from gpu_required import requires_gpu

VECTOR_ADD = """
target triple = "nvptx64-nvidia-cuda"
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
define void @vadd(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, i64 %n) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %g = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %w = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %g, %w
  %i32 = add i32 %base, %t
  %i = zext i32 %i32 to i64
  %inside = icmp slt i64 %i, %n
  br i1 %inside, label %body, label %done
body:
  %pa = getelementptr float, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i64 %i
  %pc = getelementptr float, ptr addrspace(1) %c, i64 %i
  %x = load float, ptr addrspace(1) %pa
  %y = load float, ptr addrspace(1) %pb
  %s = fadd float %x, %y
  store float %s, ptr addrspace(1) %pc
  br label %done
done:
  ret void
}
!nvvm.annotations = !{!0}
!0 = !{ptr @vadd, !"kernel", i32 1}
"""


def _ptx(arch: str) -> str:
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    machine = llvm.Target.from_triple("nvptx64-nvidia-cuda").create_target_machine(cpu=arch, features="+ptx80")
    module = llvm.parse_assembly(VECTOR_ADD)
    module.verify()
    return machine.emit_assembly(module)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_llvm_nvptx_emits_ptx_that_ptxas_accepts(arch):
    pytest.importorskip("llvmlite", reason="llvmlite (a core dependency) is not installed")
    from intentc.toolchain.nvidia import ToolchainError, assemble

    ptx = _ptx(arch)
    assert ".entry vadd" in ptx and f".target {arch}" in ptx
    try:
        cubin = assemble(ptx, arch)
    except ToolchainError as error:
        if "not found" in str(error):
            pytest.skip(f"ptxas is not installed here ({error})")
        raise
    assert cubin[:4] == b"\x7fELF"


@requires_gpu()
def test_vector_add_runs_on_the_gpu():
    from intentc.runtime.cuda_driver import DeviceBuffer, default_device, launch
    from intentc.toolchain.nvidia import assemble

    device = default_device()
    function = device.load(assemble(_ptx(device.arch), device.arch)).function("vadd")
    rng = np.random.default_rng(1)
    n = 1_000_003
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    buffers = [DeviceBuffer.from_array(a), DeviceBuffer.from_array(b), DeviceBuffer(a.nbytes)]
    launch(function, ((n + 255) // 256, 1, 1), (256, 1, 1),
           [np.uint64(buf.address) for buf in buffers] + [np.int64(n)])
    device.synchronize()
    result = buffers[2].download(np.empty_like(a))
    np.testing.assert_array_equal(result, a + b)
    for buffer in buffers:
        buffer.free()


@requires_gpu()
def test_cuda_errors_are_clear_messages():
    from intentc.runtime.cuda_driver import CudaError, default_device

    with pytest.raises(CudaError, match="cuModuleLoadData failed"):
        default_device().load(b"not a cubin")
