"""The Python client (retries, Retry-After, diagnostics) and `intentc remote` against the live server."""
from __future__ import annotations

import httpx
import pytest

from harness import free_port
from intentc.cli.main import main
from intentc.client import Client, CompileFailed, RemoteError

OK_BODY = {"key": "a" * 64, "status": "miss", "artifacts": {"kernel.kir": {"encoding": "utf-8", "data": "k"}},
           "diagnostics": [], "timings": {}, "compile_timings": {}}


def scripted_client(replies: list, monkeypatch) -> tuple[Client, list[float], list[httpx.Request]]:
    """A client whose server answers `replies` in turn (a response, or an exception to raise)."""
    sleeps, requests = [], []
    monkeypatch.setattr("intentc.client.time.sleep", sleeps.append)

    def answer(request):
        requests.append(request)
        reply = replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply
    return Client("http://test", retries=3, transport=httpx.MockTransport(answer)), sleeps, requests


def test_client_retries_overload_honouring_retry_after(monkeypatch):
    overloaded = httpx.Response(503, json={"error": "overloaded", "detail": "busy"}, headers={"Retry-After": "2"})
    client, sleeps, requests = scripted_client([overloaded, overloaded, httpx.Response(200, json=OK_BODY)],
                                               monkeypatch)
    reply = client.compile("text", "k", "kir")
    assert reply.artifacts == {"kernel.kir": "k"} and reply.status == "miss"
    assert sleeps == [2.0, 2.0] and len(requests) == 3


def test_client_backs_off_on_lost_connections_then_gives_up(monkeypatch):
    client, sleeps, requests = scripted_client([httpx.ConnectError("refused")] * 4, monkeypatch)
    with pytest.raises(httpx.ConnectError):
        client.compile("text", "k", "kir")
    assert len(requests) == 4 and len(sleeps) == 3
    assert all(0 <= pause <= 0.2 * 2 ** attempt for attempt, pause in enumerate(sleeps))


def test_client_does_not_retry_a_refusal(monkeypatch):
    refused = httpx.Response(413, json={"error": "too_large", "detail": "the body limit is 4 bytes"})
    client, sleeps, requests = scripted_client([refused], monkeypatch)
    with pytest.raises(RemoteError) as error:
        client.compile("text", "k", "kir")
    assert (error.value.status, error.value.error) == (413, "too_large")
    assert sleeps == [] and len(requests) == 1


def test_client_reports_where_a_lone_surrogate_is(service):
    with Client(service.url) as client, pytest.raises(RemoteError) as error:
        client.compile("kernel @k() {\n}\n// \ud800\n", "k", "kir")
    assert (error.value.status, error.value.error) == (422, "invalid")
    assert "body.source: Value error, line 3, col 4: lone surrogate U+D800" in error.value.detail


def test_client_raises_diagnostics_rendered_against_the_local_file(service):
    with Client(service.url) as client, pytest.raises(CompileFailed) as failure:
        client.compile("kernel @k(%x: f32) {\n  %y = frobnicate %x : f32\n}\n", "k", "kir", file="mine.kir")
    rendered = failure.value.render()
    assert rendered.startswith("mine.kir:2:")
    assert "frobnicate" in rendered and "^" in rendered


def test_remote_compile_writes_artifacts_and_hits_the_second_time(service, sample_files, tmp_path, capsys):
    source = sample_files / "row_softmax.kir"
    arguments = ["remote", "compile", str(source), "--server", service.url, "--kernel", "row_softmax",
                 "--target", "kir", "--extent", "M=77", "-o", str(tmp_path)]
    assert main(arguments) == 0
    first = capsys.readouterr().out.split()
    assert main(arguments) == 0
    second = capsys.readouterr().out.split()
    assert first[0] == second[0] and (first[1], second[1]) == ("miss", "hit")
    assert (tmp_path / "kernel.kir").read_text().startswith("kernel @row_softmax(")
    assert main(["remote", "fetch", first[0], "--server", service.url, "-o", str(tmp_path / "fetched")]) == 0
    assert (tmp_path / "fetched" / "kernel.kir").read_text() == (tmp_path / "kernel.kir").read_text()


def test_remote_compile_exit_codes(service, tmp_path, capsys):
    bad = tmp_path / "bad.kir"
    bad.write_text("kernel @k( {\n")
    common = ["--kernel", "k", "--target", "kir", "-o", str(tmp_path)]
    assert main(["remote", "compile", str(bad), "--server", service.url, *common]) == 1
    assert f"{bad}:1:" in capsys.readouterr().err
    unreachable = f"http://127.0.0.1:{free_port()}"
    assert main(["remote", "compile", str(bad), "--server", unreachable, "--retries", "0", *common]) == 3
    assert main(["remote", "compile", str(bad), "--server", service.url, "--extent", "N=x", *common]) == 2


@pytest.fixture(scope="session")
def sample_files(root):
    return root / "ir_samples"
