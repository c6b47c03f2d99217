"""Times `intentc.verify.verify` per ir_samples file and on a generated 100-line kernel.

Prints a table (best-of and median milliseconds per verification, excluding parsing) and
writes bench/results/verify-<date>-<hostname>.json. Run: `python bench/verify.py`.
"""
from __future__ import annotations

import datetime
import json
import platform
import socket
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen import generated_module  # noqa: E402

from intentc.parse import parse  # noqa: E402
from intentc.verify import verify  # noqa: E402

REPEATS = 200
GOAL_MS = 2.0


def time_ms(module, repeats: int = REPEATS) -> tuple[float, float]:
    verify(module)  # warm caches and imports
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        verify(module)
        samples.append((time.perf_counter() - start) * 1e3)
    return min(samples), statistics.median(samples)


def cases() -> list[tuple[str, str]]:
    found = [(p.name, p.read_text()) for p in sorted((HERE.parent / "ir_samples").glob("*.kir"))]
    return [*found, ("generated-100-lines", generated_module(100))]


def main() -> int:
    rows = []
    for name, text in cases():
        module = parse(text, name)
        best, median = time_ms(module)
        rows.append({"input": name, "lines": text.count("\n") + 1, "best_ms": round(best, 4),
                     "median_ms": round(median, 4), "diagnostics": len(verify(module))})
    width = max(len(r["input"]) for r in rows)
    print(f"{'input':<{width}}  lines  best ms  median ms  diags")
    for r in rows:
        print(f"{r['input']:<{width}}  {r['lines']:>5}  {r['best_ms']:>7.3f}  {r['median_ms']:>9.3f}  {r['diagnostics']:>5}")
    generated = rows[-1]
    print(f"\ngenerated 100-line kernel: median {generated['median_ms']:.3f} ms (goal <= {GOAL_MS} ms)")
    host = socket.gethostname()
    stamp = datetime.date.today().isoformat()
    out = HERE / "results" / f"verify-{stamp}-{host}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"date": stamp, "host": host, "python": platform.python_version(),
                               "repeats": REPEATS, "goal_ms": GOAL_MS, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
