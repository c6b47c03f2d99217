"""Service settings: defaults, then `INTENTC_*` environment variables, then `intentc serve` flags."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "intentc" / "service"


@dataclass(frozen=True)
class ServiceSettings:
    cache_dir: Path = field(default_factory=_default_cache_dir)
    cache_max_bytes: int = 1 << 30
    redis_url: str | None = None
    # Compile worker processes (each compiles one request at a time).
    workers: int = max(1, os.cpu_count() or 1)
    # Requests allowed to wait for a free worker; one more gets 503 + Retry-After.
    max_queue: int = 64
    compile_timeout_s: float = 60.0
    retry_after_s: int = 1
    max_body_bytes: int = 4 << 20
    max_source_chars: int = 1 << 20
    max_nesting: int = 64
    read_token: str | None = None
    compile_token: str | None = None
    # Shared by the replicas: records are then signed (HMAC-SHA256) and unsigned ones refused.
    # At least 16 bytes; environment only, like the tokens and the Redis password.
    cache_signing_key: str | None = None
    redis_password: str | None = None
    # Modules imported by the server and every worker (extra targets register themselves).
    plugins: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides) -> ServiceSettings:
        environ = os.environ if environ is None else environ
        values = {}
        for item in fields(cls):
            raw = environ.get("INTENTC_" + item.name.upper())
            if raw:
                values[item.name] = _convert(item.name, raw)
        values.update({name: value for name, value in overrides.items() if value is not None})
        return replace(cls(), **values)


def _convert(name: str, raw: str):
    default = getattr(ServiceSettings(), name)
    if name == "plugins":
        return tuple(part for part in raw.split(",") if part)
    if name == "cache_dir":
        return Path(raw)
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes")
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    return raw
