"""LLVM's command-line options are process-wide (`llvm.set_option`): a switch one backend
needs for its code generator would leak into the other's. Every LLVM code generation in
the process (CPU objects, NVPTX PTX) therefore runs under `LOCK`, and a backend that needs
a switch sets it for the length of its own call and restores the default afterwards."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import llvmlite.binding as llvm

LOCK = threading.RLock()


@contextmanager
def switched(name: str, value: str, default: str) -> Iterator[None]:
    """`-name=value` while the block runs (under LOCK), `-name=default` after it."""
    with LOCK:
        llvm.set_option("intentc", f"-{name}={value}")
        try:
            yield
        finally:
            llvm.set_option("intentc", f"-{name}={default}")
