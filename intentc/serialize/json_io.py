"""KIR ↔ JSON. The JSON is the pydantic model dump: every node with its `loc` and comments.

The output is strict JSON: a non-finite float attribute is written `{"float": "inf"}`
(`"-inf"`, `"nan"`). For documents written before that, bare `NaN` / `Infinity` are still
read. Input is held to the text format's limits: numbers within f64's range (E0017) and
nesting within `JSON_MAX_NESTING` (E0018), checked before anything recurses over it.
"""
from __future__ import annotations

import json

from pydantic import ValidationError

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.nodes import Module
from ..parse.brackets import MAX_NESTING, line_col, too_deep
from ..parse.literals import OUT_OF_RANGE_HINT, float_value, int_value, out_of_range_message

# Each nested region is four JSON levels (op, its region list, the region, its op list), and
# the innermost op adds a few (its types, their shapes): five a level holds every module the
# text format allows.
JSON_MAX_NESTING = 5 * MAX_NESTING

FORMAT_VERSION = 1


def to_json(module: Module, indent: int | None = 2) -> str:
    body = module.model_dump(mode="json")
    return json.dumps({"kir_json": FORMAT_VERSION, "module": body}, indent=indent) + "\n"


def from_json(text: str, file: str = "<input>") -> Module:
    _check_nesting(text, file)
    try:
        document = json.loads(text, parse_float=_finite_float, parse_int=_int_in_range)
    except json.JSONDecodeError as error:
        raise DiagnosticError([Diagnostic("E0020", f"invalid JSON: {error.msg}", error.lineno,
                                          error.colno, file, "the input must be a KIR JSON document")],
                              text) from None
    except _OutOfRange as error:
        raise DiagnosticError([Diagnostic("E0017", out_of_range_message(error.text), 1, 1, file,
                                          OUT_OF_RANGE_HINT)], text) from None
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


class _OutOfRange(ValueError):
    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


def _finite_float(text: str) -> float:
    value = float_value(text)
    if value is None:
        raise _OutOfRange(text)
    return value


def _int_in_range(text: str) -> int:
    value = int_value(text)
    if value is None:
        raise _OutOfRange(text)
    return value


def _check_nesting(text: str, file: str) -> None:
    opener = too_deep(text, JSON_MAX_NESTING)
    if opener is not None:
        line, col = line_col(text, opener.offset)
        raise DiagnosticError([Diagnostic(
            "E0018", f"the JSON document nests more than {JSON_MAX_NESTING} deep", line, col, file,
            f"KIR text nests at most {MAX_NESTING} brackets deep, and JSON takes about five levels for each")], text)


def _path(location) -> str:
    return "module" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in location)


def json_schema() -> str:
    schema = Module.model_json_schema()
    schema["title"] = "KIR module (inside {\"kir_json\": 1, \"module\": ...})"
    return json.dumps(schema, indent=2) + "\n"
