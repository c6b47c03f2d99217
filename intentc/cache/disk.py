"""The local store: one file per record under `<root>/<namespace>/<ab>/<digest>`.

Writes go to a temporary file in `<root>/tmp` and are published by an atomic rename, so a
reader sees a whole record or none. Every read checks the record's seal, which binds it to its
name (a bad file, or one copied from another name, is deleted and reported). A size cap is kept
by evicting the least recently used files: a read refreshes the file's mtime, and eviction
removes the oldest mtimes first down to 90% of the cap.
Several processes may share one root; each keeps an estimate of the total and rescans to evict.
"""
from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

from .events import StoreEvents
from .names import NAMESPACES, check_name
from .record import IntegrityError, RecordSeal, record_name

log = logging.getLogger("intentc.cache")
TIER = "disk"
EVICT_TO_FRACTION = 0.9
# A read refreshes recency at most this often per file (one utime per minute, not per hit).
TOUCH_INTERVAL_S = 60.0


class DiskStore:
    def __init__(self, root: str | Path, max_bytes: int, events: StoreEvents | None = None,
                 sealer: RecordSeal | None = None):
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.events = events or StoreEvents()
        self.sealer = sealer or RecordSeal()
        self._temporary = self.root / "tmp"
        self._temporary.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._total = sum(size for _, _, size in self._files())

    def path(self, namespace: str, digest: str) -> Path:
        check_name(namespace, digest)
        return self.root / namespace / digest[:2] / digest

    def get(self, namespace: str, digest: str) -> bytes | None:
        path = self.path(namespace, digest)
        try:
            with open(path, "rb") as file:
                record = file.read()
                modified = os.fstat(file.fileno()).st_mtime
        except FileNotFoundError:
            self.events.lookup(TIER, namespace, False)
            return None
        try:
            payload = self.sealer.unseal(record_name(namespace, digest), record)
        except IntegrityError as error:
            log.warning("cache file %s failed its integrity check (%s); dropped", path, error)
            self.events.integrity_failure(TIER)
            self.events.lookup(TIER, namespace, False)
            self._remove(path)
            return None
        if time.time() - modified > TOUCH_INTERVAL_S:
            _touch(path)
        self.events.lookup(TIER, namespace, True)
        return payload

    def contains(self, namespace: str, digest: str) -> bool:
        return self.path(namespace, digest).is_file()

    def put(self, namespace: str, digest: str, payload: bytes) -> None:
        path = self.path(namespace, digest)
        record = self.sealer.seal(record_name(namespace, digest), payload)
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self._temporary, prefix=digest[:16])
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(record)
            os.replace(temporary, path)
        except BaseException:
            _unlink(Path(temporary))
            raise
        with self._lock:
            self._total += len(record)
            over = self._total > self.max_bytes
        if over:
            self.evict()

    def delete(self, namespace: str, digest: str) -> None:
        self._remove(self.path(namespace, digest))

    def evict(self) -> int:
        """Remove least recently used files until the total is under 90% of the cap."""
        with self._lock:
            files = sorted(self._files())
            total = sum(size for _, _, size in files)
            removed = 0
            for _, path, size in files:
                if total <= self.max_bytes * EVICT_TO_FRACTION:
                    break
                if _unlink(path):
                    removed += 1
                total -= size
            self._total = total
        if removed:
            log.info("evicted %d cache file(s) to stay under %d bytes", removed, self.max_bytes)
            self.events.evicted(removed)
        return removed

    def total_bytes(self) -> int:
        return self._total

    def _files(self):
        """(mtime, path, size) of every record file."""
        for namespace in NAMESPACES:
            for path in (self.root / namespace).glob("*/*"):
                try:
                    status = path.stat()
                except FileNotFoundError:
                    continue
                yield status.st_mtime, path, status.st_size

    def _remove(self, path: Path) -> None:
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return
        if _unlink(path):
            with self._lock:
                self._total -= size


def _touch(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.utime(path)


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False
