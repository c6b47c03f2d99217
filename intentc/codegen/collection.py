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
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collecting_meanwhile() -> Iterator[None]:
    """Collects the youngest generation on another thread while the block makes one long LLVM
    call (and nothing else in Python: the collection holds the GIL while it runs, so a block
    that ran Python would wait for it)."""
    start = threading.Event()
    collector = threading.Thread(target=_collect_when, args=(start,), name="intentc-collect", daemon=True)
    collector.start()
    # Set just before the call: the collector wakes as the call releases the GIL, not before
    # (had it started at once, the call would have waited for the GIL behind it).
    start.set()
    try:
        yield
    finally:
        collector.join()


def _collect_when(start: threading.Event) -> None:
    start.wait()
    gc.collect(0)
