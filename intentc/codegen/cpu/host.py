"""The host CPU's lowering: the shared KIR→LLVM lowering with host hooks, for this process's
LLVM triple and data layout, then LLVM's optimization pipeline (`jit`)."""
from __future__ import annotations

import time

import llvmlite.binding as llvm

from ...ir.nodes import Module
from ...options import CompileOptions, Specialization
from ..llvm.kernel import LoweredKernel, lower_kernel
from ..llvm.printing import module_text
from . import jit
from .hooks import HostHooks


def host_hooks() -> HostHooks:
    hooks = HostHooks()
    hooks.triple, hooks.data_layout = jit.host_triple(), jit.host_data_layout()
    return hooks


def lower_for_host(module: Module, kernel: str, specialization: Specialization | None = None,
                   file: str = "<input>", source: str | None = None) -> LoweredKernel:
    return lower_kernel(module, kernel, host_hooks(), specialization, file, source)


def lower_and_optimize(module: Module, kernel: str, options: CompileOptions, specialization: Specialization,
                       timings: dict[str, float], file: str = "<input>",
                       source: str | None = None) -> tuple[LoweredKernel, llvm.ModuleRef]:
    """The lowered kernel (slots, check sites) and its LLVM module optimized at `options.opt_level`;
    the time of LLVM's pipeline lands in `timings["llvm-opt"]`."""
    lowered = lower_for_host(module, kernel, specialization, file, source)
    start = time.perf_counter()
    optimized = jit.parse_and_optimize(module_text(lowered.module), options.opt_level)
    timings["llvm-opt"] = timings.get("llvm-opt", 0.0) + time.perf_counter() - start
    return lowered, optimized
