"""The shared store: one Redis server for every replica, the same sealed records as on disk.

Redis being down is not an error for the service: a failed operation raises
`SharedStoreUnavailable` and marks the server down for `retry_after_s`, during which calls raise at
once (so an outage costs no timeout per request). The tiered store falls back to the local
store and counts each fallback.
Cross-replica single-flight is a lock per key (`SET NX PX`): best effort, it only saves work.
The URL may be `rediss://` (TLS; `?ssl_ca_certs=...` and the other `ssl_*` options pass through)
and may carry a password; logs and errors show it without the password.
"""
from __future__ import annotations

import logging
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as redis
from redis.exceptions import RedisError

from .events import SharedStoreUnavailable, StoreEvents
from .names import check_name
from .record import IntegrityError, RecordSeal, record_name

log = logging.getLogger("intentc.cache")
TIER = "redis"
PREFIX = "intentc:"


class RedisStore:
    def __init__(self, url: str, events: StoreEvents | None = None, timeout_s: float = 0.5,
                 retry_after_s: float = 1.0, sealer: RecordSeal | None = None, password: str | None = None):
        self.url = without_password(url)
        self.events = events or StoreEvents()
        self.sealer = sealer or RecordSeal()
        self.retry_after_s = retry_after_s
        credentials = {"password": password} if password else {}
        self._client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                                            **credentials)
        self._down_until = 0.0
        self._owner = uuid.uuid4().hex

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def ping(self) -> bool:
        try:
            await self._call(self._client.ping)
            return True
        except SharedStoreUnavailable:
            return False

    async def get(self, namespace: str, digest: str) -> bytes | None:
        check_name(namespace, digest)
        name = record_name(namespace, digest)
        record = await self._call(self._client.get, PREFIX + name)
        if record is None:
            self.events.lookup(TIER, namespace, False)
            return None
        try:
            payload = self.sealer.unseal(name, record)
        except IntegrityError as error:
            log.warning("redis record %s failed its integrity check (%s); dropped", name, error)
            self.events.integrity_failure(TIER)
            self.events.lookup(TIER, namespace, False)
            await self.delete(namespace, digest)
            return None
        self.events.lookup(TIER, namespace, True)
        return payload

    async def put(self, namespace: str, digest: str, payload: bytes) -> None:
        check_name(namespace, digest)
        name = record_name(namespace, digest)
        await self._call(self._client.set, PREFIX + name, self.sealer.seal(name, payload))

    async def delete(self, namespace: str, digest: str) -> None:
        check_name(namespace, digest)
        await self._call(self._client.delete, PREFIX + record_name(namespace, digest))

    async def claim(self, digest: str, ttl_s: float) -> bool:
        """Take the compile lock for a key; False when another replica holds it."""
        taken = await self._call(self._client.set, PREFIX + f"lock:{digest}", self._owner, nx=True,
                                 px=max(1, int(ttl_s * 1000)))
        return bool(taken)

    async def is_claimed(self, digest: str) -> bool:
        return bool(await self._call(self._client.exists, PREFIX + f"lock:{digest}"))

    async def release(self, digest: str) -> None:
        name = PREFIX + f"lock:{digest}"
        if await self._call(self._client.get, name) == self._owner.encode():
            await self._call(self._client.delete, name)

    async def close(self) -> None:
        await self._client.aclose()

    async def _call(self, method, *args, **kwargs):
        if not self.available:
            raise SharedStoreUnavailable(self.url)
        try:
            return await method(*args, **kwargs)
        except (RedisError, OSError) as error:
            if self.available:
                log.warning("redis at %s unreachable (%s); serving from the local store for %.1fs",
                            self.url, error, self.retry_after_s)
            self._down_until = time.monotonic() + self.retry_after_s
            raise SharedStoreUnavailable(self.url) from error


def without_password(url: str) -> str:
    """The URL as it may be logged: a password in it is replaced by `***`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
