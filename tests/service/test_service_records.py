"""What the cache serves, against a real server: records bound to their key on disk, and records
that pass their seal but hold no entry (a clean miss, never a 500)."""
from __future__ import annotations

from harness import post_compile, ServiceProcess
from intentc.cache import RecordSeal, record_name


def entry_path(service, key: str):
    return service.cache_dir / "entry" / key[:2] / key


def test_a_disk_record_copied_to_another_key_is_not_served(service, distinct_request):
    body_a, body_b = distinct_request(), distinct_request()
    compiled_a, compiled_b = post_compile(service, body_a).json(), post_compile(service, body_b).json()
    assert compiled_a["artifacts"] != compiled_b["artifacts"]
    entry_path(service, compiled_b["key"]).write_bytes(entry_path(service, compiled_a["key"]).read_bytes())
    failures = service.metric("intentc_integrity_failures_total", tier="disk")
    again = post_compile(service, body_b).json()
    assert (again["key"], again["status"]) == (compiled_b["key"], "miss")
    assert again["artifacts"] == compiled_b["artifacts"]
    assert service.metric("intentc_integrity_failures_total", tier="disk") == failures + 1


def test_a_sealed_record_that_is_not_json_is_a_miss_and_is_replaced(service, cold_request):
    body = cold_request()
    compiled = post_compile(service, body).json()
    path = entry_path(service, compiled["key"])
    path.write_bytes(RecordSeal().seal(record_name("entry", compiled["key"]), b"\xff not json"))
    unreadable = service.metric("intentc_unreadable_entries_total", tier="disk")
    again = post_compile(service, body)
    assert again.status_code == 200
    assert (again.json()["status"], again.json()["artifacts"]) == ("miss", compiled["artifacts"])
    assert service.metric("intentc_unreadable_entries_total", tier="disk") == unreadable + 1
    assert post_compile(service, body).json()["status"] == "hit"  # the record was replaced
    assert b"not json" not in path.read_bytes()


def test_a_sealed_alias_that_holds_no_key_is_resolved_again(service, cold_request, tmp_path):
    body = cold_request()
    compiled = post_compile(service, body).json()
    tampered = 0
    for path in (service.cache_dir / "alias").glob("*/*"):
        if path.read_bytes().endswith(compiled["key"].encode()):
            path.write_bytes(RecordSeal().seal(record_name("alias", path.name), b"[1, 2, 3]"))
            tampered += 1
    assert tampered == 1
    # A second server on the same folder has no aliases in memory: it reads the tampered one.
    fresh = ServiceProcess(tmp_path, cache_dir=service.cache_dir, workers=1).start()
    try:
        again = post_compile(fresh, body)
        assert again.status_code == 200
        assert (again.json()["key"], again.json()["status"]) == (compiled["key"], "hit")
        assert fresh.metric("intentc_unreadable_entries_total", tier="disk") == 1
    finally:
        fresh.stop()
