"""Registers the LLVM-based targets with the driver's registry:

- `llvm`: the kernel lowered to LLVM IR for the host (optimized at `opt_level`), as text;
- `cpu`: the same compiled to a native object file for the host.

llvmlite is imported only when one of them compiles."""
from __future__ import annotations

from ..driver.targets import Target, register_target


def _lowered_and_optimized(module, kernel, options, specialization, timings):
    import time

    from ..runtime import jit
    from ..runtime.cpu import lower_for_host
    lowered = lower_for_host(module, kernel, specialization)
    start = time.perf_counter()
    optimized = jit.parse_and_optimize(str(lowered.module), options.opt_level)
    timings["llvm-opt"] = timings.get("llvm-opt", 0.0) + time.perf_counter() - start
    return lowered, optimized


def _lower_llvm(module, kernel, arch, options, specialization, timings):
    _, optimized = _lowered_and_optimized(module, kernel, options, specialization, timings)
    return {"kernel.ll": str(optimized)}


def _lower_cpu(module, kernel, arch, options, specialization, timings):
    from ..runtime import jit
    _, optimized = _lowered_and_optimized(module, kernel, options, specialization, timings)
    return {"kernel.o": jit.emit_object(optimized)}


def _toolchain():
    from ..runtime import jit
    return jit.toolchain()


register_target(Target("llvm", "LLVM IR text for the host (llvmlite)", _lower_llvm, toolchain=_toolchain))
register_target(Target("cpu", "a native object file for the host CPU (llvmlite)", _lower_cpu, toolchain=_toolchain))


# ---- NVIDIA (intentc.codegen.nvptx): one lowering, two artifacts ---------------------------------
def _lower_ptx(module, kernel, arch, options, specialization, timings):
    from .nvptx.compile import compile_ptx
    compiled = compile_ptx(module, kernel, arch or "sm_90", specialization, timings)
    return {"kernel.ptx": compiled.ptx, "launch.json": compiled.launch_json()}


def _lower_cubin(module, kernel, arch, options, specialization, timings):
    from .nvptx.compile import assemble_cubin, compile_ptx
    compiled = compile_ptx(module, kernel, arch or "sm_90", specialization, timings)
    return {"kernel.cubin": assemble_cubin(compiled.ptx, arch or "sm_90", timings),
            "launch.json": compiled.launch_json()}


def _nvidia_toolchain():
    import llvmlite
    import llvmlite.binding as llvm

    from ..toolchain.nvidia import toolchain_facts
    return {"llvm": ".".join(map(str, llvm.llvm_version_info)), "llvmlite": llvmlite.__version__,
            **toolchain_facts()}


NVPTX_ARCHS = ("sm_80", "sm_90")
register_target(Target("ptx", "PTX text for NVIDIA GPUs (LLVM NVPTX, libdevice) + launch.json", _lower_ptx,
                       archs=NVPTX_ARCHS, toolchain=_nvidia_toolchain))
register_target(Target("cubin", "a cubin for NVIDIA GPUs (PTX through ptxas) + launch.json", _lower_cubin,
                       archs=NVPTX_ARCHS, toolchain=_nvidia_toolchain))
