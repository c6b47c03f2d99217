"""Compile a kernel for the host once, launch it many times.

    kernel = compile_cpu(source_or_module, "row_softmax")
    outputs = kernel({"x": x, "t": 0.7})          # like intentc.run: inputs copied, outputs returned
    kernel.launch(x=x, t=0.7, y=y)                 # in place: y is written, nothing is copied

The kernel comes from the driver's `cpu` target (an object file and its `abi.json`), so a
cached entry loads without compiling (`CpuKernel(request, artifacts, timings)`). Illegal inputs found while
running (division by zero, out-of-bounds active lanes, ...) raise the interpreter's
`DiagnosticError`, naming the op and its location.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..codegen.cpu import jit
from ..codegen.cpu.outline import RUNNER
from ..driver import Request, compile_request, front_end
from ..ir.nodes import Module
from ..options import CompileOptions, Specialization
from . import cpu_threads
from .binding import bind_copied, bind_in_place
from .compiled import CompiledKernel
from .extents import check_extents
from .status import illegal_input

_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class CpuKernel(CompiledKernel):
    """A kernel compiled to host code; call it like `intentc.run`, or `launch` it in place."""

    def __init__(self, request: Request, artifacts: dict[str, str | bytes], timings: dict[str, float]):
        super().__init__(request, artifacts, timings)
        self._engine = jit.load_object(artifacts["kernel.o"])
        cpu_threads.install(self._engine, RUNNER)
        self._entry = _SIGNATURE(self._engine.get_function_address(self.abi.function))

    @property
    def llvm(self) -> str:
        """The optimized LLVM IR the object file was compiled from."""
        return str(self.artifacts["kernel.ll"])

    def run_slots(self, env: dict, slots: np.ndarray) -> None:
        """Run on a bound environment and its packed argument slots; raise what the status word reports."""
        check_extents(self._extent_params, env, self.file, self.source)
        status = np.zeros(1, dtype=np.int64)
        self._entry(slots.ctypes.data, status.ctypes.data)
        if status[0] == cpu_threads.STATUS_RUNNER_FAILED:
            raise RuntimeError("the CPU thread pool failed while running a parallel region")
        if status[0]:
            raise illegal_input(self.abi, int(status[0]), self.file, self.source)

    def __call__(self, inputs: dict | None = None, constexprs: dict | None = None) -> dict[str, np.ndarray]:
        env, slots, keep = bind_copied(self._launch(), self.abi.slots, inputs or {}, self._constexprs(constexprs),
                                       self.specialization)
        self.run_slots(env, slots)
        del keep
        return {name: env[name].logical() for name in self._outputs}

    def launch(self, constexprs: dict | None = None, **arrays) -> None:
        """Run on the caller's arrays: out/inout views are written in place."""
        env, slots, keep = bind_in_place(self._launch(), self.abi.slots, arrays, self._constexprs(constexprs),
                                         facts=self.specialization)
        self.run_slots(env, slots)
        del keep


def compile_cpu(module_or_text: Module | str, kernel: str, specialization: Specialization | dict | None = None,
                options: CompileOptions | None = None, file: str = "<input>", source: str | None = None) -> CpuKernel:
    """Parse (when given text), verify and compile `kernel` to host code (the driver's `cpu` target)."""
    request = front_end(module_or_text, kernel, "cpu", None, options, specialization, file, source)
    result = compile_request(request)
    return CpuKernel(request, result.artifacts, result.timings)

