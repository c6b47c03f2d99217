"""From a parsed LLVM module of kernel entries to PTX: libdevice linked, every function but
the entries internal, the kernel pipeline (`machine.optimize`), LLVM's NVPTX printer."""
from __future__ import annotations

import time

import llvmlite.binding as llvm

from . import libdevice, machine


def optimized_ptx(module: llvm.ModuleRef, arch: str, entries: set[str], timings: dict, mark: float,
                  strength_reduce: bool = True, lean: bool = False, level: int = 2, combine: bool = True,
                  prepare: bool = True, dag_combine: bool = True, context: llvm.ContextRef | None = None) -> str:
    """PTX of `module` (call under `machine.LOCK`); times `llvm-opt` from `mark`, then `ptx-emit`
    (`strength_reduce`, `level`, `prepare`, `dag_combine`: see `machine.emit_ptx`; `lean`, `combine`: see
    `machine.optimize`; `context`: `module`'s, where it is not the global one)."""
    libdevice.link(module, arch, context)
    for function in module.functions:
        if not function.is_declaration and function.name not in entries:
            function.linkage = "internal"
    machine.optimize(module, arch, lean, combine)
    timings["llvm-opt"] = timings.get("llvm-opt", 0.0) + time.perf_counter() - mark
    mark = time.perf_counter()
    ptx = machine.emit_ptx(module, arch, strength_reduce=strength_reduce, level=level, prepare=prepare, collect=True,
                             dag_combine=dag_combine)
    timings["ptx-emit"] = timings.get("ptx-emit", 0.0) + time.perf_counter() - mark
    return ptx
