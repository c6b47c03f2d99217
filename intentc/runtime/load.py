"""`intentc.load`: a compiled kernel as a Python callable.

    kernel = intentc.load("ir_samples/row_softmax.kir", "row_softmax", target="cuda")
    kernel(x=x, t=0.5, y=y)          # torch/CuPy GPU tensors, in place, on torch's current stream

Each specialization is compiled once: kernels are cached in this process and on disk
(`kernel_cache`, keyed as the compile service keys its entries). Arguments are bound as the
interpreter binds a launch (same checks, same diagnostics), without copies: numpy and DLPack
arrays on the host, `__cuda_array_interface__` arrays on the GPU. Python numbers for scalar
parameters follow the literal rules (§3): accepted where representable in the dtype.
"""
from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..driver.specialization import VIEW_FACTS, normalize
from ..ir.types import ConstexprType, ViewType
from ..options import CompileOptions
from .binding import call_facts
from .cuda_driver import failure
from .interop import array_ref
from .compilers import Compiler, artifacts_of
from .kernel_cache import Compiled

TARGETS = ("cpu", "cuda", "interp")
# `specialize="auto"`: at most this many shape variants a kernel object compiles; later shapes
# run on the kernel with dynamic extents.
MAX_VARIANTS = 8


def load(source_or_path: str | Path, kernel: str, target: str = "cpu", arch: str | None = None,
         extents: dict | None = None, constexprs: dict | None = None, options: CompileOptions | dict | None = None,
         specialize: str | None = None, facts: dict | None = None, compiler: Compiler | None = None,
         launch_facts: bool = True) -> LoadedKernel:
    """A callable kernel: `kernel(**arrays_and_scalars)` runs it, writing out/inout views in place.

    `extents` and `constexprs` fix values at compile time; `facts` are layout promises per
    view (`{"unit_stride": ["x"], "aligned16": [...], "contiguous": [...]}`), checked at
    every call (R0108); `specialize="auto"` compiles a variant per call shape (at most
    `MAX_VARIANTS`, then the dynamic kernel runs); `compiler` (`compilers.ServiceCompiler`:
    the compile service) compiles the kernel and what it compiles later, instead of this
    process's kernel cache. `launch_facts` (cpu, cuda): each call runs the variant compiled for
    the layout facts its views hold (inferred at the call, as Triton specializes its
    launches); the kernel's own compile assumes every view dense and 16-byte aligned, and a
    call whose views break that compiles (once) the variant for the facts they hold.
    False: the code assumes only `facts`."""
    if target not in TARGETS:
        raise ValueError(f"unknown load target {target!r} (cpu, cuda, interp)")
    if specialize not in (None, "auto"):
        raise ValueError(f"specialize must be None or 'auto', not {specialize!r}")
    text, file = _read(source_or_path)
    options = CompileOptions.model_validate(options or {}) if not isinstance(options, CompileOptions) else options
    memo = (text, file, kernel, target, arch, _frozen(extents), _frozen(constexprs), options.model_dump_json(),
            specialize, _frozen(facts), id(compiler), launch_facts)   # (the kernel keeps `compiler`: its id stays its own)
    with _LOADED_LOCK:
        loaded = _LOADED.get(memo)
        if loaded is None:
            fixed = {**(facts or {}), "extents": dict(extents or {}), "constexprs": dict(constexprs or {})}
            loaded = _LOADED[memo] = LoadedKernel(text, file, kernel, target, arch, fixed, options, specialize,
                                                  compiler, launch_facts and target != "interp")
    return loaded


_LOADED: dict[tuple, LoadedKernel] = {}
_LOADED_LOCK = threading.Lock()


def _read(source_or_path: str | Path) -> tuple[str, str]:
    if isinstance(source_or_path, Path) or ("\n" not in source_or_path and Path(source_or_path).is_file()):
        path = Path(source_or_path)
        return path.read_text(encoding="utf-8"), str(path)
    return source_or_path, "<input>"


def _frozen(values: dict | None) -> tuple:
    return tuple(sorted((name, repr(value)) for name, value in (values or {}).items()))


class LoadedKernel:
    """One kernel of a module for one target; compiled on construction (or taken from the cache)."""

    def __init__(self, text: str, file: str, name: str, target: str, arch: str | None, fixed: dict,
                 options: CompileOptions, specialize: str | None, compiler: Compiler | None = None,
                 launch_facts: bool = False):
        from ..driver import front_end
        self.text, self.file, self.name, self.target = text, file, name, target
        self.constexprs, self.specialize, self._fixed = fixed["constexprs"], specialize, fixed
        compile_target = {"cpu": "cpu", "cuda": "cubin", "interp": "kir"}[target]
        if target == "cuda":
            from .cuda import device_arch
            arch = device_arch() if arch is None else arch
        self._launch_facts = launch_facts
        # the facts the kernel's own compile assumes: the caller's, and with launch facts
        # those of dense, aligned arrays (what a call on fresh tensors holds)
        request = front_end(text, name, compile_target, arch, options, fixed, file)   # checks the caller's facts
        self._facts = _facts_key(fixed, _all_facts(request.kernel) if launch_facts else None)
        self.request = replace(request, specialization=normalize(request.kernel, {**fixed, **dict(self._facts)}))
        self.kernel = self.request.kernel
        self._variants: dict[tuple, object] = {}
        self._lock = threading.Lock()
        self._compiler = compiler
        deferred = self._deferred(self.request)      # a dynamic row: compiled launch by launch
        self._compiled = artifacts_of(self.request, compiler) if target != "interp" and deferred is None else None
        self.runner = deferred or self._build(self.request, self._compiled)
        self._constexpr_names = {p.name for p in self.kernel.params if isinstance(p.type, ConstexprType)}
        self._outputs = [p.name for p in self.kernel.params
                         if isinstance(p.type, ViewType) and p.type.direction in ("out", "inout")]
        # The launches of calls seen before (cuda), shared by all shape variants: a call's key
        # and layouts fix its extents, so they fix the variant too.
        self._seen = self.runner.seen if target == "cuda" else None
        self._current_stream = _current_stream_getter()
        # native_launch.c's fast_call bound to `_seen`'s tables (set once torch is imported)
        self._native: Callable | None = None

    # ---- what was built -------------------------------------------------------------------
    @property
    def compiled(self) -> Compiled | None:
        """The kernel's compile (a dynamic row's own entry: compiled when asked)."""
        deferred = self._compiled is None and self.target == "cuda"
        return self.runner.own_compiled() if deferred else self._compiled

    @property
    def key(self) -> str | None:
        return self.compiled.key if self.compiled else None

    @property
    def artifacts(self) -> dict:
        return self.compiled.artifacts if self.compiled else {}

    @property
    def ptx(self) -> str | None:
        return self.artifacts.get("kernel.ptx")

    @property
    def llvm(self) -> str | None:
        return self.artifacts.get("kernel.ll")

    @property
    def launch_config(self):
        return getattr(self.runner, "launch_config", None)

    # ---- running --------------------------------------------------------------------------
    def __call__(self, stream=None, **arguments):
        """Run with views and scalars by parameter name (constexprs too, unless fixed at load);
        returns the out/inout views (the caller's arrays, written in place)."""
        if self._native is not None:    # the native fast path: torch tensors, seen call or layout
            outputs = self._native(arguments, stream)
            if outputs is not None:
                return outputs
        if self._seen is not None:      # the launch fast path: a call equal to one bound before
            prepared = self._seen.find(arguments)
            if prepared is not None:    # PreparedLaunch.__call__, inlined (one Python call less)
                handle = self._current_stream() if stream is None else _stream(stream)
                shape = prepared.shape
                status = (shape.by_stream.get(handle) or shape.bind(handle))(prepared.extra)
                if status:
                    raise self.runner.diagnostic(failure(status, "cuLaunchKernelEx"))
                return {name: arguments[name] for name in self._outputs}
        return self._call(stream, arguments)

    def _call(self, stream, arguments: dict) -> dict:
        """A call bound and checked in full (and remembered for the fast path where it can be)."""
        constexprs = ({name: arguments[name] for name in arguments if name in self._constexpr_names}
                      if self._constexpr_names else None)
        arrays = {name: value for name, value in arguments.items() if name not in constexprs} if constexprs else arguments
        runner = self._variant(arrays) if self.specialize == "auto" or self._launch_facts else self.runner
        if self.target == "cuda":
            self._current_stream = _current_stream_getter()
            runner.launch_in_place(arrays, constexprs, _stream(stream), arguments)
            self._native = self._native_state()
        elif self.target == "cpu":
            runner.launch(constexprs, **arrays)
        else:
            self._interpret(arrays, constexprs)
        return {name: arrays[name] for name in self._outputs if name in arrays}

    def _native_state(self) -> Callable | None:
        """The native fast path (`native_launch.c`) on this kernel's tables, where it is on
        (`INTENTC_LAUNCH_OFF` does not name it), built, and torch is imported:
        `(arguments, stream) -> outputs or None`."""
        from .cuda_driver import launch_address
        from .launch_paths import enabled
        from .native import fast_call
        native = fast_call() if enabled("native") else None
        if native is None or self._seen is None:
            return None
        state = self._seen.native_state(tuple(self._outputs), self._current_stream, self._launch_failed,
                                        launch_address())
        return functools.partial(native, state) if state is not None else None

    def _launch_failed(self, status: int) -> None:
        raise self.runner.diagnostic(failure(status, "cuLaunchKernelEx"))

    def synchronize(self, stream=None) -> None:
        """cuda: wait for the stream; raise the first illegal input a launch reported since."""
        if self.target == "cuda":
            for runner in (self.runner, *self._variants.values()):
                runner.synchronize(_stream(stream))

    def _deferred(self, request, seen=None):
        """cuda: a `DynamicRowKernel` when the request is a dynamic row's (its own entry and
        each variant compiled when a launch needs it); else None."""
        if self.target != "cuda":
            return None
        from .cuda import deferred_rule
        rule = deferred_rule(request)
        if rule is None:
            return None
        from .dynamic_rows import DynamicRowKernel
        return DynamicRowKernel(request, rule, self._compiler, seen)

    def _build(self, request, compiled, seen=None):
        if self.target == "cpu":
            from .cpu import CpuKernel
            return CpuKernel(request, compiled.artifacts, compiled.timings)
        if self.target == "cuda":
            from .cuda import CudaKernel
            return CudaKernel(request, compiled.artifacts, compiled.timings, seen, self._compiler)
        return None

    def _interpret(self, arguments: dict, constexprs: dict | None) -> None:
        import numpy as np

        from ..interp.launch import run_kernel
        inputs = {name: np.from_dlpack(value) if hasattr(value, "__dlpack__") else value
                  for name, value in arguments.items()}
        outputs = run_kernel(self.request.module, self.name, inputs, {**self.constexprs, **(constexprs or {})}, 0,
                             self.file, self.text)
        for name, value in outputs.items():
            if name in inputs:
                np.copyto(inputs[name], value)
            else:
                arguments[name] = value

    def _variant(self, arguments: dict):
        """The kernel specialized to these arguments' extents (`specialize="auto"`) and the
        layout facts their views hold (`launch_facts`): the kernel's own where they are its."""
        extents = _call_extents(self.kernel, arguments) if self.specialize == "auto" else {}
        facts = (_facts_key(self._fixed, call_facts(self.kernel, arguments)) if self._launch_facts
                 else self._facts)
        if not extents and facts == self._facts:
            return self.runner
        signature = (tuple(sorted(extents.items())), facts)
        with self._lock:
            runner = self._variants.get(signature)
            if runner is None and (len(self._variants) >= MAX_VARIANTS or self.target == "interp"):
                if facts == self._facts:
                    return self.runner
                # past the limit: the dynamic kernel assuming the caller's facts only
                signature = ((), facts := _facts_key(self._fixed, None))
                runner = self._variants.get(signature)
            if runner is None:
                runner = self._variants[signature] = self._compile_variant(dict(signature[0]), facts)
        return runner

    def _compile_variant(self, extents: dict, facts: tuple):
        """The kernel compiled for `extents` and layout `facts` (a `_facts_key`), sharing this
        kernel object's calls seen before."""
        from ..driver import front_end
        fixed = {**self._fixed, **dict(facts), "extents": {**extents, **self._fixed["extents"]}}
        request = front_end(self.request.module, self.name, self.request.target, self.request.arch,
                            self.request.options, fixed, self.file, self.text)
        return self._deferred(request, self._seen) or self._build(request, artifacts_of(request, self._compiler),
                                                                    self._seen)


def _all_facts(kernel) -> dict[str, tuple[str, ...]]:
    """Every layout fact for every view of `kernel`: what a call on dense, aligned arrays holds."""
    views = tuple(sorted(p.name for p in kernel.params if isinstance(p.type, ViewType)))
    return dict.fromkeys(VIEW_FACTS, views)


def _facts_key(fixed: dict, held: dict | None) -> tuple:
    """The layout facts a compile assumes, as `Specialization` fields in one order: the
    caller's (`fixed`) and those `held` (None: none)."""
    return tuple((fact, tuple(sorted({*fixed.get(fact, ()), *(held or {}).get(fact, ())}))) for fact in VIEW_FACTS)


def _call_extents(kernel, arguments: dict) -> dict[str, int]:
    """The dynamic extents the arguments' shapes bind (first binding wins; the launch checks the rest)."""
    extents: dict[str, int] = {}
    for param in kernel.params:
        value = arguments.get(param.name)
        if isinstance(param.type, ViewType) and value is not None:
            try:
                shape = array_ref(value).shape
            except TypeError:
                continue                # not an array: the binding reports it
            for declared, actual in zip(param.type.shape, shape):
                if isinstance(declared, str):
                    extents.setdefault(declared, actual)
    return extents


def _stream(stream) -> int:
    """A CUDA stream handle: an int, an object with `cuda_stream` (torch) or `ptr` (CuPy), or
    torch's current stream on device 0 (the device intentc's runtime uses)."""
    if stream is None:
        return _current_stream_getter()()
    return int(getattr(stream, "cuda_stream", getattr(stream, "ptr", stream)))


def _current_stream_getter():
    """Reads torch's current stream on device 0 (0, the default stream, without torch). Torch
    is looked for only once it has been imported: importing it here would cost a second."""
    global _current_stream_reader
    if _current_stream_reader is None and "torch" in sys.modules:
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)   # what Triton's launcher asks too: one C call
        _current_stream_reader = functools.partial(raw, 0) if raw is not None else _default_stream
    return _current_stream_reader or _default_stream


def _default_stream() -> int:
    return 0


_current_stream_reader: Callable[[], int] | None = None
