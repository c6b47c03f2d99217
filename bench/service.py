"""The compile service under load: cache-hit latency and requests/s, cold-compile throughput.

Starts `intentc serve` on a free loopback port with a fresh cache, then drives it with a
minimal keep-alive HTTP/1.1 client (raw sockets, so the client costs little of the CPU the
server needs). Goals on the 2-core reference machine: hit p50 ≤ 2 ms, p99 ≤ 10 ms,
≥ 1,500 requests/s.

    python bench/service.py [--hits N] [--seconds S] [--connections C] [--workers W]
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, print_table, write_results

LOOPBACK = "127.0.0.1"
SAMPLE = ROOT / "ir_samples" / "row_softmax.kir"


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


def request_body(extent: int) -> bytes:
    return json.dumps({"source": SAMPLE.read_text(), "kernel": "row_softmax", "target": "kir",
                       "specialization": {"extents": {"N": extent}}}).encode()


def start_server(port: int, cache_dir: str, workers: int) -> subprocess.Popen:
    command = [sys.executable, "-c", "import sys; from intentc.cli import main; sys.exit(main())", "serve",
               "--host", LOOPBACK, "--port", str(port), "--cache-dir", cache_dir, "--workers", str(workers)]
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
    raise RuntimeError("the service did not become ready")


def hit_latency(port: int, body: bytes, count: int) -> dict:
    connection = Connection(port)
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        status, payload = connection.compile(body)
        samples.append(time.perf_counter() - started)
        assert status == 200 and b'"status":"hit"' in payload, payload[:200]
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


def hit_throughput(port: int, body: bytes, connections: int, seconds: float) -> dict:
    counts = [0] * connections
    stop = time.monotonic() + seconds

    def drive(index: int) -> None:
        connection = Connection(port)
        while time.monotonic() < stop:
            status, _ = connection.compile(body)
            assert status == 200
            counts[index] += 1
    elapsed = _run_all([threading.Thread(target=drive, args=(i,)) for i in range(connections)])
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


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--hits", type=int, default=3000, help="sequential cache hits for the latency")
    options.add_argument("--seconds", type=float, default=5.0, help="duration of the throughput run")
    options.add_argument("--connections", type=int, default=8, help="connections of the throughput run")
    options.add_argument("--workers", type=int, default=2, help="compile workers of the server")
    options.add_argument("--cold", type=int, default=30, help="cold compiles per concurrency level")
    args = options.parse_args()

    with tempfile.TemporaryDirectory(prefix="intentc-bench-") as cache_dir:
        port = free_port()
        server = start_server(port, cache_dir, args.workers)
        try:
            warm = request_body(0)
            Connection(port).compile(warm)
            latency = hit_latency(port, warm, args.hits)
            throughput = hit_throughput(port, warm, args.connections, args.seconds)
            cold = [cold_throughput(port, c, args.cold, 1000 * (c + 1)) for c in (1, 2, 4)]
        finally:
            server.terminate()
            server.wait(15)

    print_table(["cache hits", "p50 ms", "p99 ms", "mean ms", "req/s", "connections"],
                [["sequential", latency["p50_ms"], latency["p99_ms"], latency["mean_ms"], "", 1],
                 ["concurrent", "", "", "", throughput["requests_per_s"], args.connections]])
    print()
    print_table(["cold compiles", "concurrency", "compiles/s"],
                [[f"{row['compiles']} x row_softmax (kir)", row["concurrency"], row["compiles_per_s"]] for row in cold])
    goals = {"hit_p50_ms": 2.0, "hit_p99_ms": 10.0, "hit_requests_per_s": 1500}
    met = (latency["p50_ms"] <= goals["hit_p50_ms"] and latency["p99_ms"] <= goals["hit_p99_ms"]
           and throughput["requests_per_s"] >= goals["hit_requests_per_s"])
    print(f"\ngoals {goals}: {'met' if met else 'NOT met'}")
    path = write_results("service", {"workers": args.workers, "hit_latency": latency, "hit_throughput": throughput,
                                     "cold_compiles": cold, "goals": goals, "goals_met": met})
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
