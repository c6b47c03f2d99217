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


class UnreadableEntry(ValueError):
    """A record passed its seal but its payload is not an entry (a writer's bug, or an old format)."""


def load(payload: bytes) -> dict:
    try:
        entry = json.loads(payload)
    except ValueError as error:  # not UTF-8, or not JSON
        raise UnreadableEntry(f"the payload is not JSON ({error})") from None
    if not (isinstance(entry, dict) and entry.get("kind") in (ARTIFACTS, DIAGNOSTICS)
            and isinstance(entry.get("artifacts"), dict) and isinstance(entry.get("diagnostics"), list)
            and isinstance(entry.get("compile_timings"), dict)
            and all(_is_artifact(a) for a in entry["artifacts"].values())):
        raise UnreadableEntry("the payload is JSON but not a cache entry")
    return entry


def _is_artifact(artifact) -> bool:
    return (isinstance(artifact, dict) and artifact.get("encoding") in ("utf-8", "base64")
            and isinstance(artifact.get("data"), str))
