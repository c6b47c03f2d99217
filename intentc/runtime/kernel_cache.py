"""Compiled kernels cached in this process and on disk, keyed exactly as the compile service
keys its entries (`intentc.cache.key`: canonical comment-free KIR, kernel, target, arch,
options, the normalized specialization, the toolchain), stored as the service stores them
(`intentc.cache.entries`, sealed records in a `DiskStore`).

Directory: `INTENTC_CACHE_DIR`, else `~/.cache/intentc`. Safe under threads (one lock per
key: one thread compiles, the others wait for its entry) and processes (entries are
published by an atomic rename; an `flock` per key makes a second process wait for the first
one's compile and then read its entry instead of compiling again).
"""
from __future__ import annotations

import fcntl
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..cache import entries
from ..cache.disk import DiskStore
from ..cache.key import KeyInputs, compute_key, key_text, toolchain
from ..driver import Request, compile_request
from ..printer import print_module

MAX_BYTES = 2 << 30


@dataclass
class Compiled:
    key: str
    artifacts: dict[str, str | bytes]
    timings: dict[str, float]
    source: str                     # "compiled", "disk" or "memory": where the artifacts came from
    seconds: float = 0.0


def cache_dir() -> Path:
    configured = os.environ.get("INTENTC_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "intentc"


def request_key(request: Request) -> str:
    return compute_key(KeyInputs(source_form="canonical", kir=key_text(print_module(request.module)),
                                 kernel=request.kernel.name, target=request.target, arch=request.arch,
                                 options=request.options, specialization=request.specialization,
                                 toolchain=toolchain(request.target)))


class KernelCache:
    def __init__(self):
        self._memory: dict[str, dict[str, str | bytes]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._stores: dict[Path, DiskStore] = {}

    def artifacts(self, request: Request) -> Compiled:
        """The request's artifacts: from memory, from disk, or compiled (and stored in both)."""
        start = time.perf_counter()
        key = request_key(request)
        with self._key_lock(key):
            if key in self._memory:
                return Compiled(key, self._memory[key], {}, "memory", time.perf_counter() - start)
            store = self._store()
            with _file_lock(store.root / "locks" / key):
                stored = _decode(store.get("entry", key))
                if stored is not None:
                    artifacts, timings, source = stored, {}, "disk"
                else:
                    result = compile_request(request)
                    artifacts, timings, source = result.artifacts, result.timings, "compiled"
                    store.put("entry", key, entries.dump(entries.artifacts_entry(artifacts, timings)))
            self._memory[key] = artifacts
        return Compiled(key, artifacts, timings, source, time.perf_counter() - start)

    def _key_lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def _store(self) -> DiskStore:
        root = cache_dir()
        with self._guard:
            if root not in self._stores:
                self._stores[root] = DiskStore(root, MAX_BYTES)
            return self._stores[root]


def _decode(payload: bytes | None) -> dict[str, str | bytes] | None:
    """The artifacts of a stored entry; None when there is none or it is unreadable (then it is
    compiled again and replaced, as the service does)."""
    if payload is None:
        return None
    try:
        entry = entries.load(payload)
    except entries.UnreadableEntry:
        return None
    return {name: _artifact(name, artifact) for name, artifact in entry["artifacts"].items()}


def _artifact(name: str, artifact: dict) -> str | bytes:
    data = entries.decode_artifact(artifact)
    return data.decode("utf-8") if artifact["encoding"] == "utf-8" else data


@contextmanager
def _file_lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


CACHE = KernelCache()
