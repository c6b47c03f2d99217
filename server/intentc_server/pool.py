"""A pool of compile worker processes, driven from the event loop without blocking it.

Unlike `concurrent.futures.ProcessPoolExecutor`, one dead worker breaks nothing else: a
worker that exceeds the time limit is killed (SIGKILL) and its request gets `CompileTimeout`;
a worker that dies during a job fails only that job's request with `WorkerCrashed`; a worker
that dies while idle fails no request (it is found dead before a job is given to it, or the
job it could not receive goes to another worker); either way a fresh worker takes its place.
Requests wait for a free worker in a bounded queue; one more than `max_queue` waiting gets
`QueueFull` at once.

A worker is alive while its end of the pipe is open: an idle worker's pipe has nothing to
read, a dead one's reads EOF. That holds whatever happens to the forkserver the workers were
forked from (whose death makes `Process.is_alive()` report every worker dead).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from collections.abc import Callable

from . import worker as worker_module

log = logging.getLogger("intentc.service")
STARTUP_TIMEOUT_S = 120.0
# How often idle workers are checked, so that a dead one is replaced before a job needs it.
WATCH_INTERVAL_S = 0.5


class QueueFull(Exception):
    pass


class CompileTimeout(Exception):
    pass


class WorkerCrashed(Exception):
    pass


class _NotDelivered(Exception):
    """The job could not be sent: the worker had died before it (the job never ran)."""


@dataclass(eq=False)
class _Worker:
    process: multiprocessing.Process
    connection: object
    busy: bool = False
    exited: bool = False  # seen dead: its pipe reached EOF

    @property
    def pid(self) -> int:
        return self.process.pid

    def idle_and_alive(self) -> bool:
        """An idle worker's pipe has nothing to read; a readable one is at EOF (the worker died)."""
        try:
            self.exited = self.exited or self.connection.poll()
        except OSError:  # the pipe is closed
            self.exited = True
        return not self.exited


class WorkerPool:
    def __init__(self, size: int, max_queue: int, timeout_s: float, plugins: tuple[str, ...] = (),
                 on_queue_wait: Callable[[float], None] = lambda seconds: None,
                 on_busy_change: Callable[[int], None] = lambda delta: None):
        self.size, self.max_queue, self.timeout_s, self.plugins = size, max_queue, timeout_s, plugins
        self._on_queue_wait, self._on_busy_change = on_queue_wait, on_busy_change
        # Workers fork from a forkserver that has the compiler loaded (preload.py): fast starts
        # and restarts, and no fork of this multi-threaded process.
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["intentc_server.preload", *plugins])
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._workers: set[_Worker] = set()
        self._waiting = 0
        self._closed = False
        self._respawns: set[asyncio.Task] = set()
        self._watcher: asyncio.Task | None = None
        self._threads = concurrent.futures.ThreadPoolExecutor(size + 2, thread_name_prefix="intentc-worker-io")

    @property
    def live_workers(self) -> int:
        """Workers running a job or idle and alive (what readiness reports)."""
        return sum(1 for w in self._workers if w.busy or w.idle_and_alive())

    @property
    def waiting(self) -> int:
        return self._waiting

    async def start(self) -> None:
        for started in await asyncio.gather(*(asyncio.to_thread(self._spawn) for _ in range(self.size))):
            self._adopt(started)
        self._watcher = asyncio.create_task(self._watch_idle_workers())

    async def run(self, job: str, *arguments) -> tuple:
        """Run one job on a free worker; its reply tuple (see `worker.py`)."""
        if self._waiting >= self.max_queue:
            raise QueueFull(f"{self._waiting} requests already wait for a worker")
        while True:
            worker = await self._take_idle_worker()
            try:
                return await self._run_on(worker, job, arguments)
            except _NotDelivered:
                log.warning("worker %d had died while idle; the %s job goes to another worker", worker.pid, job)
                self._replace(worker)

    async def _take_idle_worker(self) -> _Worker:
        """The next idle worker that is alive (dead ones found on the way are replaced)."""
        self._waiting += 1
        queued = time.perf_counter()
        try:
            while True:
                worker = await self._idle.get()
                if worker in self._workers and worker.idle_and_alive():
                    break
                if worker in self._workers:
                    log.warning("worker %d died while idle; replaced", worker.pid)
                    self._replace(worker)
        finally:
            self._waiting -= 1
        self._on_queue_wait(time.perf_counter() - queued)
        worker.busy = True
        return worker

    async def _run_on(self, worker: _Worker, job: str, arguments: tuple) -> tuple:
        self._on_busy_change(1)
        try:
            reply = await asyncio.wait_for(self._exchange(worker, (job, arguments)), self.timeout_s)
        except TimeoutError:
            log.warning("worker %d passed the %.1fs limit on a %s job; killed", worker.pid, self.timeout_s, job)
            self._replace(worker)
            raise CompileTimeout(f"the {job} step took longer than {self.timeout_s:g}s") from None
        except (EOFError, OSError) as error:
            log.error("worker %d died during a %s job", worker.pid, job)
            worker.exited = True
            self._replace(worker)
            raise WorkerCrashed(f"the compile worker died ({type(error).__name__})") from None
        finally:
            self._on_busy_change(-1)
        worker.busy = False
        self._idle.put_nowait(worker)
        return reply

    async def _watch_idle_workers(self) -> None:
        while not self._closed:
            await asyncio.sleep(WATCH_INTERVAL_S)
            for worker in [w for w in self._workers if not w.busy and not w.idle_and_alive()]:
                log.warning("worker %d died while idle; replaced", worker.pid)
                self._replace(worker)

    async def close(self) -> None:
        self._closed = True
        for task in [*self._respawns, *([self._watcher] if self._watcher else [])]:
            task.cancel()
        for worker in list(self._workers):
            _kill(worker)
        await asyncio.gather(*(asyncio.to_thread(w.process.join, 5) for w in list(self._workers)))
        self._workers.clear()
        self._threads.shutdown(wait=False, cancel_futures=True)

    async def _exchange(self, worker: _Worker, message: tuple) -> tuple:
        """Send a job and wait for the reply in a thread of our own (blocking pipe I/O stays off
        the event loop; a killed worker ends the wait with EOFError)."""
        def exchange() -> tuple:
            try:
                worker.connection.send(message)
            except OSError as error:  # EPIPE: nobody reads the other end any more
                worker.exited = True
                raise _NotDelivered() from error
            return worker.connection.recv()
        return await asyncio.get_running_loop().run_in_executor(self._threads, exchange)

    def _spawn(self) -> _Worker:
        """Start a worker process and wait (in a thread) until it has loaded the compiler."""
        parent_end, child_end = self._context.Pipe()
        process = self._context.Process(target=worker_module.serve, args=(child_end, self.plugins),
                                        daemon=True, name="intentc-compile-worker")
        process.start()
        child_end.close()
        if not parent_end.poll(STARTUP_TIMEOUT_S):
            process.kill()
            raise RuntimeError("a compile worker did not start in time")
        try:
            hello = parent_end.recv()
        except EOFError:
            hello = ("exited", process.exitcode)
        if hello[0] != "ready":
            raise RuntimeError(f"a compile worker failed to start: {hello!r}")
        return _Worker(process, parent_end)

    def _adopt(self, worker: _Worker) -> None:
        self._workers.add(worker)
        self._idle.put_nowait(worker)

    def _replace(self, worker: _Worker) -> None:
        _kill(worker)
        worker.connection.close()
        self._workers.discard(worker)
        if not self._closed:
            task = asyncio.create_task(self._respawn(worker))
            self._respawns.add(task)
            task.add_done_callback(self._respawns.discard)

    async def _respawn(self, dead: _Worker) -> None:
        await asyncio.to_thread(dead.process.join, 5)
        try:
            fresh = await asyncio.to_thread(self._spawn)
        except Exception:
            log.exception("could not start a replacement compile worker")
            return
        if self._closed:
            _kill(fresh)
        else:
            self._adopt(fresh)


def _kill(worker: _Worker) -> None:
    """SIGKILL a worker not seen dead. By pid: `Process.kill()` does nothing once the forkserver
    has died (the process then counts as exited)."""
    if worker.exited:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker.pid, signal.SIGKILL)
    worker.exited = True
