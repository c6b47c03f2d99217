"""The per-sample table survives its kernels: a fake worker process stands in for the GPU
one (same protocol) and crashes, hangs, or exhausts the device heap on chosen kernels."""
from __future__ import annotations

import sys

from bench import gpu_samples

FAKE_WORKER = r'''
import json, os, sys, time
ids, marker = sys.argv[1].split(","), sys.argv[2]
for ident in ids:
    print("@@ " + json.dumps({"start": ident}), flush=True)
    kind = ident.split(":")[0]
    if kind == "crash":
        os._exit(3)
    if kind == "hang":
        time.sleep(30)
    if kind == "heap" and not os.path.exists(marker):
        open(marker, "w").close()
        row = {"id": ident, "error": "DiagnosticError: CUDA: the device heap is exhausted", "heap": "exhausted"}
        print("@@ " + json.dumps({"row": row}), flush=True)
        sys.exit(0)
    print("noise from the kernel's libraries", flush=True)
    print("@@ " + json.dumps({"row": {"id": ident, "ratio": 1.0}}), flush=True)
'''


def run_table(monkeypatch, tmp_path, ids, **options):
    script = tmp_path / "worker.py"
    script.write_text(FAKE_WORKER)
    monkeypatch.setattr(gpu_samples, "worker_command",
                        lambda pending, args: [sys.executable, str(script), ",".join(pending), str(tmp_path / "heap")])
    args = gpu_samples.parser().parse_args(["--kernel-timeout-s", "2", *options.get("argv", [])])
    return {row["id"]: row for row in gpu_samples.orchestrate(ids, args)}


def test_a_crash_and_a_hang_become_error_rows_and_the_table_goes_on(monkeypatch, tmp_path):
    rows = run_table(monkeypatch, tmp_path, ["ok:a", "crash:b", "ok:c", "hang:d", "ok:e"])
    assert list(rows) == ["ok:a", "crash:b", "ok:c", "hang:d", "ok:e"]
    assert "exit code 3" in rows["crash:b"]["error"]
    assert "timeout" in rows["hang:d"]["error"]
    assert all(rows[ident] == {"id": ident, "ratio": 1.0} for ident in ("ok:a", "ok:c", "ok:e"))


def test_an_exhausted_heap_is_retried_once_in_a_fresh_worker(monkeypatch, tmp_path):
    rows = run_table(monkeypatch, tmp_path, ["ok:a", "heap:b", "ok:c"])
    assert rows["heap:b"] == {"id": "heap:b", "ratio": 1.0}
    assert len(rows) == 3


def test_the_time_limit_leaves_error_rows_for_what_did_not_run(monkeypatch, tmp_path):
    rows = run_table(monkeypatch, tmp_path, ["hang:a", "ok:b"], argv=["--time-limit-s", "1"])
    assert "timeout" in rows["hang:a"]["error"] and "time limit" in rows["ok:b"]["error"]
