"""Optional bearer tokens: one for compiling (which also reads), one for reading artifacts.

A token that is not configured is not required. /healthz, /readyz and /metrics are open.
"""
from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .errors import ServiceError
from .settings import ServiceSettings

bearer = HTTPBearer(auto_error=False, description="INTENTC_COMPILE_TOKEN or INTENTC_READ_TOKEN, when set")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def may_compile(settings: ServiceSettings, offered: str | None) -> bool:
    return _accepts([settings.compile_token], settings.compile_token is not None, offered)


def may_read(settings: ServiceSettings, offered: str | None) -> bool:
    return _accepts([settings.read_token, settings.compile_token], settings.read_token is not None, offered)


def require_compile(request: Request, credentials: Credentials) -> None:
    _require(may_compile(request.app.state.settings, credentials and credentials.credentials))


def require_read(request: Request, credentials: Credentials) -> None:
    _require(may_read(request.app.state.settings, credentials and credentials.credentials))


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer TOKEN` header value."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _accepts(tokens: list[str | None], required: bool, offered: str | None) -> bool:
    if not required:
        return True
    presented = (offered or "").encode()
    return any(token is not None and hmac.compare_digest(presented, token.encode()) for token in tokens)


def _require(allowed: bool) -> None:
    if not allowed:
        raise ServiceError(401, "unauthorized", "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})
