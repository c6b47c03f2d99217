"""Crash reproducers: the IR a pass failed on plus the pipeline from that pass on, in one
KIR file that `intentc opt --run-reproducer FILE` replays.

The file is ordinary KIR whose first line is a comment holding the run's configuration as
JSON (the idea of MLIR's `mlir_reproducer` resource), followed by comment lines with the
failure and the module in canonical form:

    // intentc-reproducer: {"pipeline": "cse,dce", "numerics": "source", ...}
    // failure: pass `cse` raised KeyError: 'x'
    kernel @k(...) { ... }
"""
from __future__ import annotations

import datetime
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..ir.nodes import Module
from ..options import CompileOptions, Specialization
from ..printer import print_module
from .base import PassContext

MARKER = "// intentc-reproducer: "


@dataclass
class Reproducer:
    pipeline: str
    context: PassContext
    verify_each: bool
    source: str


def write_reproducer(module: Module, pipeline: str, ctx: PassContext, verify_each: bool, reason: str,
                     path: str | None = None) -> Path:
    config = {"pipeline": pipeline, "verify_each": verify_each,
              "options": ctx.options.model_dump(mode="json"),
              "specialization": ctx.specialization.model_dump(mode="json")}
    failure = ["// " + line for line in f"failure: {reason}".splitlines()]
    text = "\n".join([MARKER + json.dumps(config, sort_keys=True), *failure, "", print_module(module)])
    if path is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        target = Path(tempfile.mkdtemp(prefix=f"intentc-pass-crash-{stamp}-")) / "reproducer.kir"
    else:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def read_reproducer(text: str) -> Reproducer:
    """The configuration and KIR of a reproducer file; ValueError when it is not one."""
    first = text.split("\n", 1)[0]
    if not first.startswith(MARKER):
        raise ValueError(f"not an intentc reproducer: the first line must start with `{MARKER.strip()}`")
    try:
        config = json.loads(first[len(MARKER):])
        ctx = PassContext(CompileOptions.model_validate(config.get("options", {})),
                          Specialization.model_validate(config.get("specialization", {})))
        return Reproducer(str(config["pipeline"]), ctx, bool(config.get("verify_each", True)), text)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise ValueError(f"malformed reproducer header: {error}") from None
