"""The public Python API of intentc beyond parsing: running kernels.

`run(module_or_text, kernel, inputs, constexprs=None, seed=0)` runs one kernel on the
reference interpreter and returns its out/inout views by parameter name.
"""
from __future__ import annotations

import numpy as np

from .interp.launch import View, run_kernel
from .ir.nodes import Module
from .parse import parse

__all__ = ["View", "run"]


def run(module_or_text: Module | str, kernel: str, inputs: dict | None = None, constexprs: dict | None = None,
        seed: int = 0, file: str = "<input>", target: str = "interp") -> dict[str, np.ndarray]:
    """Run `kernel` of a module (or KIR text) on the reference interpreter.

    `inputs` maps parameter names to numpy arrays (views: any strides, or `View`; scalars:
    0-d arrays or Python numbers); `constexprs` maps constexpr parameters to values (enum
    members by name). Returns the out/inout views as arrays of their logical shape.
    Illegal inputs and bad launches raise `DiagnosticError`. `target="cpu"` compiles the
    kernel for the host (specialized on `constexprs`) and runs it there instead; to compile
    once and launch many times use `intentc.runtime.cpu.compile_cpu`. `target="cuda"` does
    the same on the first CUDA GPU (`intentc.runtime.cuda.compile_cuda`).
    """
    if isinstance(module_or_text, str):
        source = module_or_text
        module = parse(source, file)
    else:
        source, module = None, module_or_text
    if target == "cpu":
        from .runtime.cpu import compile_cpu
        compiled = compile_cpu(module, kernel, {"constexprs": dict(constexprs or {})}, file=file, source=source)
        return compiled(inputs or {}, constexprs)
    if target == "cuda":
        from .runtime.cuda import compile_cuda
        compiled = compile_cuda(module, kernel, {"constexprs": dict(constexprs or {})}, file=file, source=source)
        return compiled(inputs or {}, constexprs)
    if target != "interp":
        raise ValueError(f"unknown run target {target!r} (interp, cpu, cuda)")
    return run_kernel(module, kernel, inputs or {}, constexprs, seed, file, source)
