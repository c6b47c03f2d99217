"""Shared benchmark plumbing: timing, tables, and result files under bench/results/."""
from __future__ import annotations

import datetime
import json
import platform
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def median_seconds(function, repeat: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def print_table(headers: list[str], rows: list[list]) -> None:
    cells = [headers] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for index, row in enumerate(cells):
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if index == 0:
            print("  ".join("-" * w for w in widths))


def _cell(value) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def write_results(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    host = socket.gethostname()
    path = RESULTS / f"{name}-{now:%Y-%m-%d}-{host}.json"
    document = {
        "benchmark": name, "date": now.isoformat(timespec="seconds"), "host": host,
        "machine": {"platform": platform.platform(), "python": sys.version.split()[0],
                    "processor": platform.processor() or platform.machine()},
        **payload,
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path
