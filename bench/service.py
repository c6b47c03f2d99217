"""The compile service under load: cache hits (identical and respelled), cold compiles, and a
trivial FastAPI endpoint under the same server settings as the floor of what HTTP costs here.

Starts `intentc serve` on a free loopback port with a fresh cache (and the trivial app on
another), then drives them with a minimal keep-alive HTTP/1.1 client (raw sockets, so the
client costs little of the CPU the server needs). Each kind of request is measured the same
way: sequential latency on one connection, requests/s over several connections, and the
server's CPU time per request (its whole process tree, from /proc: a cost that the load of a
shared machine does not inflate as it does times). The kinds take turns in rounds, so that
such load falls on all of them alike (latency over all rounds' requests, requests/s the
median of the rounds).

- identical: the same bytes again (the hot path's body digest);
- respelled JSON: the same request with other JSON whitespace, different bytes every time;
- respelled KIR: the same module with other comments and indentation, different every time;
- trivial FastAPI: `POST` of the same body to an endpoint that parses it and answers `{}`.

Goals on the 2-core reference machine: identical hit p50 <= 2 ms, p99 <= 10 ms, >= 1,500
requests/s; a respelled hit costs at most 2x an identical one (p50 and requests/s).

    python bench/service.py [--hits N] [--seconds S] [--rounds R] [--connections C] [--workers W] [--cold N]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from collections.abc import Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, print_table, write_results

LOOPBACK = "127.0.0.1"
SAMPLE = ROOT / "ir_samples" / "row_softmax.kir"
RESPELLED_COST_LIMIT = 2.0
WHITESPACE_DIGITS = 13  # 3**13 distinct JSON respellings
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
STREAM_STRIDE = 100_000  # each stream of respellings starts this far from the previous one
# The trivial baseline: FastAPI parses the JSON body and answers a constant, served like the service.
TRIVIAL_SERVER = """
import sys
from fastapi import Body, FastAPI
from intentc.cli.serve import serve_app
app = FastAPI()

@app.post("/v1/compile")
async def compile_nothing(body: dict = Body(...)):
    return {}

@app.get("/readyz")
async def readyz():
    return {}

serve_app(app, sys.argv[1], int(sys.argv[2]))
"""


class Connection:
    """One keep-alive HTTP/1.1 connection that POSTs JSON to /v1/compile."""

    def __init__(self, port: int):
        self.socket = socket.create_connection((LOOPBACK, port))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def compile(self, body: bytes) -> tuple[int, bytes]:
        head = (f"POST /v1/compile HTTP/1.1\r\nHost: {LOOPBACK}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        self.socket.sendall(head + body)
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self._receive()
        header, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status = int(header.split(b" ", 2)[1])
        length = next(int(line.split(b":")[1]) for line in header.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(self.buffer) < length:
            self.buffer += self._receive()
        payload, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, payload

    def _receive(self) -> bytes:
        chunk = self.socket.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        return chunk


def request(extent: int, source: str | None = None) -> dict:
    return {"source": SAMPLE.read_text() if source is None else source, "kernel": "row_softmax", "target": "kir",
            "specialization": {"extents": {"N": extent}}}


def request_body(extent: int) -> bytes:
    return json.dumps(request(extent)).encode()


def identical_bodies(first: int) -> Iterator[bytes]:
    return itertools.repeat(request_body(0))


def json_respelled_bodies(first: int) -> Iterator[bytes]:
    """The request with a different run of JSON whitespace (`first`, `first + 1`, ... in base 3,
    one space, newline or tab per digit) before its first member: new bytes every time."""
    compact = json.dumps(request(0), separators=(",", ":")).encode()
    for index in itertools.count(first):
        digits = [b" \n\t"[(index // 3 ** k) % 3:][:1] for k in range(WHITESPACE_DIGITS)]
        yield b"{" + b"".join(digits) + compact[1:]


def kir_respelled_bodies(first: int) -> Iterator[bytes]:
    """The module re-indented, with a different comment (`first`, `first + 1`, ...) every time."""
    source = SAMPLE.read_text().replace("\n  ", "\n\t   ")
    head, tail = json.dumps(request(0, source)).encode().split(b'"source": "', 1)
    for index in itertools.count(first):
        yield head + b'"source": "// respelled ' + str(index).encode() + b"\\n" + tail


def start_server(port: int, cache_dir: str, workers: int) -> subprocess.Popen:
    return start_process([sys.executable, "-c", "import sys; from intentc.cli import main; sys.exit(main())",
                          "serve", "--host", LOOPBACK, "--port", str(port), "--cache-dir", cache_dir,
                          "--workers", str(workers)], port)


def start_trivial_server(port: int) -> subprocess.Popen:
    return start_process([sys.executable, "-c", TRIVIAL_SERVER, LOOPBACK, str(port)], port)


def start_process(command: list[str], port: int) -> subprocess.Popen:
    """Start a server and wait until GET /readyz answers 200."""
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((LOOPBACK, port), timeout=1) as probe:
                probe.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
                if b" 200 " in probe.recv(1024):
                    return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"{command[:3]} did not become ready")


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of a process and all its descendants alive now (from /proc):
    the server's cost, which the load of a shared machine does not inflate as it does time."""
    parents, cpu = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # the process has gone
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        cpu[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    def descends(pid: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = parents.get(pid, 0)
        return False
    return sum(seconds for pid, seconds in cpu.items() if descends(pid))


def latency_samples(port: int, bodies: Iterator[bytes], count: int, expect: bytes) -> list[float]:
    """Seconds of each of `count` sequential requests on one connection."""
    connection = Connection(port)
    samples = []
    for body in itertools.islice(bodies, count):
        started = time.perf_counter()
        status, payload = connection.compile(body)
        samples.append(time.perf_counter() - started)
        assert status == 200 and expect in payload, payload[:200]
    return samples


def latency_summary(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"requests": len(ordered), "p50_ms": 1000 * ordered[len(ordered) // 2],
            "p99_ms": 1000 * ordered[int(len(ordered) * 0.99)], "mean_ms": 1000 * statistics.fmean(ordered)}


def _run_all(threads: list[threading.Thread]) -> float:
    """Start the threads together and wait for all; the seconds they took."""
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def throughput(port: int, streams: Callable[[], Iterator[bytes]], connections: int, seconds: float) -> dict:
    """Requests/s over `connections` keep-alive connections for `seconds`; each connection
    sends its own stream of bodies (`streams()` is called once per connection)."""
    counts = [0] * connections
    stop = time.monotonic() + seconds

    def drive(index: int, stream: Iterator[bytes]) -> None:
        connection = Connection(port)
        while time.monotonic() < stop:
            status, _ = connection.compile(next(stream))
            assert status == 200
            counts[index] += 1
    elapsed = _run_all([threading.Thread(target=drive, args=(i, streams())) for i in range(connections)])
    return {"connections": connections, "seconds": elapsed, "requests": sum(counts),
            "requests_per_s": sum(counts) / elapsed}


def cold_throughput(port: int, concurrency: int, count: int, first_extent: int) -> dict:
    bodies = [request_body(first_extent + i) for i in range(count)]
    cursor = iter(range(count))
    lock = threading.Lock()
    statuses = []

    def drive() -> None:
        connection = Connection(port)
        while True:
            with lock:
                index = next(cursor, None)
            if index is None:
                return
            status, payload = connection.compile(bodies[index])
            statuses.append((status, b'"status":"miss"' in payload))
    elapsed = _run_all([threading.Thread(target=drive) for _ in range(concurrency)])
    assert statuses == [(200, True)] * count, statuses[:3]
    return {"concurrency": concurrency, "compiles": count, "seconds": elapsed, "compiles_per_s": count / elapsed}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


# kind of request -> (the server that answers it, its bodies from a first index, what a 200 holds)
KINDS = {"identical": ("service", identical_bodies, b'"status":"hit"'),
         "respelled JSON": ("service", json_respelled_bodies, b'"status":"hit"'),
         "respelled KIR": ("service", kir_respelled_bodies, b'"status":"hit"'),
         "trivial FastAPI": ("trivial", identical_bodies, b"{}")}


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--hits", type=int, default=3000, help="sequential requests of each kind, in all")
    options.add_argument("--seconds", type=float, default=5.0, help="throughput time of each kind, in all")
    options.add_argument("--rounds", type=int, default=5,
                         help="the kinds take turns this many times (a shared machine's load hits them alike)")
    options.add_argument("--connections", type=int, default=8, help="connections of the throughput runs")
    options.add_argument("--workers", type=int, default=2, help="compile workers of the server")
    options.add_argument("--cold", type=int, default=30, help="cold compiles per concurrency level")
    args = options.parse_args()

    load_at_start = os.getloadavg()[0]
    ports = {"service": free_port(), "trivial": free_port()}
    firsts = itertools.count(0, STREAM_STRIDE)  # every stream of respelled bodies starts afresh
    samples = {kind: [] for kind in KINDS}
    rates = {kind: [] for kind in KINDS}
    cpu = {kind: [0.0, 0] for kind in KINDS}  # server CPU seconds, requests
    with tempfile.TemporaryDirectory(prefix="intentc-bench-") as cache_dir:
        servers = {"service": start_server(ports["service"], cache_dir, args.workers),
                   "trivial": start_trivial_server(ports["trivial"])}
        try:
            Connection(ports["service"]).compile(request_body(0))  # the entry every hit below finds
            for _ in range(args.rounds):
                for kind, (server, bodies, expect) in KINDS.items():
                    port, pid = ports[server], servers[server].pid
                    cpu_before = tree_cpu_seconds(pid)
                    samples[kind] += latency_samples(port, bodies(next(firsts)), args.hits // args.rounds, expect)
                    run = throughput(port, lambda make=bodies: make(next(firsts)), args.connections,
                                     args.seconds / args.rounds)
                    rates[kind].append(run["requests_per_s"])
                    cpu[kind][0] += tree_cpu_seconds(pid) - cpu_before
                    cpu[kind][1] += args.hits // args.rounds + run["requests"]
            cold = [cold_throughput(ports["service"], c, args.cold, 1000 * (c + 1)) for c in (1, 2, 4)]
        finally:
            for server in servers.values():
                server.terminate()
                server.wait(15)
    results = {kind: {"latency": latency_summary(samples[kind]), "server_cpu_ms": 1000 * cpu[kind][0] / cpu[kind][1],
                      "requests_per_s": statistics.median(rates[kind]), "requests_per_s_by_round": rates[kind]}
               for kind in KINDS}

    print_table(["requests", "p50 ms", "p99 ms", "mean ms", "req/s (median of rounds)", "server CPU ms/request"],
                [[kind, r["latency"]["p50_ms"], r["latency"]["p99_ms"], r["latency"]["mean_ms"], r["requests_per_s"],
                  r["server_cpu_ms"]] for kind, r in results.items()])
    print()
    print_table(["cold compiles", "concurrency", "compiles/s"],
                [[f"{row['compiles']} x row_softmax (kir)", row["concurrency"], row["compiles_per_s"]] for row in cold])
    identical = results["identical"]
    respelled_cost = {kind: {"p50": results[kind]["latency"]["p50_ms"] / identical["latency"]["p50_ms"],
                             "throughput": identical["requests_per_s"] / results[kind]["requests_per_s"],
                             "server_cpu": results[kind]["server_cpu_ms"] / identical["server_cpu_ms"]}
                      for kind in ("respelled JSON", "respelled KIR")}
    goals = {"hit_p50_ms": 2.0, "hit_p99_ms": 10.0, "hit_requests_per_s": 1500,
             "respelled_cost_max": RESPELLED_COST_LIMIT}
    met = (identical["latency"]["p50_ms"] <= goals["hit_p50_ms"]
           and identical["latency"]["p99_ms"] <= goals["hit_p99_ms"]
           and identical["requests_per_s"] >= goals["hit_requests_per_s"]
           and all(cost <= RESPELLED_COST_LIMIT for costs in respelled_cost.values() for cost in costs.values()))
    print(f"\nrespelled cost (x identical): {json.dumps(respelled_cost)}")
    print(f"goals {goals}: {'met' if met else 'NOT met'} (1-minute load average {load_at_start:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} CPUs)")
    path = write_results("service", {"workers": args.workers, "connections": args.connections, "rounds": args.rounds,
                                     "requests": results, "respelled_cost": respelled_cost, "cold_compiles": cold,
                                     "goals": goals, "goals_met": met,
                                     "load_average_1m": {"start": load_at_start, "end": os.getloadavg()[0]}})
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
