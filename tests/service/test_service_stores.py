"""The stores on their own: sealed records, the disk store's publish, integrity and eviction."""
from __future__ import annotations

import asyncio
import hashlib
import os

import pytest

from intentc.cache import DiskStore, IntegrityError, RecordSeal, StoreEvents, TieredStore, record_name


class Recorder(StoreEvents):
    def __init__(self):
        self.integrity_failures, self.evictions = 0, 0

    def integrity_failure(self, tier):
        self.integrity_failures += 1

    def evicted(self, count):
        self.evictions += count


def digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


SIGNING_KEY = b"a key the replicas share"


def test_a_sealed_record_round_trips_and_detects_a_flipped_byte():
    sealer = RecordSeal()
    record = sealer.seal("entry:ab", b"payload")
    assert sealer.unseal("entry:ab", record) == b"payload"
    with pytest.raises(IntegrityError):
        sealer.unseal("entry:ab", record[:-1] + b"P")
    with pytest.raises(IntegrityError):
        sealer.unseal("entry:ab", b"no header")


def test_a_record_is_bound_to_its_name():
    for sealer in (RecordSeal(), RecordSeal(SIGNING_KEY)):
        record = sealer.seal(record_name("entry", digest("a")), b"payload")
        with pytest.raises(IntegrityError, match="does not match its name"):
            sealer.unseal(record_name("entry", digest("b")), record)
        with pytest.raises(IntegrityError, match="does not match its name"):
            sealer.unseal(record_name("alias", digest("a")), record)


def test_a_signing_store_accepts_only_records_signed_with_its_key():
    name = record_name("entry", digest("a"))
    signer, other_signer, plain = RecordSeal(SIGNING_KEY), RecordSeal(b"another key of 16+ bytes"), RecordSeal()
    assert signer.unseal(name, signer.seal(name, b"payload")) == b"payload"
    with pytest.raises(IntegrityError, match="needs 'hmac-sha256'"):
        signer.unseal(name, plain.seal(name, b"payload"))
    with pytest.raises(IntegrityError, match="does not match"):
        signer.unseal(name, other_signer.seal(name, b"payload"))
    with pytest.raises(IntegrityError, match="needs 'sha256'"):
        plain.unseal(name, signer.seal(name, b"payload"))
    with pytest.raises(ValueError, match="16 bytes"):
        RecordSeal(b"short")


def test_disk_store_publishes_whole_files_and_leaves_no_temporaries(tmp_path):
    store = DiskStore(tmp_path, max_bytes=1 << 20)
    store.put("entry", digest("a"), b"artifact bytes")
    assert store.get("entry", digest("a")) == b"artifact bytes"
    assert store.get("entry", digest("b")) is None
    assert list((tmp_path / "tmp").iterdir()) == []
    assert store.path("entry", digest("a")).read_bytes() == \
        RecordSeal().seal(record_name("entry", digest("a")), b"artifact bytes")


def test_disk_store_drops_a_corrupted_file(tmp_path):
    events = Recorder()
    store = DiskStore(tmp_path, max_bytes=1 << 20, events=events)
    store.put("entry", digest("a"), b"good")
    path = store.path("entry", digest("a"))
    path.write_bytes(path.read_bytes().replace(b"good", b"evil"))
    assert store.get("entry", digest("a")) is None
    assert events.integrity_failures == 1
    assert not path.exists()


def test_disk_store_drops_a_record_copied_from_another_name(tmp_path):
    events = Recorder()
    store = DiskStore(tmp_path, max_bytes=1 << 20, events=events, sealer=RecordSeal(SIGNING_KEY))
    store.put("entry", digest("a"), b"artifacts of a")
    store.put("entry", digest("b"), b"artifacts of b")
    store.path("entry", digest("b")).write_bytes(store.path("entry", digest("a")).read_bytes())
    assert store.get("entry", digest("b")) is None
    assert store.get("entry", digest("a")) == b"artifacts of a"
    assert events.integrity_failures == 1


def test_disk_store_evicts_least_recently_used_first(tmp_path):
    events = Recorder()
    record_size = len(RecordSeal().seal(record_name("entry", digest("a")), bytes(1000)))
    store = DiskStore(tmp_path, max_bytes=3 * record_size, events=events)
    for index, name in enumerate("abc"):
        store.put("entry", digest(name), bytes(1000))
        os.utime(store.path("entry", digest(name)), (1000 + index, 1000 + index))
    os.utime(store.path("entry", digest("a")), (2000, 2000))  # `a` was read last
    store.put("entry", digest("d"), bytes(1000))
    assert events.evictions >= 1
    assert store.contains("entry", digest("a")) and store.contains("entry", digest("d"))
    assert not store.contains("entry", digest("b"))
    assert store.total_bytes() <= store.max_bytes


def test_disk_store_refuses_names_that_are_not_digests(tmp_path):
    store = DiskStore(tmp_path, max_bytes=1 << 20)
    with pytest.raises(ValueError):
        store.get("entry", "../../etc/passwd")


def test_tiered_store_without_redis_serves_from_disk_and_memory(tmp_path):
    async def scenario():
        store = TieredStore(DiskStore(tmp_path, max_bytes=1 << 20))
        await store.put("alias", digest("request"), b"key")
        await store.put("entry", digest("key"), b"entry")
        return (await store.get("alias", digest("request")), await store.get("entry", digest("key")),
                await store.get("entry", digest("other")), await store.claim(digest("key"), 1.0))
    alias, entry, missing, claimed = asyncio.run(scenario())
    assert alias == (b"key", "memory")
    assert entry == (b"entry", "disk")
    assert missing is None
    assert claimed is True
