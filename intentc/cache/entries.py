"""Cache entries: what a compile produced (artifacts, or its diagnostics), stored as JSON.
The compile service and `intentc.load` store the same entries under the same keys."""
from __future__ import annotations

import base64
import json

ARTIFACTS, DIAGNOSTICS = "artifacts", "diagnostics"


def artifacts_entry(artifacts: dict[str, str | bytes], timings: dict[str, float]) -> dict:
    return {"kind": ARTIFACTS, "artifacts": {name: encode_artifact(v) for name, v in artifacts.items()},
            "diagnostics": [], "compile_timings": timings}


def diagnostics_entry(diagnostics: list[dict]) -> dict:
    return {"kind": DIAGNOSTICS, "artifacts": {}, "diagnostics": diagnostics, "compile_timings": {}}


def encode_artifact(value: str | bytes) -> dict:
    if isinstance(value, bytes):
        return {"encoding": "base64", "data": base64.b64encode(value).decode("ascii")}
    return {"encoding": "utf-8", "data": value}


def decode_artifact(artifact: dict) -> bytes:
    if artifact["encoding"] == "base64":
        return base64.b64decode(artifact["data"])
    return artifact["data"].encode("utf-8")


def dump(entry: dict) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode("utf-8")


def load(payload: bytes) -> dict:
    return json.loads(payload)
