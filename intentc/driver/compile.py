"""The one compile front-end: parse (when given text) → verify → find the kernel → check the
target and normalize the specialization → passes → lower through a registered target, each
stage timed. The CLI, the runtimes, `intentc.load`, the service and the benchmarks all come
through here, so a request is checked the same way (and gets the same diagnostics) everywhere."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.nodes import Kernel, Module
from ..options import CompileOptions, Specialization
from . import specialization as spec
from .collector import collector_paused
from .targets import TARGETS

NO_KERNEL, UNKNOWN_TARGET, NO_ARCH = "E0060", "E0061", "E0062"


@dataclass
class CompileResult:
    artifacts: dict[str, str | bytes]
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class Request:
    """A checked compile request: the verified module (before the passes) and its kernel,
    the target, and the normalized specialization."""
    module: Module
    kernel: Kernel
    target: str
    arch: str | None
    options: CompileOptions
    specialization: Specialization
    file: str
    source: str | None
    timings: dict[str, float] = field(default_factory=dict)


def front_end(source: str | Module, kernel: str, target: str, arch: str | None = None,
              options: CompileOptions | None = None, specialization: Specialization | dict | None = None,
              file: str = "<input>", text: str | None = None) -> Request:
    """Everything before the passes; raises DiagnosticError for bad input. `text` is the
    source of an already parsed module (for carets in diagnostics)."""
    with collector_paused():
        return _front_end(source, kernel, target, arch, options, specialization, file, text)


def _front_end(source: str | Module, kernel: str, target: str, arch: str | None, options: CompileOptions | None,
               specialization: Specialization | dict | None, file: str, text: str | None) -> Request:
    timings: dict[str, float] = {}
    text = source if isinstance(source, str) else text
    if isinstance(source, str):
        from ..parse import parse
        module = _timed(timings, "parse", lambda: parse(source, file))
    else:
        module = source
    from ..verify import verify
    diagnostics = _timed(timings, "verify", lambda: verify(module, file))
    if diagnostics:
        raise DiagnosticError(diagnostics, text)
    found = _find_kernel(module, kernel, file, text)
    _check_target(found, target, arch, file, text)
    normalized = spec.normalize(found, specialization, file, text)
    spec.check_variant_target(target, TARGETS[target].variant_rule is not None, normalized, found, file, text)
    return Request(module, found, target, arch, options or CompileOptions(), normalized, file, text, timings)


def compile_request(request: Request) -> CompileResult:
    """The passes and the target's lowering of a checked request."""
    timings = request.timings
    with collector_paused():
        module = _optimize(request, timings)
        backend = TARGETS[request.target]
        artifacts = _timed(timings, "lower", lambda: backend.lower(module, request.kernel.name, request.arch,
                                                                   request.options, request.specialization, timings))
    return CompileResult(artifacts, timings)


def optimized(request: Request) -> Module:
    """The request's module after its pass pipeline: what its target lowers."""
    with collector_paused():
        return _optimize(request, request.timings)


def compile_kernel(source: str | Module, kernel: str, target: str, arch: str | None = None,
                   options: CompileOptions | None = None, specialization: Specialization | dict | None = None,
                   file: str = "<input>", text: str | None = None) -> CompileResult:
    """Compile one kernel; raises DiagnosticError for bad input (never for compiler bugs)."""
    with collector_paused():
        return compile_request(front_end(source, kernel, target, arch, options, specialization, file, text))


def _optimize(request: Request, timings: dict[str, float]) -> Module:
    """The pass pipeline of the request's options (docs/passes.md); each pass's time lands in
    `pass:<name>`. A target that lowers the requested kernel alone gets it optimized alone."""
    from ..passes import DEFAULT_PIPELINE, Instrumentation, optimize
    target = TARGETS[request.target]
    module = _kernel_alone(request.module, request.kernel.name) if target.lowers_one_kernel else request.module
    options = request.options
    if options.pipeline is None and target.first_passes:
        options = options.model_copy(update={"pipeline": f"{target.first_passes},{DEFAULT_PIPELINE}"})
    run = _timed(timings, "passes", lambda: optimize(module, options, request.specialization,
                                                     Instrumentation(verify_each=False)))
    for name, seconds in run.timings:
        timings[f"pass:{name}"] = timings.get(f"pass:{name}", 0.0) + seconds
    return run.module


def _kernel_alone(module: Module, kernel: str) -> Module:
    """The module without its other kernels (its helpers and enums kept): what the passes need
    to optimize for one kernel (flash attention's file holds two: half the passes' time)."""
    items = tuple(item for item in module.items if not isinstance(item, Kernel) or item.name == kernel)
    return module if len(items) == len(module.items) else module.model_copy(update={"items": items})


def _find_kernel(module: Module, kernel: str, file: str, text: str | None) -> Kernel:
    found = module.find(kernel)
    if not isinstance(found, Kernel):
        kernels = ", ".join(f"@{i.name}" for i in module.items if isinstance(i, Kernel)) or "none"
        raise DiagnosticError([Diagnostic(NO_KERNEL, f"no kernel @{kernel} in the module", 1, 1, file,
                                          f"kernels here: {kernels}")], text)
    return found


def _check_target(kernel: Kernel, target: str, arch: str | None, file: str, text: str | None) -> None:
    if target not in TARGETS:
        raise DiagnosticError([Diagnostic(UNKNOWN_TARGET, f"unknown target `{target}`", 1, 1, file,
                                          "targets: " + ", ".join(sorted(TARGETS)))], text)
    archs = TARGETS[target].archs
    if archs and arch not in archs:
        raise DiagnosticError([Diagnostic(NO_ARCH, f"target `{target}` has no arch `{arch}`", 1, 1, file,
                                          "archs: " + ", ".join(archs))], text)
    spec.check_arch(target, archs, arch, kernel, file, text)


def _timed(timings: dict[str, float], stage: str, work):
    start = time.perf_counter()
    try:
        return work()
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start
