"""The shared store: one Redis server for every replica, the same sealed records as on disk.

Redis being down is not an error for the service: a failed operation raises
`SharedStoreUnavailable` and marks the server down for `retry_after_s`, during which calls raise at
once (so an outage costs no timeout per request). The tiered store falls back to the local
store and counts each fallback.
Cross-replica single-flight is a lock per key (`SET NX PX`): best effort, it only saves work.
"""
from __future__ import annotations

import logging
import time
import uuid

import redis.asyncio as redis
from redis.exceptions import RedisError

from .events import SharedStoreUnavailable, StoreEvents
from .names import check_name
from .record import IntegrityError, seal, unseal

log = logging.getLogger("intentc.cache")
TIER = "redis"
PREFIX = "intentc:"


class RedisStore:
    def __init__(self, url: str, events: StoreEvents | None = None, timeout_s: float = 0.5,
                 retry_after_s: float = 1.0):
        self.url = url
        self.events = events or StoreEvents()
        self.retry_after_s = retry_after_s
        self._client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
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
        record = await self._call(self._client.get, PREFIX + f"{namespace}:{digest}")
        if record is None:
            self.events.lookup(TIER, namespace, False)
            return None
        try:
            payload = unseal(record)
        except IntegrityError as error:
            log.warning("redis record %s:%s failed its integrity check (%s); dropped", namespace, digest, error)
            self.events.integrity_failure(TIER)
            self.events.lookup(TIER, namespace, False)
            await self._call(self._client.delete, PREFIX + f"{namespace}:{digest}")
            return None
        self.events.lookup(TIER, namespace, True)
        return payload

    async def put(self, namespace: str, digest: str, payload: bytes) -> None:
        check_name(namespace, digest)
        await self._call(self._client.set, PREFIX + f"{namespace}:{digest}", seal(payload))

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
