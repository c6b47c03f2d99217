"""The one error type the routes turn into a JSON `ErrorBody` (and, when 4xx/503, a rejection count)."""
from __future__ import annotations


class ServiceError(Exception):
    def __init__(self, http_status: int, error: str, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.http_status, self.error, self.detail = http_status, error, detail
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": self.error, "detail": self.detail}
