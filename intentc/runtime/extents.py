"""Launch-time R0206 for compiled kernels (CPU and CUDA): a runtime `index` parameter used as an extent of a
computed tensor or buffer must not be negative. The interpreter reports it at the op whose
shape it evaluates; so does this check, at the first such op in program order. (Negative
parallel domains are checked in the compiled code, `intentc.codegen.llvm.control`.)"""
from __future__ import annotations

import numpy as np

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir import errors
from ..ir.nodes import Kernel
from ..ir.types import RecordType, TensorType, TupleType, ViewType


def _type_extents(type_, out: set) -> set:
    if isinstance(type_, TupleType):
        for element in type_.elements:
            _type_extents(element, out)
    elif isinstance(type_, RecordType):
        for f in type_.fields:
            _type_extents(f.type, out)
    else:
        out.update(e for e in getattr(type_, "shape", ()) if isinstance(e, str))
    return out


def _first_uses(ops, names: set, found: dict) -> dict:
    for op in ops:
        for name in sorted(set().union(*(_type_extents(t, set()) for t in op.result_types)) & names):
            found.setdefault(name, op)
        for region in op.regions:
            _first_uses(region.ops, names, found)
    return found


def extent_params(kernel: Kernel) -> dict:
    """{runtime index parameter used as an extent: the first op whose shape uses it}."""
    declared = {e for p in kernel.params if isinstance(p.type, ViewType) for e in p.type.shape if isinstance(e, str)}
    scalars = {p.name for p in kernel.params if isinstance(p.type, TensorType) and not p.type.shape
               and p.type.dtype == "index" and p.name not in declared}
    return _first_uses(kernel.body, scalars, {})


def check_extents(uses: dict, env: dict, file: str, source: str | None) -> None:
    for name, op in uses.items():
        value = int(np.asarray(env[name]))
        if value < 0:
            line, col = (op.loc.line, op.loc.col) if op.loc else (1, 1)
            raise DiagnosticError([Diagnostic(errors.NEGATIVE_EXTENT, f"`{op.name}`: extent %{name} is negative "
                                              f"({value})", line, col, file)], source)


def input_extents(module, kernel: Kernel, inputs: dict, file: str, source: str | None) -> dict[str, int]:
    """The dynamic extents the given view arrays bind (checked as a launch checks them: a
    mismatch is the launch's R0105), for compiling a kernel specialized to its one launch."""
    from ..interp.launch import Launch
    launch = Launch(module, kernel, file, source)
    for param in kernel.params:
        value = inputs.get(param.name)
        if isinstance(param.type, ViewType) and isinstance(value, np.ndarray):
            launch.check_view(param, value.shape, value.dtype)
    return {name: value for name, (value, _) in launch.extents.items()}
