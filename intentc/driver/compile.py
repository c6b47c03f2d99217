"""`compile_kernel`: parse (when given text), verify, then lower through a registered target."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.nodes import Kernel, Module
from ..options import CompileOptions, Specialization
from ..parse import parse
from ..verify import verify
from .targets import TARGETS


@dataclass
class CompileResult:
    artifacts: dict[str, str | bytes]
    timings: dict[str, float] = field(default_factory=dict)


def compile_kernel(source: str | Module, kernel: str, target: str, arch: str | None = None,
                   options: CompileOptions | None = None, specialization: Specialization | None = None,
                   file: str = "<input>") -> CompileResult:
    """Compile one kernel; raises DiagnosticError for bad input (never for compiler bugs)."""
    options = options or CompileOptions()
    specialization = specialization or Specialization()
    timings: dict[str, float] = {}
    text = source if isinstance(source, str) else None
    module = _timed(timings, "parse", lambda: parse(source, file)) if text is not None else source
    diagnostics = _timed(timings, "verify", lambda: verify(module, file))
    if diagnostics:
        raise DiagnosticError(diagnostics, text)
    _check_request(module, kernel, target, arch, file, text)
    module = _optimize(module, options, specialization, timings)
    backend = TARGETS[target]
    artifacts = _timed(timings, "lower", lambda: backend.lower(module, kernel, arch, options, specialization, timings))
    return CompileResult(artifacts, timings)


def _optimize(module: Module, options: CompileOptions, specialization: Specialization,
              timings: dict[str, float]) -> Module:
    """The pass pipeline of `options` (docs/passes.md); each pass's time lands in `pass:<name>`."""
    from ..passes import Instrumentation, optimize
    run = _timed(timings, "passes", lambda: optimize(module, options, specialization, Instrumentation(verify_each=False)))
    for name, seconds in run.timings:
        timings[f"pass:{name}"] = timings.get(f"pass:{name}", 0.0) + seconds
    return run.module


def _check_request(module: Module, kernel: str, target: str, arch: str | None, file: str, text: str | None) -> None:
    problems = []
    if not isinstance(module.find(kernel), Kernel):
        kernels = ", ".join(f"@{i.name}" for i in module.items if isinstance(i, Kernel)) or "none"
        problems.append(Diagnostic("E0060", f"no kernel @{kernel} in the module", 1, 1, file,
                                   f"kernels here: {kernels}"))
    if target not in TARGETS:
        problems.append(Diagnostic("E0061", f"unknown target `{target}`", 1, 1, file,
                                   "targets: " + ", ".join(sorted(TARGETS))))
    elif TARGETS[target].archs and arch not in TARGETS[target].archs:
        problems.append(Diagnostic("E0062", f"target `{target}` has no arch `{arch}`", 1, 1, file,
                                   "archs: " + ", ".join(TARGETS[target].archs)))
    if problems:
        raise DiagnosticError(problems, text)


def _timed(timings: dict[str, float], stage: str, work):
    start = time.perf_counter()
    try:
        return work()
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start
