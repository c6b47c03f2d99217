"""The HTTP request and response bodies (they are the OpenAPI schema at /docs)."""
from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from intentc.options import CompileOptions, Specialization
from intentc.parse.brackets import line_col

CacheStatus = Literal["hit", "miss", "coalesced"]
MAX_NAME = 256
MAX_SPECIALIZATION_ENTRIES = 256


def unicode_text(text: str) -> str:
    """Refuse a lone surrogate (JSON allows `\\ud800`; it is no character, and no UTF-8 encodes
    it): the message says where, as line and column of the text."""
    at = lone_surrogate(text)
    if at is not None:
        line, col = line_col(text, at)
        raise ValueError(f"line {line}, col {col}: {_surrogate_message(text[at])}")
    return text


def lone_surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in `text`, or None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def _surrogate_message(character: str) -> str:
    return f"lone surrogate U+{ord(character):04X} (text must be Unicode characters, encodable as UTF-8)"


UnicodeText = Annotated[str, AfterValidator(unicode_text)]


class CompileRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: UnicodeText = Field(description="the KIR module as text")
    kernel: UnicodeText = Field(min_length=1, max_length=MAX_NAME, description="the kernel to compile, without @")
    target: UnicodeText = Field(min_length=1, max_length=MAX_NAME,
                                description="a registered target (GET /v1/targets)")
    arch: UnicodeText | None = Field(default=None, max_length=MAX_NAME)
    options: CompileOptions = Field(default_factory=CompileOptions)
    specialization: Specialization = Field(default_factory=Specialization)

    @model_validator(mode="after")
    def _bounded(self):
        spec = self.specialization
        collections = [value for value in (getattr(spec, name) for name in type(spec).model_fields)
                       if isinstance(value, (dict, tuple, list))]
        if max((len(c) for c in collections), default=0) > MAX_SPECIALIZATION_ENTRIES:
            raise ValueError(f"at most {MAX_SPECIALIZATION_ENTRIES} entries per specialization field")
        names = [name for c in collections for name in c if isinstance(name, str)]   # not `variant`'s bounds
        values = [v for v in spec.constexprs.values() if isinstance(v, str)]
        if self.options.pipeline is not None:
            values.append(self.options.pipeline)
        if any(len(text) > MAX_NAME for text in names) or any(len(text) > 4096 for text in values):
            raise ValueError("specialization names are at most 256 characters, string values 4096")
        for text in (*names, *values):
            at = lone_surrogate(text)
            if at is not None:
                raise ValueError(f"specialization {text.encode('utf-8', 'backslashreplace').decode()!r}: "
                                 + _surrogate_message(text[at]))
        if any(isinstance(v, float) and not math.isfinite(v) for v in spec.constexprs.values()):
            raise ValueError("constexpr values must be finite")
        return self


class Artifact(BaseModel):
    encoding: Literal["utf-8", "base64"]
    data: str


class Diagnostic(BaseModel):
    code: str
    message: str
    file: str
    line: int
    col: int
    hint: str = ""
    severity: str = "error"


class CompileResponse(BaseModel):
    key: str = Field(description="the cache key (sha256 hex); GET /v1/artifacts/{key} serves this entry")
    status: CacheStatus
    artifacts: dict[str, Artifact] = Field(description="artifact name → content; empty when diagnostics")
    diagnostics: list[Diagnostic] = Field(description="the CLI's diagnostics; non-empty with HTTP 422")
    timings: dict[str, float] = Field(description="this request's stages, seconds")
    compile_timings: dict[str, float] = Field(description="the stages of the compile that made the entry")


class ErrorBody(BaseModel):
    error: str = Field(description="too_large, limit, overloaded, timeout, internal, unauthorized, not_found, "
                                   "method_not_allowed")
    detail: str


class Problem(BaseModel):
    loc: list[str | int] = Field(description="where: `body`, `path`, `query` or `header`, then field names")
    msg: str
    type: str


class InvalidRequest(BaseModel):
    """422: the request does not match the schema (or its body is not UTF-8 JSON)."""
    error: Literal["invalid"]
    detail: str
    problems: list[Problem]


class Readiness(BaseModel):
    ready: bool
    workers: int = Field(description="compile workers alive")
    redis: bool | None = Field(description="null without Redis; false while it is unreachable (still ready)")


class TargetInfo(BaseModel):
    name: str
    summary: str
    archs: list[str]
