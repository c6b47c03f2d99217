"""Register-form variants of a dynamic row, from a checked request (docs/gpu.md, "Variants
for dynamic extents"): the rule a compile would record, planned without lowering, and the
request for the one variant that serves a given row length (`intentc compile --variant-for`,
and the runtime's deferred kernels)."""
from __future__ import annotations

from dataclasses import replace

from ..diagnostics import Diagnostic, DiagnosticError
from ..options import Specialization
from .compile import Request, optimized
from .specialization import BAD_VARIANT
from .targets import TARGETS


def variant_rule(request: Request):
    """The `VariantRule` the request's compile records in `launch.json` (`variant_rule`),
    or None: a target without variants, or a kernel without a dynamic row."""
    rule_of = TARGETS[request.target].variant_rule
    if rule_of is None:
        return None
    return rule_of(optimized(request), request.kernel.name, request.arch, request.specialization)


def variant_request(request: Request, extent: str, value: int) -> Request:
    """`request` for only the variant serving launches that bind `extent` to `value`; a
    BAD_VARIANT diagnostic at the kernel where no variant does."""
    rule = variant_rule(request)
    bucket = rule.bucket(value) if rule is not None and rule.extent == extent else None
    if bucket is None:
        hint = (f"variants serve {rule.extent} = 1 … {rule.largest // rule.factor}" if rule is not None
                else "only a CTA-mapped row of one dynamic extent has variants (ptx, cubin)")
        kernel = request.kernel
        line, col = (kernel.loc.line, kernel.loc.col) if kernel.loc else (1, 1)
        raise DiagnosticError([Diagnostic(BAD_VARIANT, f"no register-form variant of kernel @{kernel.name} serves "
                                          f"{extent} = {value}", line, col, request.file, hint)], request.source)
    specialization = Specialization(**{**request.specialization.model_dump(), "variant": bucket})
    return replace(request, specialization=specialization, timings={})
