"""The sealed record every store keeps: a header with the sha256 of the payload, then the payload.

Each read checks the digest, so a torn write, a flipped bit on disk or a foreign value in
Redis is detected instead of served.
"""
from __future__ import annotations

import hashlib

MAGIC = b"intentc-record-1 "
_HEADER_LENGTH = len(MAGIC) + 64 + 1


class IntegrityError(Exception):
    """A stored record does not match its own digest."""


def seal(payload: bytes) -> bytes:
    return MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def unseal(record: bytes) -> bytes:
    header, payload = record[:_HEADER_LENGTH], record[_HEADER_LENGTH:]
    if not header.startswith(MAGIC) or not header.endswith(b"\n"):
        raise IntegrityError("not a sealed record")
    if hashlib.sha256(payload).hexdigest().encode() != header[len(MAGIC):-1]:
        raise IntegrityError("payload does not match its sha256")
    return payload
