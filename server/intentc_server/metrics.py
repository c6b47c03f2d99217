"""Prometheus metrics of one service process (a registry of its own, served at /metrics)."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from intentc.cache.events import StoreEvents

_COMPILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_WAIT_BUCKETS = (0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30)


class ServiceMetrics(StoreEvents):
    def __init__(self):
        self.registry = registry = CollectorRegistry()
        self.requests = Counter("intentc_requests", "HTTP requests by route and status code",
                                ["route", "code"], registry=registry)
        self.cache_lookups = Counter("intentc_cache_lookups", "Store reads by tier, namespace and result",
                                     ["tier", "namespace", "result"], registry=registry)
        self.compile_results = Counter("intentc_compile_results", "Answers to POST /v1/compile by cache status",
                                       ["status"], registry=registry)
        self.compiles = Counter("intentc_compiles", "Compile jobs run, by target and outcome",
                                ["target", "outcome"], registry=registry)
        self.compile_duration = Histogram("intentc_compile_duration_seconds", "Compile job duration by target",
                                          ["target"], buckets=_COMPILE_BUCKETS, registry=registry)
        self.queue_wait = Histogram("intentc_queue_wait_seconds", "Time a job waited for a free worker",
                                    buckets=_WAIT_BUCKETS, registry=registry)
        self.queue_depth = Gauge("intentc_queue_depth", "Jobs waiting for a free worker now", registry=registry)
        self.in_flight = Gauge("intentc_jobs_in_flight", "Jobs running on workers now", registry=registry)
        self.coalesced = Counter("intentc_coalesced", "Requests that joined an identical request in flight",
                                 registry=registry)
        self.rejections = Counter("intentc_rejections", "Requests refused, by reason", ["reason"],
                                  registry=registry)
        self.integrity_failures = Counter("intentc_integrity_failures",
                                          "Stored records that failed their seal (digest, name, signature)",
                                          ["tier"], registry=registry)
        self.unreadable_entries = Counter("intentc_unreadable_entries",
                                          "Records that passed their seal but hold no readable entry or alias "
                                          "(treated as misses)", ["tier"], registry=registry)
        self.store_fallbacks = Counter("intentc_store_fallbacks", "Operations served locally while Redis was down",
                                       ["operation"], registry=registry)
        self.evictions = Counter("intentc_cache_evictions", "Files evicted from the disk store", registry=registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    # StoreEvents
    def lookup(self, tier: str, namespace: str, hit: bool) -> None:
        self.cache_lookups.labels(tier, namespace, "hit" if hit else "miss").inc()

    def integrity_failure(self, tier: str) -> None:
        self.integrity_failures.labels(tier).inc()

    def fallback(self, operation: str) -> None:
        self.store_fallbacks.labels(operation).inc()

    def evicted(self, count: int) -> None:
        self.evictions.inc(count)
