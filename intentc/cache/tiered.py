"""The store the service uses: local disk first, then the shared Redis (when configured).

A record found only in Redis is copied to disk. Writes go to both. When Redis is unreachable
the local store serves alone; every such fallback is counted (`StoreEvents.fallback`).
Aliases (request digest → key) are immutable facts, so they are also kept in a bounded
in-memory map: a repeated request then costs one disk read.
"""
from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from .disk import DiskStore
from .events import SharedStoreUnavailable, StoreEvents

if TYPE_CHECKING:
    from .redis_store import RedisStore

PEER_POLL_S = 0.05


class TieredStore:
    def __init__(self, disk: DiskStore, shared: RedisStore | None = None, events: StoreEvents | None = None,
                 memory_aliases: int = 100_000):
        self.disk = disk
        self.shared = shared
        self.events = events or StoreEvents()
        self._aliases: OrderedDict[str, bytes] = OrderedDict()
        self._alias_capacity = memory_aliases

    async def get(self, namespace: str, digest: str) -> tuple[bytes, str] | None:
        """The payload and the tier that had it, or None."""
        if namespace == "alias" and digest in self._aliases:
            self._aliases.move_to_end(digest)
            self.events.lookup("memory", namespace, True)
            return self._aliases[digest], "memory"
        payload = self.disk.get(namespace, digest)
        tier = "disk"
        if payload is None:
            payload = await self._shared_get(namespace, digest)
            if payload is None:
                return None
            tier = "redis"
            self.disk.put(namespace, digest, payload)
        if namespace == "alias":
            self._remember_alias(digest, payload)
        return payload, tier

    async def put(self, namespace: str, digest: str, payload: bytes) -> None:
        self.disk.put(namespace, digest, payload)
        if namespace == "alias":
            self._remember_alias(digest, payload)
        if self.shared is not None:
            try:
                await self.shared.put(namespace, digest, payload)
            except SharedStoreUnavailable:
                self.events.fallback("put")

    async def discard(self, namespace: str, digest: str) -> None:
        """Remove a record from every tier (one that passed its seal but cannot be used)."""
        if namespace == "alias":
            self._aliases.pop(digest, None)
        self.disk.delete(namespace, digest)
        if self.shared is not None:
            try:
                await self.shared.delete(namespace, digest)
            except SharedStoreUnavailable:
                self.events.fallback("delete")

    async def claim(self, digest: str, ttl_s: float) -> bool:
        """Best-effort cross-replica lock for compiling `digest`; True means go ahead."""
        if self.shared is None:
            return True
        try:
            return await self.shared.claim(digest, ttl_s)
        except SharedStoreUnavailable:
            self.events.fallback("claim")
            return True

    async def release(self, digest: str) -> None:
        if self.shared is not None:
            try:
                await self.shared.release(digest)
            except SharedStoreUnavailable:
                self.events.fallback("release")

    async def wait_for_peer(self, digest: str, timeout_s: float) -> bytes | None:
        """Wait while another replica compiles `digest`; its entry, or None when it gave up."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            await asyncio.sleep(PEER_POLL_S)
            found = await self.get("entry", digest)
            if found is not None:
                return found[0]
            try:
                if not await self.shared.is_claimed(digest):
                    return None
            except SharedStoreUnavailable:
                self.events.fallback("claim")
                return None
        return None

    async def shared_reachable(self) -> bool | None:
        """None without a shared store."""
        return None if self.shared is None else await self.shared.ping()

    async def close(self) -> None:
        if self.shared is not None:
            await self.shared.close()

    async def _shared_get(self, namespace: str, digest: str) -> bytes | None:
        if self.shared is None:
            return None
        try:
            return await self.shared.get(namespace, digest)
        except SharedStoreUnavailable:
            self.events.fallback("get")
            return None

    def _remember_alias(self, digest: str, payload: bytes) -> None:
        self._aliases[digest] = payload
        self._aliases.move_to_end(digest)
        while len(self._aliases) > self._alias_capacity:
            self._aliases.popitem(last=False)
