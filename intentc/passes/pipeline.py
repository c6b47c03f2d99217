"""Pipeline strings (MLIR style): `canonicalize,cse,online-reduction{segment=64}`.

Grammar: `pipeline := entry (',' entry)*`, `entry := NAME ('{' option (sep option)* '}')?`,
`option := KEY '=' VALUE`, where `sep` is a space or a comma. Option keys are the pass's
dataclass fields with `_` written as `-`. Mistakes are diagnostics located in the pipeline
string (file `<pipeline>`, line 1, the column of the mistake):

- E0070 unknown pass name
- E0071 malformed pipeline text (a missing name, brace or `=`)
- E0072 unknown option of a pass
- E0073 an option value of the wrong type
- E0074 an option given twice
"""
from __future__ import annotations

import re
import typing
from typing import Literal

from ..diagnostics import Diagnostic, DiagnosticError
from .base import Pass, lookup_pass, pass_names

PIPELINE_FILE = "<pipeline>"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_VALUE = re.compile(r"[^\s,{}=]+")


class PipelineError(DiagnosticError):
    """A pipeline string that does not parse: a usage error (exit 2 on the CLI)."""


def parse_pipeline(text: str) -> list[Pass]:
    """The passes of a pipeline string, each built with its options; raises PipelineError."""
    return _Reader(text).pipeline()


def print_pipeline(passes: list[Pass]) -> str:
    """The canonical text of a pipeline: every option spelled out, MLIR style."""
    return ",".join(_entry_text(p) for p in passes)


def _entry_text(instance: Pass) -> str:
    options = [f"{_key(f.name)}={_value_text(getattr(instance, f.name))}" for f in instance.options()]
    return instance.name + ("{" + " ".join(options) + "}" if options else "")


def _key(field_name: str) -> str:
    return field_name.replace("_", "-")


def _value_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Reader:
    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def fail(self, code: str, message: str, at: int | None = None, hint: str = "") -> PipelineError:
        col = (self.pos if at is None else at) + 1
        return PipelineError([Diagnostic(code, message, 1, col, PIPELINE_FILE, hint)], self.text)

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_spaces()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def match(self, pattern: re.Pattern, what: str) -> tuple[str, int]:
        self.skip_spaces()
        found = pattern.match(self.text, self.pos)
        if not found:
            shown = f"`{self.text[self.pos]}`" if self.pos < len(self.text) else "end of pipeline"
            raise self.fail("E0071", f"expected {what}, found {shown}")
        start, self.pos = self.pos, found.end()
        return found.group(), start

    def pipeline(self) -> list[Pass]:
        passes: list[Pass] = []
        if not self.text.strip():
            return passes
        while True:
            passes.append(self.entry())
            char = self.peek()
            if not char:
                return passes
            if char != ",":
                raise self.fail("E0071", f"expected `,` between passes, found `{char}`")
            self.pos += 1

    def entry(self) -> Pass:
        name, start = self.match(_NAME, "a pass name")
        cls = lookup_pass(name)
        if cls is None:
            raise self.fail("E0070", f"unknown pass `{name}`", start, "passes: " + ", ".join(pass_names()))
        values: dict[str, object] = {}
        if self.peek() == "{":
            self.pos += 1
            self.options(cls, values)
        try:
            return cls(**values)
        except ValueError as error:
            raise self.fail("E0073", f"bad options for `{name}`: {error}", start) from None

    def options(self, cls: type[Pass], values: dict[str, object]) -> None:
        types = cls.option_types()
        while True:
            char = self.peek()
            if char == "}":
                self.pos += 1
                return
            if char == ",":
                self.pos += 1
                continue
            key, start = self.match(_NAME, "an option `key=value` or `}`")
            field_name = key.replace("-", "_")
            if field_name not in types:
                known = ", ".join(_key(n) for n in types) or "none"
                raise self.fail("E0072", f"pass `{cls.name}` has no option `{key}`", start, f"options: {known}")
            if field_name in values:
                raise self.fail("E0074", f"option `{key}` of `{cls.name}` is given twice", start)
            if self.peek() != "=":
                raise self.fail("E0071", f"expected `=` after option `{key}`")
            self.pos += 1
            raw, value_start = self.match(_VALUE, f"a value for option `{key}`")
            values[field_name] = self.convert(cls, key, types[field_name], raw, value_start)

    def convert(self, cls: type[Pass], key: str, type_, raw: str, at: int):
        converted = _convert(type_, raw)
        if converted is _BAD:
            raise self.fail("E0073", f"option `{key}` of `{cls.name}` must be {_describe(type_)}, got `{raw}`", at)
        return converted


_BAD = object()


def _convert(type_, raw: str):
    if type_ is bool:
        return {"true": True, "false": False, "1": True, "0": False}.get(raw, _BAD)
    if type_ is int:
        return int(raw) if re.fullmatch(r"-?\d+", raw) else _BAD
    if typing.get_origin(type_) is Literal:
        return raw if raw in typing.get_args(type_) else _BAD
    return raw


def _describe(type_) -> str:
    if type_ is bool:
        return "`true` or `false`"
    if type_ is int:
        return "an integer"
    if typing.get_origin(type_) is Literal:
        return "one of " + ", ".join(f"`{v}`" for v in typing.get_args(type_))
    return "a string"
