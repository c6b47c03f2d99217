"""Text that is not Unicode (a lone surrogate, which JSON can spell as `\\ud800`): a 422 that says
where, and the keep-alive connection goes on serving."""
from __future__ import annotations

import http.client
import json

import pytest

from harness import LOOPBACK


def post_raw(connection: http.client.HTTPConnection, body: str) -> tuple[int, dict, bool]:
    connection.request("POST", "/v1/compile", body=body.encode("ascii"), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, json.loads(response.read()), response.will_close


@pytest.mark.parametrize("where, spelled, location", [
    ("source", '{"source": "kernel @k() {\\n}\\n// \\ud800", "kernel": "k", "target": "kir"}', ["body", "source"]),
    ("constexpr", '{"source": "kernel @k() {\\n}\\n", "kernel": "k", "target": "kir", '
                  '"specialization": {"constexprs": {"S": "a\\udc00"}}}', ["body"]),
    ("field name", '{"source": "kernel @k() {\\n}\\n", "kernel": "k", "target": "kir", "\\ud800": 1}', None),
])
def test_a_lone_surrogate_is_refused_and_the_connection_stays_open(service, where, spelled, location):
    connection = http.client.HTTPConnection(LOOPBACK, service.port, timeout=30)
    try:
        status, body, will_close = post_raw(connection, spelled)
        assert status == 422 and body["error"] == "invalid"
        problem = body["problems"][0]
        if location is not None:
            assert problem["loc"] == location
            assert "lone surrogate U+D" in problem["msg"]
        if where == "source":
            assert "line 3, col 4" in problem["msg"]
        assert not will_close
        local_port = connection.sock.getsockname()[1]
        again, targets, _ = post_raw(connection, '{"source": "kernel @k() {\\n}\\n", "kernel": "k", "target": "kir"}')
        assert again == 200 and targets["status"] in ("miss", "hit")
        assert connection.sock.getsockname()[1] == local_port  # the same connection
    finally:
        connection.close()


def test_a_body_that_is_not_utf8_is_an_invalid_request(service):
    connection = http.client.HTTPConnection(LOOPBACK, service.port, timeout=30)
    try:
        connection.request("POST", "/v1/compile", body=b'{"source": "\xff", "kernel": "k", "target": "kir"}',
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        body = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 422
    assert body["error"] == "invalid" and body["problems"][0]["loc"] == ["body"]
