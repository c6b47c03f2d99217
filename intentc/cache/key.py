"""The cache key: sha256 over a canonical JSON of everything a compile's output depends on.

What goes in (design brief §5) and nothing else: the module as canonical KIR text without
comments (so whitespace and comment edits hit the same key), the kernel name, target and
arch, the compile options, the specialization values, and the toolchain (intentc's version,
a hash of intentc's own source files, and the target's toolchain facts such as the LLVM
version or the ptxas hash). `KEY_SCHEMA_VERSION` is part of every key; bump it whenever
`KeyInputs` (or a model inside it) changes shape: tests/service/test_key.py fails until you do.

A *request digest* is the same hash over the raw, un-canonicalised text: the service keeps
`request digest → key` aliases so that a repeated request finds its key without parsing.
"""
from __future__ import annotations

import functools
import hashlib
import json
import types
import typing
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..options import CompileOptions, Specialization
from ..version import __version__

KEY_SCHEMA_VERSION = 6

SourceForm = Literal["canonical", "raw"]


class Toolchain(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    intentc_version: str
    intentc_source_sha256: str
    target_facts: dict[str, str]


class KeyInputs(BaseModel):
    """Everything the output of one compile depends on."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    key_schema: int = KEY_SCHEMA_VERSION
    source_form: SourceForm
    kir: str
    kernel: str
    target: str
    arch: str | None
    options: CompileOptions
    specialization: Specialization
    toolchain: Toolchain


def compute_key(inputs: KeyInputs) -> str:
    return hashlib.sha256(canonical_json(inputs)).hexdigest()


def canonical_json(inputs: KeyInputs) -> bytes:
    """Sorted keys, no insignificant whitespace, sets (the fact tuples) sorted, UTF-8."""
    document = inputs.model_dump(mode="json")
    spec = document["specialization"]
    for name, value in spec.items():
        if isinstance(value, list):  # the per-parameter facts are sets of parameter names
            spec[name] = sorted(set(value))
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def key_text(canonical_kir: str) -> str:
    """Canonical KIR without its comments: the printer writes every comment on a line of its own
    (some after a blank line, which goes with them: blank lines count once, none at the ends)."""
    kept = [line for line in canonical_kir.split("\n") if not line.lstrip().startswith("//")]
    lines = [line for index, line in enumerate(kept) if line or (index > 0 and kept[index - 1])]
    return "\n".join(lines).strip("\n") + "\n"


def toolchain(target: str) -> Toolchain:
    """The toolchain part of the key: a registered target's facts are asked once per process."""
    from ..driver import TARGETS
    if target in TARGETS:
        return _registered_toolchain(target)
    return _toolchain({})


@functools.cache
def _registered_toolchain(target: str) -> Toolchain:
    from ..driver import TARGETS
    return _toolchain(dict(TARGETS[target].toolchain()))


def _toolchain(target_facts: dict[str, str]) -> Toolchain:
    return Toolchain(intentc_version=__version__, intentc_source_sha256=intentc_source_sha256(),
                     target_facts=target_facts)


@functools.cache
def intentc_source_sha256() -> str:
    """sha256 over intentc's own sources (path and bytes of every .py and .lark file)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(p for p in package.rglob("*") if p.suffix in (".py", ".lark") and p.is_file()):
        relative = path.relative_to(package).as_posix().encode()
        digest.update(len(relative).to_bytes(4, "big") + relative)
        content = path.read_bytes()
        digest.update(len(content).to_bytes(8, "big") + content)
    return digest.hexdigest()


def schema_fingerprint() -> str:
    """A hash of the key's input shape (field names and types, nested models included): it
    changes when a field is added, removed, renamed or retyped, and not for docs or defaults."""
    shape = json.dumps(_shape(KeyInputs), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(shape.encode()).hexdigest()


def _shape(annotation):
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {name: _shape(field.annotation) for name, field in annotation.model_fields.items()}
    origin = typing.get_origin(annotation)
    if origin is types.UnionType:  # `X | Y` is the same shape as `Union[X, Y]`: a spelling, not a change
        origin = typing.Union
    if origin is None:
        return getattr(annotation, "__name__", repr(annotation))
    arguments = typing.get_args(annotation)
    if origin is typing.Literal:
        return ["Literal", *sorted(map(repr, arguments))]
    return [getattr(origin, "__name__", repr(origin)), *(_shape(a) for a in arguments)]
