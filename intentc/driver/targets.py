"""The target registry: each backend registers a `Target` that turns a verified, optimized
module into named artifacts. The driver, the CLI's `compile`, the runtimes and the service
all look targets up here, so a backend joins every entry point by registering once.

The built-in targets are registered below; each imports its code generator only when it
lowers (llvmlite and the NVPTX machinery stay off the import path of `intentc fmt`, and
`codegen` never imports the driver)."""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable

from ..ir.nodes import Module
from ..options import CompileOptions, Specialization

# (module, kernel name, arch, options, specialization, timings to fill) → artifacts by name
Lower = Callable[[Module, str, "str | None", CompileOptions, Specialization, dict], dict[str, "str | bytes"]]


@dataclass(frozen=True)
class Target:
    name: str
    summary: str
    lower: Lower
    archs: tuple[str, ...] = ()
    # The toolchain facts this target's output depends on (LLVM version, ptxas hash, ...).
    toolchain: Callable[[], dict[str, str]] = field(default=lambda: {})
    # For targets that compile register-form variants of a dynamic row (`Specialization.variant`):
    # (pass-optimized module, kernel name, arch, specialization) → the VariantRule its compile
    # records (None for a kernel without one), planned without lowering.
    variant_rule: Callable[[Module, str, str | None, Specialization], object] | None = None
    # Whether the artifacts come from the requested kernel alone (every target but the KIR
    # text of the whole module): then only it, with the helpers and enums, goes through the
    # passes, not the file's other kernels.
    lowers_one_kernel: bool = False
    # Passes that run before the default pipeline's (not before a pipeline the options name):
    # the GPU targets write top-level programs over rows as a `parallel` over them, which the
    # later passes (online reduction) and the GPU mappings then see (docs/passes.md).
    first_passes: str = ""


TARGETS: dict[str, Target] = {}


def register_target(target: Target) -> None:
    TARGETS[target.name] = target


def _lower_kir(module, kernel, arch, options, specialization, timings):
    from ..printer import print_module
    return {"kernel.kir": print_module(module)}


register_target(Target("kir", "the verified module in canonical KIR text", _lower_kir))


# ---- the host CPU (intentc.codegen.cpu) -------------------------------------------------------
def _lower_llvm(module, kernel, arch, options, specialization, timings):
    from ..codegen.cpu.host import lower_and_optimize
    _, optimized = lower_and_optimize(module, kernel, options, specialization, timings)
    return {"kernel.ll": str(optimized)}


def _lower_cpu(module, kernel, arch, options, specialization, timings):
    """The object file, and what a runtime needs to call it (`abi.json`: argument slots and
    run-time check sites), so a cached entry can be loaded without compiling."""
    from ..codegen.cpu import jit
    from ..codegen.cpu.host import lower_and_optimize
    from ..codegen.llvm.abi import abi_json
    lowered, optimized = lower_and_optimize(module, kernel, options, specialization, timings)
    return {"kernel.o": jit.emit_object(optimized), "abi.json": abi_json(lowered), "kernel.ll": str(optimized)}


def _host_toolchain():
    from ..codegen.cpu import jit
    return jit.toolchain()


register_target(Target("llvm", "LLVM IR text for the host (llvmlite)", _lower_llvm, toolchain=_host_toolchain,
                       lowers_one_kernel=True))
register_target(Target("cpu", "a native object file for the host CPU (llvmlite) + abi.json", _lower_cpu,
                       toolchain=_host_toolchain, lowers_one_kernel=True))


# ---- NVIDIA (intentc.codegen.nvptx): one lowering, two artifacts ---------------------------------
def _lower_ptx(module, kernel, arch, options, specialization, timings):
    from ..codegen.nvptx.compile import compile_ptx
    compiled = compile_ptx(module, kernel, arch or "sm_90", specialization, timings)
    return {"kernel.ptx": compiled.ptx, "launch.json": compiled.launch_json()}


def _lower_cubin(module, kernel, arch, options, specialization, timings):
    from ..codegen.llvm.abi import abi_json
    from ..codegen.nvptx.compile import assemble_cubin, compile_ptx
    compiled = compile_ptx(module, kernel, arch or "sm_90", specialization, timings)
    return {"kernel.cubin": assemble_cubin(compiled.ptx, arch or "sm_90", timings),
            "launch.json": compiled.launch_json(), "abi.json": abi_json(compiled.lowered), "kernel.ptx": compiled.ptx}


def _nvidia_variant_rule(module, kernel, arch, specialization):
    from ..codegen.nvptx.compile import variant_rule_of
    return variant_rule_of(module, kernel, arch or "sm_90", specialization)


def _nvidia_toolchain():
    import llvmlite
    import llvmlite.binding as llvm

    from ..toolchain.nvidia import toolchain_facts
    return {"llvm": ".".join(map(str, llvm.llvm_version_info)), "llvmlite": llvmlite.__version__,
            **toolchain_facts()}


# Portable archs oldest first, the default last; sm_90a (Hopper's wgmma) is listed before it
# since its cubins run only on compute capability 9.0 (a Hopper launch picks it).
NVPTX_ARCHS = ("sm_80", "sm_90a", "sm_90")
register_target(Target("ptx", "PTX text for NVIDIA GPUs (LLVM NVPTX, libdevice) + launch.json", _lower_ptx,
                       archs=NVPTX_ARCHS, toolchain=_nvidia_toolchain, variant_rule=_nvidia_variant_rule,
                       lowers_one_kernel=True, first_passes="top-level-tiles,top-level-rows"))
register_target(Target("cubin", "a cubin for NVIDIA GPUs (PTX through ptxas) + launch.json and abi.json",
                       _lower_cubin, archs=NVPTX_ARCHS, toolchain=_nvidia_toolchain, variant_rule=_nvidia_variant_rule,
                       lowers_one_kernel=True, first_passes="top-level-tiles,top-level-rows"))
