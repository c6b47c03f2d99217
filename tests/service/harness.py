"""Real processes for the service tests: `intentc serve` and `redis-server` on loopback ports."""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

HERE = Path(__file__).resolve().parent
LOOPBACK = "127.0.0.1"
READY_TIMEOUT_S = 60.0
RUN_CLI = "import sys; from intentc.cli import main; sys.exit(main())"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def in_background(work):
    """Run `work()` in a thread; returns a function that waits for (and returns) its result."""
    executor = concurrent.futures.ThreadPoolExecutor(1)
    future = executor.submit(work)
    executor.shutdown(wait=False)
    return lambda: future.result(timeout=60)


def post_all_in_background(url: str, bodies: list[dict]):
    """POST the compile requests all at once from another thread; returns a function that waits
    for the replies."""
    async def post_all() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=len(bodies))
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
            return await asyncio.gather(*(client.post("/v1/compile", json=body) for body in bodies))
    return in_background(lambda: asyncio.run(post_all()))


def _wait_until(check, timeout_s: float, what: str, interval_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval_s)
    raise TimeoutError(f"timed out waiting for {what}")


class ServiceProcess:
    """`intentc serve` in a subprocess, with the sleepy test target loaded."""

    def __init__(self, work_dir: Path, cache_dir: Path | None = None, redis_url: str | None = None,
                 workers: int = 2, extra_args: tuple[str, ...] = (), environment: dict[str, str] | None = None):
        self.work_dir = work_dir
        self.cache_dir = cache_dir or work_dir / "cache"
        self.control_dir = work_dir / "control"
        self.control_dir.mkdir(parents=True, exist_ok=True)
        self.redis_url, self.workers, self.extra_args = redis_url, workers, extra_args
        self.environment = environment or {}
        self.port = free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> ServiceProcess:
        return self.launch().wait_ready()

    def launch(self) -> ServiceProcess:
        """Start the process without waiting for it (start several, then `wait_ready` each)."""
        command = [sys.executable, "-c", RUN_CLI, "serve", "--host", LOOPBACK, "--port", str(self.port),
                   "--cache-dir", str(self.cache_dir), "--workers", str(self.workers), "--plugin", "sleepy_target",
                   *self.extra_args]
        if self.redis_url:
            command += ["--redis-url", self.redis_url]
        environment = {**os.environ, **self.environment, "INTENTC_TEST_CONTROL_DIR": str(self.control_dir),
                       "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
        # The child keeps its own descriptor of the log; ours is closed once it has started.
        with open(self.work_dir / f"server-{self.port}.log", "ab") as log:
            self.process = subprocess.Popen(command, env=environment, stdout=log, stderr=subprocess.STDOUT)
        return self

    def wait_ready(self) -> ServiceProcess:
        _wait_until(self._ready, READY_TIMEOUT_S, f"the service on port {self.port}")
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"the service exited with {self.process.returncode}: "
                               + (self.work_dir / f"server-{self.port}.log").read_text()[-3000:])
        try:
            return httpx.get(self.url + "/readyz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    # what tests ask of it
    def metric(self, name: str, **labels: str) -> float:
        """A sample of /metrics (0 when absent), e.g. metric("intentc_compiles_total", target="kir")."""
        text = httpx.get(self.url + "/metrics").text
        total = 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                    total += sample.value
        return total

    def wait_for_pid(self, kernel: str, timeout_s: float = 20.0) -> int:
        pid_file = self.control_dir / f"{kernel}.pid"
        _wait_until(pid_file.exists, timeout_s, f"the compile of @{kernel} to start")
        return int(pid_file.read_text())

    def release(self, kernel: str) -> None:
        (self.control_dir / f"{kernel}.release").touch()

    def forkserver_and_workers(self) -> tuple[int, list[int]]:
        """The pid of the pool's forkserver (the server's child) and of the workers it forked."""
        children = _children_by_parent()
        forkserver = next(pid for pid in children.get(self.process.pid, []) if children.get(pid))
        return forkserver, sorted(children[forkserver])

    def readiness(self) -> dict:
        return httpx.get(self.url + "/readyz", timeout=5).json()

    def wait_for_metric(self, name: str, value: float, timeout_s: float = 20.0, **labels: str) -> None:
        _wait_until(lambda: self.metric(name, **labels) >= value, timeout_s, f"{name}{labels} to reach {value}")


def _children_by_parent() -> dict[int, list[int]]:
    """Every process's children, from /proc (`<pid>/stat`: pid (comm) state ppid ...)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # the process has gone
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return children


def wait_until(check, timeout_s: float, what: str) -> None:
    _wait_until(check, timeout_s, what)


class RedisProcess:
    """redis-server on a loopback port; with `password`, clients must AUTH (`requirepass`)."""

    def __init__(self, work_dir: Path, password: str | None = None):
        self.executable = shutil.which("redis-server")
        if self.executable is None:
            raise RuntimeError("redis-server is not installed (.ci/run installs it with apt-get)")
        self.work_dir = work_dir
        self.password = password
        self.port = free_port()
        self.url = f"redis://{LOOPBACK}:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> RedisProcess:
        # The password goes in through stdin (a config file read from "-"), not the command line.
        config = f"requirepass {self.password}\n" if self.password else ""
        self.process = subprocess.Popen(
            [self.executable, "-", "--bind", LOOPBACK, "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(self.work_dir), "--protected-mode", "yes"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.process.stdin.write(config.encode())
        self.process.stdin.close()
        _wait_until(self.ping, 10, f"redis-server on port {self.port}")
        return self

    def client(self):
        import redis
        return redis.Redis.from_url(self.url, password=self.password)

    def start_on_same_port(self) -> RedisProcess:
        """Start again after `stop()` (the data is gone: these servers do not persist)."""
        return self.start()

    def ping(self) -> bool:
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=0.5) as connection:
                if self.password:
                    connection.sendall(f"AUTH {self.password}\r\n".encode())
                    if not connection.recv(16).startswith(b"+OK"):
                        return False
                connection.sendall(b"PING\r\n")
                return connection.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None


def sleepy_request(kernel: str) -> dict:
    """A compile on the test target that blocks until `ServiceProcess.release(kernel)`."""
    return {"source": f"kernel @{kernel}() {{\n}}\n", "kernel": kernel, "target": "test-sleep"}


def post_compile(server: ServiceProcess, body: dict, **kwargs) -> httpx.Response:
    return httpx.post(server.url + "/v1/compile", json=body, timeout=60, **kwargs)
