"""The compile service under load: cache hits (identical and respelled), cold compiles, and a
trivial FastAPI endpoint under the same server settings as the floor of what HTTP costs here.

Starts `intentc serve` on a free loopback port with a fresh cache (and the trivial app on
another), then drives them with a minimal keep-alive HTTP/1.1 client (raw sockets, so the
client costs little of the CPU the server needs). Each kind of request is measured the same
way: sequential latency on one connection, then requests/s over several connections.

- identical: the same bytes again (the hot path's body digest);
- respelled JSON: the same request with other JSON whitespace, different bytes every time;
- respelled KIR: the same module with other comments and indentation, different every time;
- trivial FastAPI: `POST` of the same body to an endpoint that parses it and answers `{}`.

Goals on the 2-core reference machine: identical hit p50 <= 2 ms, p99 <= 10 ms, >= 1,500
requests/s; a respelled hit costs at most 2x an identical one (p50 and requests/s).

    python bench/service.py [--hits N] [--seconds S] [--connections C] [--workers W] [--cold N]
"""
from __future__ import annotations

import argparse
import itertools
import json
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
STREAM_STRIDE = 100_000  # each connection's respellings start this far from the previous one's
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


def latency(port: int, bodies: Iterator[bytes], count: int, expect: bytes) -> dict:
    """Sequential requests on one connection: p50, p99 and mean in ms."""
    connection = Connection(port)
    samples = []
    for body in itertools.islice(bodies, count):
        started = time.perf_counter()
        status, payload = connection.compile(body)
        samples.append(time.perf_counter() - started)
        assert status == 200 and expect in payload, payload[:200]
    samples.sort()
    return {"requests": count, "p50_ms": 1000 * samples[len(samples) // 2],
            "p99_ms": 1000 * samples[int(len(samples) * 0.99)], "mean_ms": 1000 * statistics.fmean(samples)}


def _run_all(threads: list[threading.Thread]) -> float:
    """Start the threads together and wait for all; the seconds they took."""
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def throughput(port: int, bodies: Callable[[int], Iterator[bytes]], connections: int, seconds: float) -> dict:
    """Requests/s over `connections` keep-alive connections for `seconds`; each connection
    sends its own stream of bodies (`bodies(first)`, `first` apart by STREAM_STRIDE)."""
    counts = [0] * connections
    stop = time.monotonic() + seconds

    def drive(index: int, stream: Iterator[bytes]) -> None:
        connection = Connection(port)
        while time.monotonic() < stop:
            status, _ = connection.compile(next(stream))
            assert status == 200
            counts[index] += 1
    elapsed = _run_all([threading.Thread(target=drive, args=(i, bodies(STREAM_STRIDE * (1 + i))))
                        for i in range(connections)])
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


KINDS = {"identical": identical_bodies, "respelled JSON": json_respelled_bodies,
         "respelled KIR": kir_respelled_bodies}


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--hits", type=int, default=3000, help="sequential requests for each latency")
    options.add_argument("--seconds", type=float, default=5.0, help="duration of each throughput run")
    options.add_argument("--connections", type=int, default=8, help="connections of the throughput runs")
    options.add_argument("--workers", type=int, default=2, help="compile workers of the server")
    options.add_argument("--cold", type=int, default=30, help="cold compiles per concurrency level")
    args = options.parse_args()

    results = {}
    with tempfile.TemporaryDirectory(prefix="intentc-bench-") as cache_dir:
        port = free_port()
        server = start_server(port, cache_dir, args.workers)
        try:
            Connection(port).compile(request_body(0))  # the entry every hit below finds
            for kind, bodies in KINDS.items():
                results[kind] = {"latency": latency(port, bodies(0), args.hits, b'"status":"hit"'),
                                 "throughput": throughput(port, bodies, args.connections, args.seconds)}
            cold = [cold_throughput(port, c, args.cold, 1000 * (c + 1)) for c in (1, 2, 4)]
        finally:
            server.terminate()
            server.wait(15)
    trivial_port = free_port()
    trivial = start_trivial_server(trivial_port)
    try:
        results["trivial FastAPI"] = {
            "latency": latency(trivial_port, identical_bodies(0), args.hits, b"{}"),
            "throughput": throughput(trivial_port, identical_bodies, args.connections, args.seconds)}
    finally:
        trivial.terminate()
        trivial.wait(15)

    print_table(["requests", "p50 ms", "p99 ms", "mean ms", "req/s", f"(req/s over {args.connections} connections)"],
                [[kind, r["latency"]["p50_ms"], r["latency"]["p99_ms"], r["latency"]["mean_ms"],
                  r["throughput"]["requests_per_s"], ""] for kind, r in results.items()])
    print()
    print_table(["cold compiles", "concurrency", "compiles/s"],
                [[f"{row['compiles']} x row_softmax (kir)", row["concurrency"], row["compiles_per_s"]] for row in cold])
    identical = results["identical"]
    respelled_cost = {kind: {"p50": results[kind]["latency"]["p50_ms"] / identical["latency"]["p50_ms"],
                             "throughput": identical["throughput"]["requests_per_s"]
                             / results[kind]["throughput"]["requests_per_s"]}
                      for kind in ("respelled JSON", "respelled KIR")}
    goals = {"hit_p50_ms": 2.0, "hit_p99_ms": 10.0, "hit_requests_per_s": 1500,
             "respelled_cost_max": RESPELLED_COST_LIMIT}
    met = (identical["latency"]["p50_ms"] <= goals["hit_p50_ms"]
           and identical["latency"]["p99_ms"] <= goals["hit_p99_ms"]
           and identical["throughput"]["requests_per_s"] >= goals["hit_requests_per_s"]
           and all(cost <= RESPELLED_COST_LIMIT for costs in respelled_cost.values() for cost in costs.values()))
    print(f"\nrespelled cost (x identical): {json.dumps(respelled_cost)}")
    print(f"goals {goals}: {'met' if met else 'NOT met'}")
    path = write_results("service", {"workers": args.workers, "connections": args.connections, "requests": results,
                                     "respelled_cost": respelled_cost, "cold_compiles": cold, "goals": goals,
                                     "goals_met": met})
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
