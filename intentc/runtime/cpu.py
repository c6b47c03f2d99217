"""Compile a kernel for the host once, launch it many times.

    kernel = compile_cpu(source_or_module, "row_softmax")
    outputs = kernel({"x": x, "t": 0.7})          # like intentc.run: inputs copied, outputs returned
    kernel.launch(x=x, t=0.7, y=y)                 # in place: y is written, nothing is copied

Illegal inputs found while running (division by zero, out-of-bounds active lanes, ...)
raise the interpreter's `DiagnosticError`, naming the op and its location.
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from ..codegen.cpu.hooks import HostHooks
from ..codegen.cpu.outline import RUNNER
from ..codegen.llvm.kernel import LoweredKernel, lower_kernel
from ..diagnostics import Diagnostic, DiagnosticError
from ..interp.launch import Launch
from ..interp.errors import launch_error
from ..ir.errors import LAUNCH_NO_KERNEL
from ..ir.nodes import Kernel, Module
from ..options import CompileOptions, Specialization
from . import cpu_threads, jit
from .binding import bind_copied, bind_in_place
from .extents import check_extents, extent_params

_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def host_hooks() -> HostHooks:
    hooks = HostHooks()
    hooks.triple, hooks.data_layout = jit.host_triple(), jit.host_data_layout()
    return hooks


def lower_for_host(module: Module, kernel: str, specialization: Specialization | None = None,
                   file: str = "<input>", source: str | None = None) -> LoweredKernel:
    return lower_kernel(module, kernel, host_hooks(), specialization, file, source)


class CpuKernel:
    """A kernel compiled to host code; call it like `intentc.run`, or `launch` it in place."""

    def __init__(self, module: Module, kernel: Kernel, lowered: LoweredKernel, engine, file: str,
                 source: str | None, specialization: Specialization, timings: dict[str, float]):
        self.module, self.kernel, self.lowered, self.file, self.source = module, kernel, lowered, file, source
        self.specialization, self.timings = specialization, timings
        self._engine = engine
        self._extent_params = extent_params(kernel)
        if RUNNER in lowered.module.globals:
            cpu_threads.install(engine, RUNNER)
        self._entry = _SIGNATURE(engine.get_function_address(lowered.function))

    @property
    def llvm_ir(self) -> str:
        return str(self.lowered.module)

    def _constexprs(self, given: dict | None) -> dict:
        return {**self.specialization.constexprs, **(given or {})}

    def _run(self, env: dict, slots: np.ndarray) -> None:
        check_extents(self._extent_params, env, self.file, self.source)
        status = np.zeros(1, dtype=np.int64)
        self._entry(slots.ctypes.data, status.ctypes.data)
        if status[0] == cpu_threads.STATUS_RUNNER_FAILED:
            raise RuntimeError("the CPU thread pool failed while running a parallel region")
        if status[0]:
            raise self._illegal_input(int(status[0]))

    def _illegal_input(self, ident: int) -> DiagnosticError:
        site = self.lowered.sites[ident - 1]
        op = site.op
        line, col = (op.loc.line, op.loc.col) if op.loc else (1, 1)
        return DiagnosticError([Diagnostic(site.code, f"`{op.name}`: {site.message}", line, col, self.file,
                                           site.hint)], self.source)

    def __call__(self, inputs: dict | None = None, constexprs: dict | None = None) -> dict[str, np.ndarray]:
        launch = Launch(self.module, self.kernel, self.file, self.source, self.specialization.extents)
        env, slots, keep = bind_copied(launch, self.lowered.slots, inputs or {}, self._constexprs(constexprs))
        self._run(env, slots)
        del keep
        return {p.name: env[p.name].logical() for p in self.kernel.params
                if getattr(p.type, "direction", None) in ("out", "inout")}

    def launch(self, constexprs: dict | None = None, **arrays) -> None:
        """Run on the caller's arrays: out/inout views are written in place."""
        launch = Launch(self.module, self.kernel, self.file, self.source, self.specialization.extents)
        env, slots, keep = bind_in_place(launch, self.lowered.slots, arrays, self._constexprs(constexprs))
        self._run(env, slots)
        del keep


def _specialization_value(value):
    """A constexpr launch value (enum member, numpy scalar) as a Specialization value."""
    from ..interp.values import EnumValue
    if isinstance(value, EnumValue):
        return value.member
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value).item()
    return value


def _run_passes(module: Module, options: CompileOptions, specialization: Specialization) -> Module:
    """The compile pipeline (fusion legality marks FMA-legal pairs, address width, ...)."""
    from ..passes import Instrumentation, optimize
    return optimize(module, options, specialization, Instrumentation(verify_each=False)).module


def compile_cpu(module_or_text: Module | str, kernel: str, specialization: Specialization | dict | None = None,
                options: CompileOptions | None = None, file: str = "<input>", source: str | None = None) -> CpuKernel:
    """Parse (when given text), verify and compile `kernel` to host code."""
    from ..parse import parse
    from ..verify import verify
    timings: dict[str, float] = {}
    start = time.perf_counter()
    source = module_or_text if isinstance(module_or_text, str) else source
    module = parse(module_or_text, file) if isinstance(module_or_text, str) else module_or_text
    timings["parse"] = time.perf_counter() - start
    diagnostics = verify(module, file)
    if diagnostics:
        raise DiagnosticError(diagnostics, source)
    timings["verify"] = time.perf_counter() - start - timings["parse"]
    target = module.find(kernel)
    if not isinstance(target, Kernel):
        raise launch_error(LAUNCH_NO_KERNEL, f"no kernel @{kernel} in the module", file, 1, 1, source)
    if isinstance(specialization, dict):
        specialization = Specialization(**{**specialization, "constexprs": {
            name: _specialization_value(value) for name, value in specialization.get("constexprs", {}).items()}})
    specialization = specialization or Specialization()
    options = options or CompileOptions()
    mark = time.perf_counter()
    module = _run_passes(module, options, specialization)
    target = module.find(kernel)
    timings["passes"] = time.perf_counter() - mark
    mark = time.perf_counter()
    lowered = lower_for_host(module, kernel, specialization, file, source)
    timings["lower"] = time.perf_counter() - mark
    mark = time.perf_counter()
    optimized = jit.parse_and_optimize(str(lowered.module), options.opt_level)
    timings["optimize"] = time.perf_counter() - mark
    mark = time.perf_counter()
    engine = jit.jit(optimized)
    timings["codegen"] = time.perf_counter() - mark
    return CpuKernel(module, target, lowered, engine, file, source, specialization, timings)
