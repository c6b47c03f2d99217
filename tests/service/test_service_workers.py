"""Worker faults against a real server: a worker killed while idle fails no request, and killing
the pool's forkserver does not make readiness lie."""
from __future__ import annotations

import os
import signal

import pytest

from harness import post_compile, ServiceProcess, wait_until

WORKERS = 2
REPLACED_WITHIN_S = 20.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server of this module's own: these tests kill its processes (each waits until the
    pool is whole again before it ends)."""
    started = ServiceProcess(tmp_path_factory.mktemp("workers"), workers=WORKERS).start()
    yield started
    started.stop()


def _all_workers_ready(server: ServiceProcess) -> bool:
    readiness = server.readiness()
    return readiness["ready"] and readiness["workers"] == WORKERS


def test_a_worker_killed_while_idle_fails_no_request(server, cold_request):
    wait_until(lambda: _all_workers_ready(server), REPLACED_WITHIN_S, "a whole pool")
    _, workers = server.forkserver_and_workers()
    assert len(workers) == WORKERS
    os.kill(workers[0], signal.SIGKILL)
    replies = [post_compile(server, cold_request()) for _ in range(2 * WORKERS)]  # every worker gets jobs
    assert [r.status_code for r in replies] == [200] * len(replies)
    assert [r.json()["status"] for r in replies] == ["miss"] * len(replies)
    wait_until(lambda: _all_workers_ready(server), REPLACED_WITHIN_S, "a replacement worker")
    assert workers[0] not in server.forkserver_and_workers()[1]


def test_a_killed_forkserver_leaves_readiness_true_while_workers_serve(server, cold_request):
    wait_until(lambda: _all_workers_ready(server), REPLACED_WITHIN_S, "a whole pool")
    forkserver, workers = server.forkserver_and_workers()
    os.kill(forkserver, signal.SIGKILL)
    wait_until(lambda: not os.path.exists(f"/proc/{forkserver}/stat") or _zombie(forkserver), 10,
               "the forkserver to die")
    readiness = server.readiness()
    assert (readiness["ready"], readiness["workers"]) == (True, WORKERS)
    assert [post_compile(server, cold_request()).status_code for _ in range(2 * WORKERS)] == [200] * (2 * WORKERS)
    # ... and when a worker does die, readiness counts it out and a new forkserver replaces it.
    os.kill(workers[0], signal.SIGKILL)
    wait_until(lambda: server.readiness()["workers"] < WORKERS or _all_workers_ready(server), 10,
               "readiness to notice the dead worker")
    assert post_compile(server, cold_request()).status_code == 200
    wait_until(lambda: _all_workers_ready(server), REPLACED_WITHIN_S, "a replacement worker")


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True
