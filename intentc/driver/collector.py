"""Python's cycle collector paused for the length of a compile.

A compile builds tens of thousands of container objects that live until its end (llvmlite's
IR is cyclic: instructions point at their block, blocks at their function), so the
collector's young collections find nothing to free, promote all of it, and every few
compiles a full collection walks the whole heap: on the dev VM, compiling every sample to PTX
twice in one process spent 1.5 of 12 CPU seconds in the collector, in pauses of up to 0.15 s
that land in whichever stage is running (10.8 s with the pause, the collection included). Paused, the compile's objects stay in the youngest generation, and one young collection at
the end (inside the compile's time) frees them: one walk over the compile's own objects.
Nested and concurrent compiles share the pause; the last one to finish resumes it. Most of
that garbage (the lowered IR, let go once printed) is freed before the end, on a second
thread while LLVM emits the PTX (`codegen/collection.py`), so the end's collection has
little left to walk.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    global _depth, _resume
    with _LOCK:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            last = _depth == 0 and _resume
            if last:
                gc.enable()
        if last:
            gc.collect(0)
