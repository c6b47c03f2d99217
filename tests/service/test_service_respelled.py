"""Respelled repeats against a real server: a request that differs only in JSON whitespace and
key order, or in KIR whitespace and comments, is answered from the cache without a worker job;
a "respelling" that changes what the text means is not."""
from __future__ import annotations

import json
import re

import httpx

from harness import post_compile
from sample_files import ROOT

JSON = {"Content-Type": "application/json"}


def post_bytes(service, body: bytes, headers=JSON) -> httpx.Response:
    return httpx.post(service.url + "/v1/compile", content=body, headers=headers, timeout=60)


def worker_jobs(service) -> float:
    return service.metric("intentc_queue_wait_seconds_count")


def kir_respelled(source: str) -> str:
    return "// respelled\n" + source.replace("\n", "   // trailing note\n").replace("  ", "\t  ")


def test_a_respelled_repeat_is_a_hit_without_a_worker_job(service, cold_request):
    body = cold_request()
    first = post_bytes(service, json.dumps(body, separators=(",", ":")).encode()).json()
    respellings = [json.dumps(dict(reversed(body.items())), indent=4).encode(),
                   json.dumps({**body, "source": kir_respelled(body["source"])}, indent=1).encode()]
    jobs = worker_jobs(service)
    answers = [post_bytes(service, respelling).json() for respelling in respellings]
    assert [(a["status"], a["key"]) for a in answers] == [("hit", first["key"])] * 2
    assert all(a["artifacts"] == first["artifacts"] for a in answers)
    assert worker_jobs(service) == jobs


def test_a_comment_that_splits_a_token_is_not_taken_for_a_respelling(service):
    source = (ROOT / "ir_samples" / "gelu_helper_call.kir").read_text()
    kernel = re.search(r"^kernel @(\w+)", source, re.MULTILINE).group(1)
    body = {"source": source, "kernel": kernel, "target": "kir"}
    assert post_compile(service, body).status_code == 200
    # `%yv, %dv =` is one token; a comment inside it leaves `%yv,` where an op should start
    split = {**body, "source": source.replace("%yv, %dv =", "%yv, // split\n %dv =")}
    answer = post_compile(service, split)
    assert answer.status_code == 422 and answer.json()["diagnostics"]


def test_a_body_that_is_not_declared_json_takes_the_ordinary_route(service, cold_request):
    body = json.dumps(cold_request()).encode()
    assert post_bytes(service, body).status_code == 200
    assert post_bytes(service, body, headers={"Content-Type": "text/plain"}).status_code == 422
