"""What the CPU and CUDA runtimes share: a kernel compiled from a checked request, its
artifacts and argument ABI, and the interpreter's launch (checks and diagnostics) to bind
its arguments with."""
from __future__ import annotations

from ..codegen.llvm.abi import KernelAbi
from ..driver import Request
from ..interp.launch import Launch
from .extents import extent_params


class CompiledKernel:
    def __init__(self, request: Request, artifacts: dict[str, str | bytes], timings: dict[str, float]):
        self.module, self.kernel, self.file, self.source = request.module, request.kernel, request.file, request.source
        self.specialization, self.artifacts, self.timings = request.specialization, artifacts, timings
        self.abi = KernelAbi.from_json(artifacts["abi.json"])
        self._extent_params = extent_params(self.kernel)
        self._outputs = [p.name for p in self.kernel.params
                         if getattr(p.type, "direction", None) in ("out", "inout")]

    def _constexprs(self, given: dict | None) -> dict:
        return {**self.specialization.constexprs, **(given or {})}

    def _launch(self) -> Launch:
        return Launch(self.module, self.kernel, self.file, self.source, self.specialization.extents)
