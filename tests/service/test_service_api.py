"""The HTTP API against a real server: hits, misses, diagnostics, artifacts, health, metrics."""
from __future__ import annotations

import httpx

from harness import post_compile
from intentc import parse, print_module
from intentc.cache import KeyInputs, compute_key, key_text, toolchain
from intentc.options import CompileOptions, Specialization
from intentc_server.entries import decode_artifact


def test_first_request_compiles_and_the_second_hits(service, cold_request):
    body = cold_request()
    first, second = post_compile(service, body), post_compile(service, body)
    assert first.status_code == second.status_code == 200
    assert (first.json()["status"], second.json()["status"]) == ("miss", "hit")
    assert first.json()["key"] == second.json()["key"]
    assert first.json()["artifacts"] == second.json()["artifacts"]
    assert set(first.json()["compile_timings"]) >= {"parse", "verify", "lower"}


def test_the_key_is_the_documented_hash(service, cold_request):
    body = cold_request()
    reply = post_compile(service, body).json()
    expected = compute_key(KeyInputs(
        source_form="canonical", kir=key_text(print_module(parse(body["source"]))), kernel=body["kernel"],
        target="kir", arch=None, options=CompileOptions(), specialization=Specialization(**body["specialization"]),
        toolchain=toolchain("kir")))
    assert reply["key"] == expected


def test_a_respelled_module_hits_the_same_entry(service, cold_request):
    body = cold_request()
    first = post_compile(service, body).json()
    respelled = {**body, "source": "// reformatted\n" + body["source"].replace("  ", "      ")}
    second = post_compile(service, respelled).json()
    assert (first["status"], second["status"]) == ("miss", "hit")
    assert first["key"] == second["key"]


def test_artifacts_are_served_by_key(service, cold_request):
    reply = post_compile(service, cold_request()).json()
    url = f"{service.url}/v1/artifacts/{reply['key']}"
    assert httpx.head(url).status_code == 200
    assert httpx.get(url).json()["artifacts"] == reply["artifacts"]
    raw = httpx.get(url + "/kernel.kir")
    assert raw.text == reply["artifacts"]["kernel.kir"]["data"]
    assert raw.text.startswith("kernel @row_softmax(")
    missing = f"{service.url}/v1/artifacts/{'0' * 64}"
    assert httpx.head(missing).status_code == 404
    assert httpx.get(missing).json()["error"] == "not_found"
    assert httpx.get(f"{service.url}/v1/artifacts/not-a-key").status_code == 422


def test_bad_kir_gets_422_with_the_cli_diagnostics_and_they_are_cached(service, cold_request):
    body = cold_request(source="kernel @row_softmax(%x: f32) {\n  %y = frobnicate %x : f32\n}\n")
    first, second = post_compile(service, body), post_compile(service, body)
    assert first.status_code == second.status_code == 422
    diagnostics = first.json()["diagnostics"]
    assert diagnostics and diagnostics[0]["line"] == 2 and diagnostics[0]["code"].startswith("E")
    assert {"code", "message", "file", "line", "col", "hint", "severity"} <= set(diagnostics[0])
    assert (first.json()["status"], second.json()["status"]) == ("miss", "hit")


def test_unknown_kernel_and_target_are_diagnostics(service, cold_request):
    kernel = post_compile(service, cold_request(kernel="missing")).json()["diagnostics"]
    target = post_compile(service, cold_request(target="no-such-target")).json()["diagnostics"]
    assert [d["code"] for d in kernel] == ["E0060"]
    assert [d["code"] for d in target] == ["E0061"]


def test_invalid_options_are_refused_before_compiling(service, cold_request):
    for bad in ({"options": {"opt_level": 9}}, {"options": {"unknown": 1}}, {"kernel": ""}):
        response = post_compile(service, cold_request(**bad))
        assert response.status_code == 422
        assert response.json()["error"] == "invalid"


def test_too_deep_nesting_is_a_limit_not_a_crash(service, cold_request):
    body = cold_request(source="kernel @k() {\n" + "(" * 500 + "\n}\n")
    response = post_compile(service, body)
    assert response.status_code == 422
    assert response.json()["error"] == "limit"


def test_oversized_bodies_get_413(service, cold_request):
    declared = post_compile(service, cold_request(source="x" * (5 << 20)))
    chunked = httpx.post(service.url + "/v1/compile", content=iter([b"{" + b" " * (5 << 20) + b"}"]))
    assert declared.status_code == chunked.status_code == 413
    assert declared.json()["error"] == "too_large"


def test_health_readiness_targets_and_openapi(service):
    assert httpx.get(service.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(service.url + "/readyz").json()
    assert ready["ready"] is True and ready["workers"] == 2 and ready["redis"] is None
    assert {"kir", "test-sleep"} <= {t["name"] for t in httpx.get(service.url + "/v1/targets").json()}
    paths = httpx.get(service.url + "/openapi.json").json()["paths"]
    assert {"/v1/compile", "/v1/artifacts/{key}", "/healthz", "/readyz", "/metrics"} <= set(paths)
    assert httpx.get(service.url + "/docs").status_code == 200


def test_metrics_count_hits_misses_and_compiles(service, cold_request):
    before_miss = service.metric("intentc_compile_results_total", status="miss")
    before_hit = service.metric("intentc_compile_results_total", status="hit")
    before_compiles = service.metric("intentc_compiles_total", target="kir")
    body = cold_request()
    post_compile(service, body), post_compile(service, body)
    assert service.metric("intentc_compile_results_total", status="miss") == before_miss + 1
    assert service.metric("intentc_compile_results_total", status="hit") == before_hit + 1
    assert service.metric("intentc_compiles_total", target="kir") == before_compiles + 1
    assert service.metric("intentc_cache_lookups_total", tier="disk", result="hit") > 0
    assert service.metric("intentc_compile_duration_seconds_count", target="kir") > 0
    assert service.metric("intentc_requests_total", route="/v1/compile", code="200") > 0


def test_every_registered_target_compiles_as_the_driver_does(service, sample_source):
    """The service's artifacts are the driver's, for each target registered today (kir, llvm, ...)."""
    from intentc.diagnostics import DiagnosticError
    from intentc.driver import TARGETS, compile_kernel

    canonical = key_text(print_module(parse(sample_source)))
    for name, target in TARGETS.items():
        arch = target.archs[0] if target.archs else None
        reply = post_compile(service, {"source": sample_source, "kernel": "row_softmax", "target": name,
                                       "arch": arch}).json()
        try:
            local = compile_kernel(canonical, "row_softmax", name, arch)
        except DiagnosticError as error:
            assert [d["code"] for d in reply["diagnostics"]] == [d.code for d in error.diagnostics], name
            continue
        served = {artifact: decode_artifact(value) for artifact, value in reply["artifacts"].items()}
        expected = {artifact: value.encode() if isinstance(value, str) else value
                    for artifact, value in local.artifacts.items()}
        assert served == expected, name
