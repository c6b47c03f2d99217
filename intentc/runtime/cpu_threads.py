"""The thread pool that runs the chunks of a top-level `parallel` (see
`intentc.codegen.cpu.outline`).

A compiled kernel calls `RUNNER(chunk, ctx, status, total)` from native code; the runner
splits [0, total) into chunks and the calling thread and the pool's workers take chunks
from a shared counter until none is left. Chunks are called through ctypes, which releases
the GIL, so they run on all cores. Workers: `INTENTC_CPU_THREADS` if set (1 runs every
chunk on the calling thread), else `os.cpu_count()`.
"""
from __future__ import annotations

import ctypes
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

CHUNK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
# Chunks per thread: a few, so a thread slowed by the machine's other load hands work on.
CHUNKS_PER_THREAD = 4

_pool: ThreadPoolExecutor | None = None
_chunks: dict[int, object] = {}


def thread_count() -> int:
    configured = os.environ.get("INTENTC_CPU_THREADS", "").strip()
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            pass
    return os.cpu_count() or 1


def _get_pool(threads: int) -> ThreadPoolExecutor:
    global _pool
    if _pool is None or _pool._max_workers < threads - 1:
        _pool = ThreadPoolExecutor(max_workers=max(1, threads - 1), thread_name_prefix="intentc-cpu")
    return _pool


def _forget_pool() -> None:
    """A forked child has none of the parent's worker threads: it starts its own pool."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)


def _chunk_function(address: int):
    function = _chunks.get(address)
    if function is None:
        function = _chunks[address] = CHUNK(address)
    return function


def run_chunks(chunk_address: int, ctx: int, status: int, total: int) -> None:
    """Call the chunk function over [0, total) on the calling thread and the pool."""
    chunk = _chunk_function(chunk_address)
    threads = min(thread_count(), total)
    if threads <= 1:
        chunk(ctx, status, 0, total)
        return
    count = min(total, threads * CHUNKS_PER_THREAD)
    bounds = [total * k // count for k in range(count + 1)]
    claims = itertools.count()      # next() is atomic under the GIL

    def work():
        while (k := next(claims)) < count:
            chunk(ctx, status, bounds[k], bounds[k + 1])
    futures = []
    try:
        pool = _get_pool(threads)
        futures = [pool.submit(work) for _ in range(threads - 1)]
    except RuntimeError:            # the interpreter is shutting down: run every chunk here
        pass
    work()
    for future in futures:
        future.result()


# The status word when the runner itself failed (check ids are positive).
STATUS_RUNNER_FAILED = -2


def _runner(chunk, ctx, status, total):
    """The callback native code calls; an exception cannot unwind into it, so a failure is
    recorded in the status word for the launcher to raise."""
    try:
        run_chunks(chunk, ctx, status, total)
    except BaseException:
        ctypes.c_int64.from_address(status).value = STATUS_RUNNER_FAILED


RUNNER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
RUNNER = RUNNER_TYPE(_runner)
RUNNER_ADDRESS = ctypes.cast(RUNNER, ctypes.c_void_p).value


def install(engine, name: str) -> None:
    """Point the runner global `name` of a JIT engine's module at the pool."""
    address = engine.get_global_value_address(name)
    if address:
        ctypes.c_void_p.from_address(address).value = RUNNER_ADDRESS
