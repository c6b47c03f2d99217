"""Cache entries (what a compile produced, stored as JSON) and the response bodies built from them."""
from __future__ import annotations

from intentc.cache.entries import (  # noqa: F401  (the service's entry helpers are the cache's)
    ARTIFACTS, DIAGNOSTICS, UnreadableEntry, artifacts_entry, decode_artifact, diagnostics_entry, dump,
    encode_artifact, load)


def http_status(entry: dict) -> int:
    return 422 if entry["kind"] == DIAGNOSTICS else 200


def response_body(key: str, status: str, entry: dict, timings: dict[str, float]) -> bytes:
    return dump({"key": key, "status": status, "artifacts": entry["artifacts"], "diagnostics": entry["diagnostics"],
                 "timings": timings, "compile_timings": entry["compile_timings"]})
