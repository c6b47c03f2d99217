"""One way for every stage to give its implementation of an op: a `Registry` keyed by the op
table. The verifier's rules, the interpreter's evaluators and the LLVM lowerings each keep
one, filled by family modules named like the op table's (`ir/ops/X.py` → `verify/rules/X.py`,
`interp/X.py`, `codegen/llvm/X.py`):

    IMPLS = Registry("interpreter", "intentc.interp")

    @IMPLS.register("add", "sub")
    def _binary_op(machine, op): ...

Registering a name the table does not define, one op twice, or an op from a module other
than the stage's module of the op's family fails at import; `missing()` lists the ops a
stage has not implemented (tests/ir/test_registries.py requires none).
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from . import ops as op_families
from .optable import OpDef, all_ops, lookup

Impl = TypeVar("Impl", bound=Callable)


def _caller_module() -> str:
    """The module whose code called the registry method calling this."""
    return sys._getframe(2).f_globals["__name__"]


def families() -> list[str]:
    """The op families: the module names of `intentc.ir.ops`."""
    return sorted(info.name for info in pkgutil.iter_modules(op_families.__path__))


class Registry(Generic[Impl]):
    def __init__(self, stage: str, package: str, exempt: Callable[[OpDef], bool] = lambda op: False):
        """`package` holds the stage's family modules; `exempt` says which ops the stage
        legitimately leaves out (declared in their definitions)."""
        self.stage = stage
        self.package = package
        self.exempt = exempt
        self._impls: dict[str, Impl] = {}
        self._loaded = False
        # Compiles in the service's threads may ask at once: nobody reads a half-filled table.
        self._loading = threading.RLock()

    def register(self, *names: str) -> Callable[[Impl], Impl]:
        """Decorator: `impl` implements the ops `names`."""
        module = _caller_module()

        def decorate(impl: Impl) -> Impl:
            self._add(names, impl, module)
            return impl
        return decorate

    def add(self, names: Iterable[str], impl: Impl) -> None:
        """`impl` implements the ops `names` (for implementations made by a factory)."""
        self._add(names, impl, _caller_module())

    def _add(self, names: Iterable[str], impl: Impl, module: str) -> None:
        for name in names:
            op = lookup(name)
            if op is None:
                raise KeyError(f"{self.stage}: op {name!r} is not in the op table")
            if name in self._impls:
                raise ValueError(f"{self.stage}: op {name!r} registered twice")
            if module != f"{self.package}.{op.family}":
                raise ValueError(f"{self.stage}: op {name!r} of family {op.family!r} registered from {module}, "
                                 f"not from {self.package}.{op.family}")
            self._impls[name] = impl

    def load(self) -> Registry[Impl]:
        """Import the stage's module of every op family (each registers its ops)."""
        if not self._loaded:
            with self._loading:
                for family in families():
                    importlib.import_module(f"{self.package}.{family}")
                self._loaded = True
        return self

    def get(self, name: str) -> Impl | None:
        return self.load()._impls.get(name)

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def missing(self) -> list[str]:
        """Ops of the table without an implementation here and not exempt from one."""
        self.load()
        return sorted(name for name, op in all_ops().items() if name not in self._impls and not self.exempt(op))
