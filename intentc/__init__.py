"""intentc: a compiler for KIR, the typed IR of the Intent kernel language.

The small public API: `parse` text into nodes, `print_module` them back as canonical text,
and convert to and from JSON.
"""
from .diagnostics import Diagnostic, DiagnosticError
from .parse import parse
from .printer import print_module
from .serialize import from_json, json_schema, to_json
from .version import __version__

__all__ = [
    "Diagnostic", "DiagnosticError", "__version__", "from_json", "json_schema", "parse",
    "print_module", "to_json",
]
