"""A constrained server (1 worker, a queue of 1, a 4 s time limit, bearer tokens): overload,
timeouts and tokens. (The limit leaves a loaded machine room to hold one job while a test fills
the queue behind it.)"""
from __future__ import annotations

import httpx
import pytest

from harness import in_background, ServiceProcess, sleepy_request
from intentc import parse, print_module
from intentc.cache import KeyInputs, compute_key, key_text, toolchain
from intentc.options import CompileOptions, Specialization

READ_TOKEN, COMPILE_TOKEN = "read-secret", "compile-secret"
COMPILE_AUTH = {"Authorization": f"Bearer {COMPILE_TOKEN}"}
READ_AUTH = {"Authorization": f"Bearer {READ_TOKEN}"}


@pytest.fixture(scope="module")
def constrained(tmp_path_factory):
    server = ServiceProcess(tmp_path_factory.mktemp("constrained"), workers=1,
                            extra_args=("--max-queue", "1", "--compile-timeout", "4"),
                            environment={"INTENTC_READ_TOKEN": READ_TOKEN, "INTENTC_COMPILE_TOKEN": COMPILE_TOKEN})
    yield server.start()
    server.stop()


def compile_on(server: ServiceProcess, body: dict, headers=COMPILE_AUTH) -> httpx.Response:
    return httpx.post(server.url + "/v1/compile", json=body, headers=headers, timeout=30)


def sleepy_key(kernel: str) -> str:
    text = key_text(print_module(parse(sleepy_request(kernel)["source"])))
    return compute_key(KeyInputs(source_form="canonical", kir=text, kernel=kernel, target="test-sleep", arch=None,
                                 options=CompileOptions(), specialization=Specialization(),
                                 toolchain=toolchain("test-sleep")))


def test_a_full_queue_answers_503_with_retry_after(constrained):
    busy = in_background(lambda: compile_on(constrained, sleepy_request("holds_the_only_worker")))
    constrained.wait_for_pid("holds_the_only_worker")
    queued = in_background(lambda: compile_on(constrained, sleepy_request("waits_in_the_queue")))
    constrained.wait_for_metric("intentc_queue_depth", 1)
    refused = compile_on(constrained, sleepy_request("finds_the_queue_full"))
    constrained.release("holds_the_only_worker")
    constrained.release("waits_in_the_queue")
    assert refused.status_code == 503
    assert refused.json()["error"] == "overloaded"
    assert int(refused.headers["Retry-After"]) >= 1
    assert busy().status_code == queued().status_code == 200
    assert constrained.metric("intentc_rejections_total", reason="overloaded") >= 1


def test_a_compile_over_the_time_limit_is_killed_and_not_cached(constrained):
    kernel = "runs_past_the_limit"
    timeouts_before = constrained.metric("intentc_compiles_total", target="test-sleep", outcome="timeout")
    response = compile_on(constrained, sleepy_request(kernel))
    assert response.status_code == 504 and response.json()["error"] == "timeout"
    assert constrained.metric("intentc_compiles_total", target="test-sleep", outcome="timeout") == timeouts_before + 1
    assert httpx.head(f"{constrained.url}/v1/artifacts/{sleepy_key(kernel)}", headers=READ_AUTH).status_code == 404
    constrained.release(kernel)
    assert compile_on(constrained, sleepy_request(kernel)).json()["status"] == "miss"


def test_tokens_separate_reading_from_compiling(constrained):
    kernel = "behind_tokens"
    constrained.release(kernel)
    body = sleepy_request(kernel)
    assert compile_on(constrained, body, headers={}).status_code == 401
    assert compile_on(constrained, body, headers=READ_AUTH).status_code == 401
    key = compile_on(constrained, body).json()["key"]
    assert compile_on(constrained, body).json()["status"] == "hit"
    assert compile_on(constrained, body, headers={}).status_code == 401  # the same bytes, no token: no hit
    url = f"{constrained.url}/v1/artifacts/{key}"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(url, headers=READ_AUTH).status_code == 200
    assert httpx.get(url, headers=COMPILE_AUTH).status_code == 200
    assert httpx.get(constrained.url + "/metrics").status_code == 200  # operations endpoints stay open
