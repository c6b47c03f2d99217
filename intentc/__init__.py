"""intentc: a compiler for KIR, the typed IR of the Intent kernel language.

The small public API: `parse` text into nodes, `print_module` them back as canonical text,
convert to and from JSON, `verify` a module, `run` a kernel on the reference
interpreter, and `load` a compiled kernel as a callable (CPU or CUDA).
"""
from .diagnostics import Diagnostic, DiagnosticError
from .parse import parse
from .printer import print_module
from .serialize import from_json, json_schema, to_json
# Bound here, not lazily: importing the submodule `intentc.verify` sets the package attribute
# `verify` to that module, so a lazy binding would be replaced by the module after first use.
from .verify import verify, verify_or_raise
from .version import __version__

__all__ = [
    "Diagnostic",
    "DiagnosticError",
    "View",
    "__version__",
    "compile_kernel",
    "from_json",
    "json_schema",
    "load",
    "parse",
    "print_module",
    "run",
    "to_json",
    "verify",
    "verify_or_raise",
]


_LAZY = {"run": "api", "View": "api", "compile_kernel": "driver", "load": "runtime.load"}


def __getattr__(name: str):
    """Import the interpreter and driver only when used: `intentc fmt` stays fast."""
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'intentc' has no attribute {name!r}")
