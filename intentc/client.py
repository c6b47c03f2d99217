"""A Python client for the compile service (needs httpx: the `server` extra).

    with Client("http://build-cache:8080", token=...) as client:
        reply = client.compile(text, kernel="row_softmax", target="llvm")
        reply.artifacts["kernel.ll"]

Overload (429/503) and lost connections are retried with exponential back-off and jitter;
a `Retry-After` from the server is honoured. Diagnostics raise `CompileFailed`; any other
refusal raises `RemoteError` with the server's `error` and `detail`.
"""
from __future__ import annotations

import base64
import json
import random
import time
from dataclasses import dataclass, field

from .diagnostics import Diagnostic, DiagnosticError
from .options import CompileOptions, Specialization

RETRY_STATUSES = frozenset({429, 502, 503})
MAX_RETRY_AFTER_S = 60.0


class RemoteError(Exception):
    def __init__(self, status: int, error: str, detail: str):
        super().__init__(f"HTTP {status} {error}: {detail}")
        self.status, self.error, self.detail = status, error, detail


class CompileFailed(DiagnosticError):
    """The server's diagnostics for the input (HTTP 422), as the CLI would print them."""

    def __init__(self, key: str, diagnostics: list[Diagnostic], source: str | None):
        super().__init__(diagnostics, source)
        self.key = key


@dataclass
class CompileReply:
    key: str
    status: str  # hit, miss or coalesced
    artifacts: dict[str, str | bytes]
    timings: dict[str, float] = field(default_factory=dict)
    compile_timings: dict[str, float] = field(default_factory=dict)


class Client:
    def __init__(self, server: str, token: str | None = None, retries: int = 5, backoff_s: float = 0.2,
                 max_backoff_s: float = 10.0, timeout_s: float = 300.0, transport=None):
        import httpx

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=timeout_s,
                                  transport=transport)
        self._transport_errors = (httpx.TransportError,)
        self.retries, self.backoff_s, self.max_backoff_s = retries, backoff_s, max_backoff_s

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def compile(self, source: str, kernel: str, target: str, arch: str | None = None,
                options: CompileOptions | dict | None = None, specialization: Specialization | dict | None = None,
                file: str = "<input>") -> CompileReply:
        body = {"source": source, "kernel": kernel, "target": target, "arch": arch,
                "options": _as_dict(options), "specialization": _as_dict(specialization)}
        # ASCII JSON: text that is no Unicode (a lone surrogate) reaches the server, which says where.
        content = json.dumps(body, separators=(",", ":")).encode("ascii")
        response = self._request("POST", "/v1/compile", content=content, headers={"Content-Type": "application/json"})
        return self._reply(response, source, file)

    def entry(self, key: str) -> CompileReply:
        return self._reply(self._request("GET", f"/v1/artifacts/{key}"), None, "<input>")

    def has(self, key: str) -> bool:
        response = self._request("HEAD", f"/v1/artifacts/{key}", accept=(404,))
        return response.status_code == 200

    def targets(self) -> list[dict]:
        return self._request("GET", "/v1/targets").json()

    def _reply(self, response, source: str | None, file: str) -> CompileReply:
        body = response.json()
        if body["diagnostics"]:
            diagnostics = [Diagnostic(**{**d, "file": file if d["file"] == "<input>" else d["file"]})
                           for d in body["diagnostics"]]
            raise CompileFailed(body["key"], diagnostics, source)
        artifacts = {name: _decode(a) for name, a in body["artifacts"].items()}
        return CompileReply(body["key"], body["status"], artifacts, body["timings"], body["compile_timings"])

    def _request(self, method: str, path: str, accept: tuple[int, ...] = (), **kwargs):
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._http.request(method, path, **kwargs)
            except self._transport_errors:
                if last:
                    raise
                time.sleep(self._backoff(attempt))
                continue
            if response.status_code in RETRY_STATUSES and not last:
                time.sleep(_retry_after(response) or self._backoff(attempt))
                continue
            if response.is_success or response.status_code in accept or _has_diagnostics(response):
                return response
            raise _remote_error(response)
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int) -> float:
        """Exponential back-off with full jitter."""
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** attempt))


def _as_dict(model) -> dict:
    if model is None:
        return {}
    return model.model_dump(mode="json") if hasattr(model, "model_dump") else dict(model)


def _decode(artifact: dict) -> str | bytes:
    return base64.b64decode(artifact["data"]) if artifact["encoding"] == "base64" else artifact["data"]


def _retry_after(response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return min(MAX_RETRY_AFTER_S, max(0.0, float(value))) if value else None
    except ValueError:
        return None  # an HTTP date: fall back to our own back-off


def _has_diagnostics(response) -> bool:
    if response.status_code != 422:
        return False
    try:
        return bool(response.json().get("diagnostics"))
    except ValueError:
        return False


def _remote_error(response) -> RemoteError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    detail = str(body.get("detail", response.text[:200]))
    problems = body.get("problems") if isinstance(body.get("problems"), list) else []
    if problems:  # the `invalid` answer: which fields, and why
        detail += ": " + "; ".join(f"{'.'.join(map(str, p.get('loc', [])))}: {p.get('msg', '')}" for p in problems)
    return RemoteError(response.status_code, str(body.get("error", "http_error")), detail)
