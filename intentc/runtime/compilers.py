"""Where a runtime kernel's artifacts come from: this process (the kernel cache, compiling on
a miss) or the compile service (`ServiceCompiler`). A kernel compiled through one asks the
same one for the register-form variants it compiles on first use (docs/gpu.md, "Variants
for dynamic extents"), so a client of the service launches the service's artifacts and
gets each bucket variant from it too, cached there under a key that holds the variant.

    from intentc.client import Client
    kernel = compile_cuda(text, "row_softmax", compiler=ServiceCompiler(Client(url)))
"""
from __future__ import annotations

import time
from typing import Protocol

from ..driver import Request
from ..printer import print_module
from .kernel_cache import CACHE, Compiled


class Compiler(Protocol):
    def artifacts(self, request: Request) -> Compiled:
        """The artifacts of a checked request (DiagnosticError for what cannot be compiled)."""
        ...


def artifacts_of(request: Request, compiler: Compiler | None) -> Compiled:
    """`request`'s artifacts from `compiler`, or from this process's kernel cache."""
    if compiler is None:
        return CACHE.artifacts(request)
    return compiler.artifacts(request)


class ServiceCompiler:
    """Compiles through the compile service (`intentc.client.Client`): the request's text,
    kernel, target, arch, options and specialization as they are, so the service keys and
    caches each specialization (a variant included) as it would any client's."""

    def __init__(self, client):
        self.client = client

    def artifacts(self, request: Request) -> Compiled:
        start = time.perf_counter()
        text = request.source if request.source is not None else print_module(request.module)
        reply = self.client.compile(text, request.kernel.name, request.target, request.arch, request.options,
                                    request.specialization, request.file)
        return Compiled(reply.key, reply.artifacts, reply.compile_timings, f"service:{reply.status}",
                        time.perf_counter() - start)
