"""A CUDA kernel for a dynamic row length whose compiles wait for its launches (docs/gpu.md,
"Variants for dynamic extents").

Constructing one plans the kernel's mapping to learn its `variant_rule` and lowers nothing.
A launch whose arguments' shapes put the row in a bucket compiles (or finds cached) that
bucket's register-form variant and runs it; the kernel's own entry (the dynamic form) is
compiled only for a launch no variant serves (an empty row, one longer than `largest`,
arguments that do not give the row length) or when asked what was built (`ptx`,
`launch_config`, ...). A first launch thus compiles one kernel, as Triton compiles one block
size a launch shape, instead of the own entry and then its variant.
"""
from __future__ import annotations

import threading

from ..codegen.nvptx.variants import VariantRule
from ..driver import Request
from .compilers import Compiler, artifacts_of
from .cuda import SEEN_CALLS, CudaKernel, cuda_error, variant_kernel
from .cuda_driver import CudaError
from .kernel_cache import Compiled
from .seen_calls import SeenCalls
from .variants import LazyVariants, extent_sources


class DynamicRowKernel:
    def __init__(self, request: Request, rule: VariantRule, compiler: Compiler | None = None,
                 seen: SeenCalls | None = None):
        self.request, self.rule, self._compiler = request, rule, compiler
        self.kernel, self.file, self.specialization = request.kernel, request.file, request.specialization
        # shared by the variants and the own entry (and a `LoadedKernel`'s other compiles)
        self.seen = seen if seen is not None else SeenCalls(SEEN_CALLS)
        self.variants = LazyVariants(rule, self._variant, extent_sources(list(request.kernel.params), rule.extent))
        self._own: CudaKernel | None = None
        self._compiled: Compiled | None = None
        self._lock = threading.Lock()

    def _variant(self, bucket: tuple[int, int]) -> CudaKernel:
        return variant_kernel(self.request, bucket, self.seen, self._compiler)

    def own(self) -> CudaKernel:
        """The kernel's own entry, compiled on first use; it shares the variants built."""
        with self._lock:
            if self._own is None:
                self._compiled = artifacts_of(self.request, self._compiler)
                self._own = CudaKernel(self.request, self._compiled.artifacts, self._compiled.timings, self.seen,
                                       self._compiler, self.variants)
            return self._own

    def own_compiled(self) -> Compiled:
        """The own entry's compile (its cache key and where it came from), made if not yet."""
        self.own()
        assert self._compiled is not None
        return self._compiled

    def _runner(self, arguments: dict) -> CudaKernel:
        """The variant the arguments' shapes pick, else the own entry (it binds and checks them,
        then picks among the variants itself where the bound extents say)."""
        return self.variants.pick_unbound(arguments) or self.own()

    # ---- launching: CudaKernel's calls, each made by the runner the arguments pick ----------
    def __call__(self, inputs: dict | None = None, constexprs: dict | None = None):
        return self._runner(inputs or {})(inputs, constexprs)

    def launch_in_place(self, arrays: dict, constexprs: dict | None = None, stream: int = 0,
                        call: dict | None = None) -> None:
        self._runner(arrays).launch_in_place(arrays, constexprs, stream, call)

    def prepare(self, arrays: dict, constexprs: dict | None = None):
        return self._runner(arrays).prepare(arrays, constexprs)

    def synchronize(self, stream: int = 0) -> None:
        """Wait for `stream`; raise the first illegal input a launch of any entry reported."""
        if self._own is not None:          # it checks the variants too
            self._own.synchronize(stream)
            return
        for variant in list(self.variants.built.values()):
            variant.synchronize(stream)

    def diagnostic(self, error: CudaError):
        return cuda_error(error, self.file)

    # ---- what was built: the own entry's (compiled when asked) -------------------------------
    def __getattr__(self, name: str):
        """`ptx`, `launch_config`, `artifacts`, `abi`, `block`, `grid()`, ...: the own entry's,
        as a `CudaKernel` has them (compiling it if no launch has)."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.own(), name)
