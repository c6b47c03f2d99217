"""ASGI middleware: refuse bodies over the size limit (413) and count every request.

A declared `Content-Length` over the limit is refused before reading; a chunked body is
read here up to the limit and handed on whole.
"""
from __future__ import annotations

import json

from .hot_path import replay_body
from .metrics import ServiceMetrics

ROUTES = ("/v1/compile", "/v1/artifacts", "/v1/targets", "/healthz", "/readyz", "/metrics", "/docs", "/openapi.json")


class BodyLimit:
    def __init__(self, app, max_bytes: int, metrics: ServiceMetrics):
        self.app, self.max_bytes, self.metrics = app, max_bytes, metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        status = 500

        async def counting_send(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            declared = _declared_length(scope)
            if declared is None and scope["method"] in ("POST", "PUT", "PATCH"):
                body = await self._read_chunked(receive)
                receive = replay_body(body, receive) if body is not None else receive
                declared = self.max_bytes + 1 if body is None else len(body)
            if declared is not None and declared > self.max_bytes:
                status = 413
                self.metrics.rejections.labels("too_large").inc()
                await _send_json(send, 413, {"error": "too_large",
                                             "detail": f"the body limit is {self.max_bytes} bytes"})
                return
            await self.app(scope, receive, counting_send)
        finally:
            self.metrics.requests.labels(_route(scope["path"]), str(status)).inc()

    async def _read_chunked(self, receive) -> bytes | None:
        """The whole body, or None once it passes the limit."""
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(parts)
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                return None
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(parts)


def _declared_length(scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _route(path: str) -> str:
    return next((route for route in ROUTES if path.startswith(route)), "other")


async def _send_json(send, status: int, body: dict) -> None:
    content = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": content})
