"""The one place a compile request's specialization and arch are checked and normalized, for
every entry point (CLI, service, runtimes, `intentc.load`): what a request may fix must exist
in the kernel and fit its type, or the request gets a diagnostic at the kernel.

- E0063: an arch for a target that has none;
- E0064: a name the kernel does not have (extent, constexpr, or a view for a layout fact);
- E0065: an extent that is negative or does not fit the index type;
- E0066: a register-form `variant` for a target that has none (the bucket itself is checked
  where the GPU lowering knows the kernel's rule, `nvptx/variants.check_variant`).
"""
from __future__ import annotations

import difflib
from typing import Any

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.dtypes import int_range
from ..ir.nodes import Kernel
from ..ir.types import ConstexprType, TensorType, ViewType
from ..options import Specialization

ARCH_NOT_TAKEN = "E0063"
UNKNOWN_NAME = "E0064"
EXTENT_RANGE = "E0065"
BAD_VARIANT = "E0066"
INDEX_MIN, INDEX_MAX = int_range("index")
VIEW_FACTS = ("unit_stride", "aligned16", "contiguous")


def extent_names(kernel: Kernel) -> list[str]:
    """What `Specialization.extents` may fix: the dynamic extents of the kernel's views, and
    its `index` scalar parameters (which a shape may use as an extent)."""
    names = [e for p in kernel.params if isinstance(p.type, ViewType) for e in p.type.shape if isinstance(e, str)]
    names += [p.name for p in kernel.params
              if isinstance(p.type, TensorType) and not p.type.shape and p.type.dtype == "index"]
    return list(dict.fromkeys(names))


def check_arch(target: str, archs: tuple[str, ...], arch: str | None, kernel: Kernel, file: str,
               source: str | None) -> None:
    if arch is not None and not archs:
        raise _error(ARCH_NOT_TAKEN, f"target `{target}` takes no arch; got `{arch}`", kernel, file, source,
                     "leave out --arch (arch=None) for this target")


def check_variant_target(target: str, has_variants: bool, specialization: Specialization, kernel: Kernel,
                         file: str, source: str | None) -> None:
    if specialization.variant and not has_variants:
        raise _error(BAD_VARIANT, f"target `{target}` has no register-form variants; got specialization `variant` "
                     f"{specialization.variant}", kernel, file, source, "variants are compiled for `ptx` and `cubin`")


def normalize(kernel: Kernel, specialization: Specialization | dict | None, file: str = "<input>",
              source: str | None = None) -> Specialization:
    """`specialization` (a model, a plain dict, or None) as a checked `Specialization`;
    constexpr values given as launch values (numpy scalars, enum members) become plain ones."""
    if isinstance(specialization, Specialization):
        fields = specialization.model_dump()
    else:
        fields = dict(specialization or {})
    fields["constexprs"] = {name: _plain(value) for name, value in dict(fields.get("constexprs") or {}).items()}
    fields["extents"] = {name: _plain(value) for name, value in dict(fields.get("extents") or {}).items()}
    problems = _unknown_names(kernel, fields, file) + _bad_extents(kernel, fields["extents"], file)
    if problems:
        raise DiagnosticError(problems, source)
    return Specialization(**fields)


def _plain(value: Any):
    """A numpy scalar or 0-d array as a Python value; an enum member (`EnumValue`) by name.
    Duck-typed: importing the interpreter here would put numpy's narrow formats (ml_dtypes)
    on every compile's import path."""
    if hasattr(value, "member") and hasattr(value, "enum"):
        return value.member
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    return value


def _unknown_names(kernel: Kernel, fields: dict, file: str) -> list[Diagnostic]:
    constexprs = [p.name for p in kernel.params if isinstance(p.type, ConstexprType)]
    views = [p.name for p in kernel.params if isinstance(p.type, ViewType)]
    known = {"extents": (extent_names(kernel), "dynamic extent"), "constexprs": (constexprs, "constexpr parameter"),
             **dict.fromkeys(VIEW_FACTS, (views, "view parameter"))}
    problems = []
    for field, (names, what) in known.items():
        for name in fields.get(field) or ():
            if name not in names:
                problems.append(_diagnostic(UNKNOWN_NAME, f"kernel @{kernel.name} has no {what} `{name}` "
                                            f"(specialization `{field}`)", kernel, file, _did_you_mean(name, names,
                                                                                                         what)))
    return problems


def _did_you_mean(name: str, names: list[str], what: str) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        return f"did you mean `{close[0]}`?"
    return f"{what}s: " + (", ".join(names) if names else "none")


def _bad_extents(kernel: Kernel, extents: dict, file: str) -> list[Diagnostic]:
    problems = []
    for name, value in extents.items():
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(_diagnostic(EXTENT_RANGE, f"extent `{name}` must be an integer; got {value!r}", kernel,
                                        file))
        elif not 0 <= value <= INDEX_MAX:
            problems.append(_diagnostic(EXTENT_RANGE, f"extent `{name}` = {value} is outside [0, {INDEX_MAX}] "
                                        "(an extent is a non-negative index)", kernel, file,
                                        "an extent must fit the 64-bit index type and cannot be negative"))
    return problems


def _diagnostic(code: str, message: str, kernel: Kernel, file: str, hint: str = "") -> Diagnostic:
    line, col = (kernel.loc.line, kernel.loc.col) if kernel.loc else (1, 1)
    return Diagnostic(code, message, line, col, file, hint)


def _error(code: str, message: str, kernel: Kernel, file: str, source: str | None, hint: str = "") -> DiagnosticError:
    return DiagnosticError([_diagnostic(code, message, kernel, file, hint)], source)
