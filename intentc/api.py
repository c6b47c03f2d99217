"""The public Python API of intentc beyond parsing: running kernels.

`run(module_or_text, kernel, inputs, constexprs=None, seed=0)` runs one kernel on the
reference interpreter and returns its out/inout views by parameter name. The module is
verified first: an ill-typed program is bad input (its diagnostics), never run.
"""
from __future__ import annotations

import numpy as np

from .interp.launch import View, run_kernel
from .ir.nodes import Module
from .parse import parse
from .verify import verify_or_raise

__all__ = ["View", "run"]


def run(module_or_text: Module | str, kernel: str, inputs: dict | None = None, constexprs: dict | None = None,
        seed: int = 0, file: str = "<input>", target: str = "interp") -> dict[str, np.ndarray]:
    """Run `kernel` of a module (or KIR text) on the reference interpreter.

    `inputs` maps parameter names to numpy arrays (views: any strides, or `View`; scalars:
    0-d arrays or Python numbers); `constexprs` maps constexpr parameters to values (enum
    members by name). Returns the out/inout views as arrays of their logical shape.
    Illegal inputs and bad launches raise `DiagnosticError`. `target="cpu"` runs the kernel
    compiled for the host (specialized on `constexprs`), `target="cuda"` on the first CUDA
    GPU; both take it from `intentc.load`'s cache (compiled once per process and kept on disk),
    without launch facts: the inputs are copied as they lie, strided ones too.
    """
    if target in ("cpu", "cuda"):
        from .printer import print_module
        from .runtime.load import load
        text = module_or_text if isinstance(module_or_text, str) else print_module(module_or_text)
        return load(text, kernel, target, constexprs=constexprs, launch_facts=False).runner(inputs or {}, constexprs)
    if isinstance(module_or_text, str):
        source = module_or_text
        module = parse(source, file)
    else:
        source, module = None, module_or_text
    if target != "interp":
        raise ValueError(f"unknown run target {target!r} (interp, cpu, cuda)")
    verify_or_raise(module, file, source)
    return run_kernel(module, kernel, inputs or {}, constexprs, seed, file, source)
