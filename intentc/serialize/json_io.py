"""KIR ↔ JSON. The JSON is the pydantic model dump: every node with its `loc` and comments.

Non-finite floats are written as the JSON constants `NaN`, `Infinity` and `-Infinity`,
which Python's json module and JavaScript's JSON5 readers accept.
"""
from __future__ import annotations

import json

from pydantic import ValidationError

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.nodes import Module

FORMAT_VERSION = 1


def to_json(module: Module, indent: int | None = 2) -> str:
    body = module.model_dump(mode="json")
    return json.dumps({"kir_json": FORMAT_VERSION, "module": body}, indent=indent) + "\n"


def from_json(text: str, file: str = "<input>") -> Module:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise DiagnosticError([Diagnostic("E0020", f"invalid JSON: {error.msg}", error.lineno,
                                          error.colno, file, "the input must be a KIR JSON document")],
                              text) from None
    if not isinstance(document, dict) or document.get("kir_json") != FORMAT_VERSION:
        raise DiagnosticError([Diagnostic("E0021", "not a KIR JSON document (version 1)", 1, 1, file,
                                          'expected {"kir_json": 1, "module": {...}}; see `intentc schema`')],
                              text)
    try:
        return Module.model_validate(document.get("module"))
    except ValidationError as error:
        diagnostics = [
            Diagnostic("E0022", f"{_path(e['loc'])}: {e['msg']}", 1, 1, file,
                       "see `intentc schema` for the expected shape")
            for e in error.errors()[:20]
        ]
        raise DiagnosticError(diagnostics, text) from None


def _path(location) -> str:
    return "module" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in location)


def json_schema() -> str:
    schema = Module.model_json_schema()
    schema["title"] = "KIR module (inside {\"kir_json\": 1, \"module\": ...})"
    return json.dumps(schema, indent=2) + "\n"
