"""docker/compose.yaml: Redis requires a password (checked against a real redis-server run with
the compose file's own command line), and the replicas take the password and the signing key
from the environment, never from their command line."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess

import pytest
import yaml

from harness import LOOPBACK, free_port, wait_until
from sample_files import ROOT

COMPOSE = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
PASSWORD = "0123456789abcdef"


def redis_answer(port: int, *commands: str) -> bytes:
    with socket.create_connection((LOOPBACK, port), timeout=2) as connection:
        connection.sendall("".join(f"{command}\r\n" for command in commands).encode())
        return connection.recv(256)


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_the_compose_redis_refuses_clients_without_its_password(tmp_path):
    script = COMPOSE["services"]["redis"]["entrypoint"][-1].replace("$$", "$")  # compose's escape
    port = free_port()
    local = script.replace("redis-server -", f"redis-server - --bind {LOOPBACK} --port {port} --dir {tmp_path}")
    redis = subprocess.Popen(["sh", "-c", local], env={**os.environ, "REDIS_PASSWORD": PASSWORD},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: _answers(port), 10, "the compose file's redis-server")
        assert redis_answer(port, "GET x").startswith(b"-NOAUTH")
        assert redis_answer(port, f"AUTH {PASSWORD}", "PING") == b"+OK\r\n+PONG\r\n"
    finally:
        redis.terminate()
        redis.wait(10)


def test_the_replicas_take_their_secrets_from_the_environment():
    replicas = [service for name, service in COMPOSE["services"].items() if name.startswith("intentc-")]
    assert len(replicas) == 2
    for replica in replicas:  # (intentc-b inherits intentc-a's settings through a YAML merge key)
        environment = replica["environment"]
        assert environment["INTENTC_REDIS_PASSWORD"].startswith("${REDIS_PASSWORD:?")
        assert environment["INTENTC_CACHE_SIGNING_KEY"].startswith("${INTENTC_CACHE_SIGNING_KEY:?")
        assert "@" not in environment["INTENTC_REDIS_URL"]  # no password in the URL
        command = " ".join(replica["command"])
        assert "redis" not in command and "KEY" not in command


def _answers(port: int) -> bool:
    try:
        return bool(redis_answer(port, "PING"))
    except OSError:
        return False
