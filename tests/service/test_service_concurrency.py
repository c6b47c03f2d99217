"""Concurrency against a real server: single-flight, and a killed worker failing only its request."""
from __future__ import annotations

import os
import signal
from collections import Counter

from harness import post_all_in_background, post_compile, sleepy_request


def test_fifty_identical_cold_requests_compile_once(service):
    body = sleepy_request("fifty_identical")
    compiles_before = service.metric("intentc_compiles_total", target="test-sleep")
    coalesced_before = service.metric("intentc_coalesced_total")
    results = post_all_in_background(service.url, [body] * 50)
    service.wait_for_pid("fifty_identical")
    service.wait_for_metric("intentc_coalesced_total", coalesced_before + 49)
    service.release("fifty_identical")
    responses = results()
    assert [r.status_code for r in responses] == [200] * 50
    assert Counter(r.json()["status"] for r in responses) == {"miss": 1, "coalesced": 49}
    assert len({r.json()["key"] for r in responses}) == 1
    assert service.metric("intentc_compiles_total", target="test-sleep") == compiles_before + 1
    assert post_compile(service, body).json()["status"] == "hit"


def test_a_killed_worker_fails_only_its_own_request(service, cold_request):
    victim = sleepy_request("killed_mid_compile")
    crashed_before = service.metric("intentc_compiles_total", target="test-sleep", outcome="crashed")
    results = post_all_in_background(service.url, [victim])
    os.kill(service.wait_for_pid("killed_mid_compile"), signal.SIGKILL)
    bystander = post_compile(service, cold_request())
    (failed,) = results()
    assert failed.status_code == 500 and failed.json()["error"] == "internal"
    assert bystander.status_code == 200 and bystander.json()["status"] == "miss"
    assert service.metric("intentc_compiles_total", target="test-sleep", outcome="crashed") == crashed_before + 1
    service.wait_for_metric("intentc_jobs_in_flight", 0)
    service.release("killed_mid_compile")
    retried = post_compile(service, victim)
    assert retried.status_code == 200 and retried.json()["status"] == "miss"  # the failure was not cached
    after = [post_compile(service, cold_request()) for _ in range(4)]
    assert [r.status_code for r in after] == [200] * 4
