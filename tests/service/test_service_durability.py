"""Durability against real processes: corrupted files, restarts, replicas sharing Redis, Redis outages."""
from __future__ import annotations

import time

import httpx
import pytest
import redis

from conftest import post_compile, sleepy_request
from harness import RedisProcess, ServiceProcess, post_all_in_background

REDIS_RETRY_S = 1.0  # RedisStore.retry_after_s: how long a failure keeps Redis marked down


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisProcess(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def replicas(tmp_path_factory, redis_server):
    """Two replicas with their own disk caches and one Redis."""
    pair = [ServiceProcess(tmp_path_factory.mktemp(f"replica-{n}"), redis_url=redis_server.url, workers=1)
            for n in "ab"]
    for replica in pair:
        replica.launch()
    for replica in pair:
        replica.wait_ready()
    yield pair
    for replica in pair:
        replica.stop()


def test_a_corrupted_cache_file_is_detected_and_recompiled(service, cold_request):
    body = cold_request()
    first = post_compile(service, body).json()
    path = service.cache_dir / "entry" / first["key"][:2] / first["key"]
    path.write_bytes(path.read_bytes().replace(b"row_softmax", b"row_softmaX"))
    failures_before = service.metric("intentc_integrity_failures_total", tier="disk")
    second = post_compile(service, body).json()
    assert second["status"] == "miss"
    assert second["artifacts"] == first["artifacts"]
    assert service.metric("intentc_integrity_failures_total", tier="disk") == failures_before + 1


def test_a_restarted_server_still_has_its_artifacts(tmp_path, cold_request):
    body = cold_request()
    first_run = ServiceProcess(tmp_path / "first").start()
    try:
        compiled = post_compile(first_run, body).json()
    finally:
        first_run.stop()
    second_run = ServiceProcess(tmp_path / "second", cache_dir=first_run.cache_dir).start()
    try:
        assert httpx.get(f"{second_run.url}/v1/artifacts/{compiled['key']}").json()["artifacts"] == \
            compiled["artifacts"]
        again = post_compile(second_run, body).json()
    finally:
        second_run.stop()
    assert (compiled["status"], again["status"]) == ("miss", "hit")


def test_replicas_share_entries_through_redis(replicas, cold_request):
    first, second = replicas
    body = cold_request()
    on_first = post_compile(first, body).json()
    on_second = post_compile(second, body).json()
    assert (on_first["status"], on_second["status"]) == ("miss", "hit")
    assert on_second["artifacts"] == on_first["artifacts"]
    assert second.metric("intentc_cache_lookups_total", tier="redis", namespace="entry", result="hit") >= 1


def test_replicas_compile_a_key_once(replicas):
    first, second = replicas
    body = sleepy_request("shared_between_replicas")
    first_compiles = first.metric("intentc_compiles_total", target="test-sleep")
    second_compiles = second.metric("intentc_compiles_total", target="test-sleep")
    redis_misses = second.metric("intentc_cache_lookups_total", tier="redis", namespace="entry", result="miss")
    on_first = post_all_in_background(first.url, [body])
    first.wait_for_pid("shared_between_replicas")
    on_second = post_all_in_background(second.url, [body])
    second.wait_for_metric("intentc_cache_lookups_total", redis_misses + 1, tier="redis", namespace="entry",
                           result="miss")
    time.sleep(0.2)  # the second replica now finds the first one's lock and waits for its entry
    first.release("shared_between_replicas")
    (first_reply,), (second_reply,) = on_first(), on_second()
    assert (first_reply.json()["status"], second_reply.json()["status"]) == ("miss", "coalesced")
    assert first.metric("intentc_compiles_total", target="test-sleep") == first_compiles + 1
    assert second.metric("intentc_compiles_total", target="test-sleep") == second_compiles


def test_serving_goes_on_while_redis_is_down(replicas, redis_server, cold_request):
    first, _ = replicas
    warm = cold_request()
    post_compile(first, warm)
    redis_server.stop()
    try:
        cold = cold_request()
        replies = [post_compile(first, body) for body in (cold, cold, warm)]
        assert [r.status_code for r in replies] == [200, 200, 200]
        assert [r.json()["status"] for r in replies] == ["miss", "hit", "hit"]
        assert first.metric("intentc_store_fallbacks_total") > 0
        ready = httpx.get(first.url + "/readyz").json()
        assert ready["ready"] is True and ready["redis"] is False
    finally:
        redis_server.start_on_same_port()
    time.sleep(REDIS_RETRY_S + 0.2)
    after = post_compile(first, cold_request()).json()
    stored = redis.Redis.from_url(redis_server.url).exists(f"intentc:entry:{after['key']}")
    assert after["status"] == "miss" and stored == 1
