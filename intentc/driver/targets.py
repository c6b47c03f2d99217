"""The target registry: each backend registers a `Target` that turns a verified module into
named artifacts. The driver, the CLI's `compile` and the service all look targets up here,
so a backend joins every entry point by registering once."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..ir.nodes import Module
from ..options import CompileOptions, Specialization

# (module, kernel name, arch, options, specialization, timings to fill) → artifacts by name
Lower = Callable[[Module, str, "str | None", CompileOptions, Specialization, dict], dict[str, "str | bytes"]]


@dataclass(frozen=True)
class Target:
    name: str
    summary: str
    lower: Lower
    archs: tuple[str, ...] = ()
    # The toolchain facts this target's output depends on (LLVM version, ptxas hash, ...).
    toolchain: Callable[[], dict[str, str]] = field(default=lambda: {})


TARGETS: dict[str, Target] = {}


def register_target(target: Target) -> None:
    TARGETS[target.name] = target


def _lower_kir(module, kernel, arch, options, specialization, timings):
    from ..printer import print_module
    return {"kernel.kir": print_module(module)}


register_target(Target("kir", "the verified module in canonical KIR text", _lower_kir))
