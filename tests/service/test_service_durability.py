"""Durability against real processes: corrupted files, restarts, replicas sharing Redis, Redis outages."""
from __future__ import annotations

import json
import time

import httpx
import pytest

from intentc.cache import RecordSeal, record_name

from harness import post_all_in_background, post_compile, RedisProcess, ServiceProcess, sleepy_request

REDIS_RETRY_S = 1.0  # RedisStore.retry_after_s: how long a failure keeps Redis marked down
REDIS_PASSWORD = "test-redis-password-7f3a"
SIGNING_KEY = "the replicas' shared signing key"


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisProcess(tmp_path_factory.mktemp("redis"), password=REDIS_PASSWORD).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def replicas(tmp_path_factory, redis_server):
    """Two replicas with their own disk caches and one Redis (with a password); records signed."""
    secrets = {"INTENTC_REDIS_PASSWORD": REDIS_PASSWORD, "INTENTC_CACHE_SIGNING_KEY": SIGNING_KEY}
    pair = [ServiceProcess(tmp_path_factory.mktemp(f"replica-{n}"), redis_url=redis_server.url, workers=1,
                           environment=secrets)
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
    stored = redis_server.client().exists(f"intentc:entry:{after['key']}")
    assert after["status"] == "miss" and stored == 1


def test_replicas_reach_redis_with_its_password(replicas):
    # (an earlier test restarted Redis: a replica finds it again within its retry interval)
    deadline = time.monotonic() + 5 * REDIS_RETRY_S
    while time.monotonic() < deadline and not all(_sees_redis(replica) for replica in replicas):
        time.sleep(REDIS_RETRY_S / 4)
    assert all(_sees_redis(replica) for replica in replicas)


def _sees_redis(replica: ServiceProcess) -> bool:
    return httpx.get(replica.url + "/readyz").json()["redis"] is True


def assert_second_replica_refuses_tampered_record(replicas, redis_server, tamper, distinct_request) -> None:
    """Compile two requests on the first replica (their entries reach Redis), let `tamper(redis,
    key_a, key_b)` change Redis, then ask the second replica (its disk is empty) for the second
    request: it must refuse the Redis record (one integrity failure) and compile it again."""
    first, second = replicas
    body_a, body_b = distinct_request(), distinct_request()
    compiled_a, compiled_b = post_compile(first, body_a).json(), post_compile(first, body_b).json()
    assert compiled_a["artifacts"] != compiled_b["artifacts"]
    tamper(redis_server.client(), compiled_a["key"], compiled_b["key"])
    failures = second.metric("intentc_integrity_failures_total", tier="redis")
    answer = post_compile(second, body_b).json()
    assert (answer["key"], answer["status"]) == (compiled_b["key"], "miss")
    assert answer["artifacts"] == compiled_b["artifacts"]
    assert second.metric("intentc_integrity_failures_total", tier="redis") == failures + 1


def test_a_redis_record_copied_to_another_key_is_not_served(replicas, redis_server, distinct_request):
    def copy_a_over_b(client, key_a, key_b):
        client.set(f"intentc:entry:{key_b}", client.get(f"intentc:entry:{key_a}"))
    assert_second_replica_refuses_tampered_record(replicas, redis_server, copy_a_over_b, distinct_request)


@pytest.mark.parametrize("forger", [RecordSeal(), RecordSeal(b"a key the replicas do not share")],
                         ids=["unsigned", "signed with another key"])
def test_a_record_forged_in_redis_is_not_served(replicas, redis_server, distinct_request, forger):
    forged_entry = json.dumps({"kind": "artifacts", "artifacts": {"kernel.kir": {"encoding": "utf-8", "data": "evil"}},
                               "diagnostics": [], "compile_timings": {}}).encode()

    def forge_b(client, key_a, key_b):  # correctly bound to its name, but not with the replicas' key
        client.set(f"intentc:entry:{key_b}", forger.seal(record_name("entry", key_b), forged_entry))
    assert_second_replica_refuses_tampered_record(replicas, redis_server, forge_b, distinct_request)
