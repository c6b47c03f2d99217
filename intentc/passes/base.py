"""What every pass shares: the `Pass` base class, the context a pipeline runs in, and the
registry that maps pass names to classes.

A pass is a frozen dataclass whose fields are its options (xDSL style): `segment: int = 64`
becomes the pipeline option `online-reduction{segment=64}`. `run(module, ctx)` returns the
new module, and returns the *same object* when it changes nothing, so the pass manager
sees "no change" without comparing trees. Passes register by name; the registry imports
a pass's module only when its name is first looked up.
"""
from __future__ import annotations

import dataclasses
import importlib
import typing
from dataclasses import dataclass, field
from typing import ClassVar

from ..ir.nodes import Module
from ..options import CompileOptions, Specialization


@dataclass
class PassContext:
    """What a pipeline run knows beyond the IR: compile options and specialization facts."""
    options: CompileOptions = field(default_factory=CompileOptions)
    specialization: Specialization = field(default_factory=Specialization)
    # Counters a pass may bump ("fusion-legality.contract-add": 2); tests and --timing read them.
    statistics: dict[str, int] = field(default_factory=dict)

    def count(self, key: str, amount: int = 1) -> None:
        self.statistics[key] = self.statistics.get(key, 0) + amount


@dataclass(frozen=True)
class Pass:
    """Base class of every pass; subclasses set `name` and `summary` and implement `run`."""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def run(self, module: Module, ctx: PassContext) -> Module:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def options(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls))

    @classmethod
    def option_types(cls) -> dict[str, object]:
        hints = typing.get_type_hints(cls)
        return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


# Pass name -> module under intentc.passes that defines it (imported on first lookup).
PASS_MODULES: dict[str, str] = {
    "canonicalize": "canonicalize",
    "cse": "cse",
    "dce": "dce",
    "fusion-legality": "fusion_legality",
    "online-reduction": "online_reduction",
    "address-width": "address_width",
    "top-level-rows": "top_level_rows",
    "top-level-tiles": "top_level_tiles",
}
_REGISTRY: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make a pass available to pipelines under `cls.name`."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no pass name")
    _REGISTRY[cls.name] = cls
    return cls


def verifies_replaced(module: Module, original, replacement) -> bool:
    """Whether `module` with item `original` replaced by `replacement` passes the verifier: a
    rewrite that builds new IR from a pattern (top-level-rows, top-level-tiles) keeps the
    original where a form it did not foresee would not verify, rather than compile it wrong."""
    from ..verify import verify
    items = tuple(replacement if item is original else item for item in module.items)
    return not verify(module.model_copy(update={"items": items}))


def unregister_pass(name: str) -> None:
    _REGISTRY.pop(name, None)


def lookup_pass(name: str) -> type[Pass] | None:
    if name not in _REGISTRY and name in PASS_MODULES:
        importlib.import_module(f"{__package__}.{PASS_MODULES[name]}")
    return _REGISTRY.get(name)


def pass_names() -> list[str]:
    return sorted(set(PASS_MODULES) | set(_REGISTRY))
