"""The sealed record every store keeps: a header that binds the payload to its name, then the payload.

    intentc-record-2 <scheme> <tag hex>\\n<payload>

The tag covers the record's name (`entry:<key>` or `alias:<digest>`) and the payload, so a
torn write, a flipped bit, a foreign value in Redis *and a valid record copied to another
name* all fail the check instead of being served. Two schemes:

- `sha256`: a plain digest; anyone who can write the store can forge it (integrity only);
- `hmac-sha256`: keyed with the signing key the replicas share; a store writer without the
  key cannot make a record that passes.

A `RecordSeal` with a signing key writes and accepts only `hmac-sha256` records; one without
a key writes `sha256` records and refuses signed ones (it cannot check them).
"""
from __future__ import annotations

import hashlib
import hmac

MAGIC = b"intentc-record-2 "
PLAIN, SIGNED = b"sha256", b"hmac-sha256"
_TAG_HEX_LENGTH = 64


class IntegrityError(Exception):
    """A stored record does not match its name and payload (or is not signed as required)."""


class RecordSeal:
    def __init__(self, signing_key: bytes | None = None):
        if signing_key is not None and len(signing_key) < 16:
            raise ValueError("the cache signing key must have at least 16 bytes")
        self._key = signing_key

    @property
    def signed(self) -> bool:
        return self._key is not None

    def seal(self, name: str, payload: bytes) -> bytes:
        scheme = SIGNED if self.signed else PLAIN
        return MAGIC + scheme + b" " + self._tag(scheme, name, payload) + b"\n" + payload

    def unseal(self, name: str, record: bytes) -> bytes:
        header, newline, payload = record.partition(b"\n")
        if not newline or not header.startswith(MAGIC):
            raise IntegrityError("not a sealed record")
        scheme, _, tag = header[len(MAGIC):].partition(b" ")
        expected = SIGNED if self.signed else PLAIN
        if scheme != expected:
            raise IntegrityError(f"a {scheme.decode('ascii', 'replace')!r} record where this store needs "
                                 f"{expected.decode()!r}")
        if len(tag) != _TAG_HEX_LENGTH or not hmac.compare_digest(tag, self._tag(scheme, name, payload)):
            raise IntegrityError(f"the record does not match its name {name} and payload")
        return payload

    def _tag(self, scheme: bytes, name: str, payload: bytes) -> bytes:
        # The name is ASCII (a namespace and a hex digest) and ends at the first newline.
        message = name.encode("ascii") + b"\n" + payload
        if scheme == SIGNED:
            return hmac.new(self._key, message, hashlib.sha256).hexdigest().encode("ascii")
        return hashlib.sha256(message).hexdigest().encode("ascii")


def record_name(namespace: str, digest: str) -> str:
    """The name a record is bound to: the same on disk and in Redis."""
    return f"{namespace}:{digest}"
