"""Python's collection of a compile's garbage on a second core while LLVM works.

A compile's Python objects are mostly the lowered llvmlite IR, cyclic (an instruction points
at its block), so only a collection frees them; the driver pauses the collector for the
compile and collects once at its end (`driver/collector.py`), which was 4 % of every sample's
time to PTX, and 7-13 % of the largest (flash attention on tensor cores: 8-16 ms). Once the
IR is printed and let go (`LoweredKernel.take_text`), it is garbage while LLVM still
optimizes and emits the module; llvmlite's calls release the GIL (ctypes), so a second
thread can free it meanwhile on a free core. The CPU time is the same; the wall time loses
the collection where the machine has a core to spare (and the same as before where it has
none: the compile then waits for the collection as it did at its end).

It frees no LLVM object while LLVM works: the garbage it finds is the Python side's (the
llvmlite IR; `llvmlite.binding` objects stay referenced, or are detached once linked, until
the block ends: `tests/codegen/test_collection.py` inspects every sample's), and were a
binding object among it, its disposal would be an LLVM call like any other, which llvmlite
makes under one process-wide lock that the emitting thread holds for its whole call.
"""
from __future__ import annotations

import gc
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_collector: _Collector | None = None


@contextmanager
def collecting_meanwhile() -> Iterator[None]:
    """Collects the youngest generation on the collector thread while the block makes one
    long LLVM call (and nothing else in Python: the collection holds the GIL while it runs,
    so a block that ran Python would wait for it); the block's end waits for it."""
    done = threading.Event()
    # The collector wakes now but runs once the call releases the GIL, not before (had it run
    # at once, the call would have waited for the GIL behind it).
    _running_collector().requests.put(done)
    try:
        yield
    finally:
        done.wait()


class _Collector(threading.Thread):
    """One thread for the process (a thread started for each compile took 0.1-3 ms to start
    on a loaded machine, in the compile's time): it collects once for each request."""

    def __init__(self) -> None:
        super().__init__(name="intentc-collect", daemon=True)
        self.requests: queue.SimpleQueue[threading.Event] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            done = self.requests.get()
            try:
                _collect()
            finally:
                done.set()


def _collect() -> None:
    gc.collect(0)


def _running_collector() -> _Collector:
    """The collector thread, started on first use (and again in a forked child, which has
    none of its parent's threads)."""
    global _collector
    with _LOCK:
        if _collector is None or not _collector.is_alive():
            _collector = _Collector()
            _collector.start()
        return _collector
