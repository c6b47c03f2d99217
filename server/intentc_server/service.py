"""POST /v1/compile, end to end: alias lookup, single-flight, the worker jobs, the store.

1. The request digest (the key's hash over the *raw* text) names an alias `digest → key`.
   A repeated request finds its entry with no parse: the hit path.
2. Otherwise, one flight per digest: a worker parses and verifies the text (diagnostics are
   cached under the digest, since their line numbers belong to that text) and returns the
   canonical, comment-free form; the key is hashed from it and the alias stored.
3. One flight per key: the entry may already exist (another spelling of the same module);
   if not, a worker compiles it (best-effort cross-replica lock first) and the entry is stored.
Timeouts, crashed workers and compiler bugs are raised as `ServiceError` and never stored.
"""
from __future__ import annotations

import logging
import time
from collections import OrderedDict

from intentc.cache import KeyInputs, TieredStore, compute_key, toolchain
from intentc.cache.names import is_digest

from . import entries
from .errors import ServiceError
from .flights import SingleFlight
from .metrics import ServiceMetrics
from .models import CompileRequest
from .pool import CompileTimeout, QueueFull, WorkerCrashed, WorkerPool
from .settings import ServiceSettings

log = logging.getLogger("intentc.service")
MEMORY_BODIES = 100_000  # request-body digests and respelling fingerprints remembered for the hot path


class CompileService:
    def __init__(self, settings: ServiceSettings, store: TieredStore, pool: WorkerPool, metrics: ServiceMetrics):
        self.settings, self.store, self.pool, self.metrics = settings, store, pool, metrics
        self._by_digest: SingleFlight[tuple[str, dict, str]] = SingleFlight()
        self._by_key: SingleFlight[tuple[dict, str]] = SingleFlight()
        self._keys_by_body: OrderedDict[bytes, str] = OrderedDict()

    async def compile(self, request: CompileRequest, body_digest: bytes | None = None,
                      fingerprint: bytes | None = None) -> tuple[int, bytes]:
        """The HTTP status and JSON body for one compile request; `body_digest` (the sha256 of
        the request's bytes) lets the hot path answer the same bytes next time, and
        `fingerprint` (its respelling fingerprint) the same request in another spelling."""
        started = time.perf_counter()
        if len(request.source) > self.settings.max_source_chars:
            raise ServiceError(413, "too_large", f"the source has {len(request.source)} characters; "
                                                 f"the limit is {self.settings.max_source_chars}")
        digest = compute_key(_key_inputs(request, "raw", request.source))
        cached = await self._entry_by_alias(digest)
        if cached is not None:
            key, entry = cached
            status = "hit"
        else:
            (key, entry, status), joined = await self._by_digest.run(
                digest, lambda: self._resolve(request, digest), on_join=self.metrics.coalesced.inc)
            if joined:
                status = "coalesced" if status == "miss" else status
        self.metrics.compile_results.labels(status).inc()
        if body_digest is not None:
            self._remember_body(body_digest, key)
        if fingerprint is not None and key != digest:  # the text parsed and verified: the key is canonical
            self._remember_body(fingerprint, key)
        timings = {"total": time.perf_counter() - started}
        return entries.http_status(entry), entries.response_body(key, status, entry, timings)

    async def repeat(self, body_digest: bytes, started: float) -> tuple[int, bytes] | None:
        """The answer to request bytes (or a respelling fingerprint) seen before, when their
        entry is still stored."""
        key = self._keys_by_body.get(body_digest)
        if key is None:
            return None
        entry = await self.artifact_entry(key)
        if entry is None:
            del self._keys_by_body[body_digest]
            return None
        self.metrics.compile_results.labels("hit").inc()
        timings = {"total": time.perf_counter() - started}
        return entries.http_status(entry), entries.response_body(key, "hit", entry, timings)

    def _remember_body(self, body_digest: bytes, key: str) -> None:
        self._keys_by_body[body_digest] = key
        self._keys_by_body.move_to_end(body_digest)
        while len(self._keys_by_body) > MEMORY_BODIES:
            self._keys_by_body.popitem(last=False)

    async def artifact_entry(self, key: str) -> dict | None:
        found = await self.store.get("entry", key)
        return None if found is None else await self._readable_entry(key, *found)

    async def _readable_entry(self, key: str, payload: bytes, tier: str) -> dict | None:
        """The entry, or None (a miss: the record is discarded and the compile that follows
        writes a new one) when a record that passed its seal holds no readable entry."""
        try:
            return entries.load(payload)
        except entries.UnreadableEntry as error:
            await self._discard_unreadable("entry", key, tier, error)
            return None

    async def _discard_unreadable(self, namespace: str, digest: str, tier: str, problem) -> None:
        log.warning("cache %s %s from the %s tier is unreadable (%s); discarded, resolving it again",
                    namespace, digest, tier, problem)
        self.metrics.unreadable_entries.labels(tier).inc()
        await self.store.discard(namespace, digest)

    async def _entry_by_alias(self, digest: str) -> tuple[str, dict] | None:
        alias = await self.store.get("alias", digest)
        if alias is None:
            return None
        key = alias[0].decode("ascii", "replace")
        if not is_digest(key):
            await self._discard_unreadable("alias", digest, alias[1], "it holds no key")
            return None
        entry = await self.artifact_entry(key)
        return None if entry is None else (key, entry)

    async def _resolve(self, request: CompileRequest, digest: str) -> tuple[str, dict, str]:
        reply = await self._job("prepare", request.target, request.source, self.settings.max_nesting)
        if reply[0] == "diagnostics":
            entry = entries.diagnostics_entry(reply[1])
            await self.store.put("entry", digest, entries.dump(entry))
            await self.store.put("alias", digest, digest.encode("ascii"))
            return digest, entry, "miss"
        text = reply[1]
        key = compute_key(_key_inputs(request, "canonical", text))
        await self.store.put("alias", digest, key.encode("ascii"))
        existing = await self.artifact_entry(key)
        if existing is not None:
            return key, existing, "hit"
        (entry, status), joined = await self._by_key.run(key, lambda: self._compile(request, key, text),
                                                         on_join=self.metrics.coalesced.inc)
        if joined and status == "miss":
            status = "coalesced"
        return key, entry, status

    async def _compile(self, request: CompileRequest, key: str, text: str) -> tuple[dict, str]:
        if not await self.store.claim(key, self.settings.compile_timeout_s):
            payload = await self.store.wait_for_peer(key, self.settings.compile_timeout_s)
            entry = None if payload is None else await self._readable_entry(key, payload, "redis")
            if entry is not None:
                return entry, "coalesced"
        target = request.target
        try:
            started = time.perf_counter()
            reply = await self._job("compile", target, text, request.kernel, request.target, request.arch,
                                    request.options.model_dump(), request.specialization.model_dump())
            self.metrics.compile_duration.labels(_target_label(target)).observe(time.perf_counter() - started)
            if reply[0] == "diagnostics":
                entry = entries.diagnostics_entry(reply[1])
            else:
                entry = entries.artifacts_entry(reply[1], reply[2])
            self.metrics.compiles.labels(_target_label(target), entry["kind"]).inc()
            await self.store.put("entry", key, entries.dump(entry))
            return entry, "miss"
        finally:
            await self.store.release(key)

    async def _job(self, job: str, target: str, *arguments) -> tuple:
        """Run a worker job; every way it can fail becomes a ServiceError (never cached)."""
        try:
            reply = await self.pool.run(job, *arguments)
        except QueueFull as error:
            raise ServiceError(503, "overloaded", str(error), {"Retry-After": str(self.settings.retry_after_s)}) from error
        except CompileTimeout as error:
            self.metrics.compiles.labels(_target_label(target), "timeout").inc()
            raise ServiceError(504, "timeout", str(error)) from error
        except WorkerCrashed as error:
            self.metrics.compiles.labels(_target_label(target), "crashed").inc()
            raise ServiceError(500, "internal", str(error)) from error
        if reply[0] == "limit":
            raise ServiceError(422, "limit", reply[1])
        if reply[0] == "error":
            log.error("internal compiler error in a %s job:\n%s", job, reply[1])
            self.metrics.compiles.labels(_target_label(target), "internal_error").inc()
            raise ServiceError(500, "internal", "internal compiler error: " + reply[1].strip().splitlines()[-1])
        return reply


def _target_label(target: str) -> str:
    """Metric label: registered targets by name, anything else as `unknown` (bounded cardinality)."""
    from intentc.driver import TARGETS
    return target if target in TARGETS else "unknown"


def _key_inputs(request: CompileRequest, form: str, kir: str) -> KeyInputs:
    return KeyInputs(source_form=form, kir=kir, kernel=request.kernel, target=request.target, arch=request.arch,
                     options=request.options, specialization=request.specialization,
                     toolchain=toolchain(request.target))
