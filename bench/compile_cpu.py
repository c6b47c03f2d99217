"""Compile latency of the CPU backend: KIR text → callable row softmax, in a warm process
(the target machine and pass builder exist once per process). Goal: <= 30 ms.

    .venv/bin/python bench/compile_cpu.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import print_table, write_results  # noqa: E402
from intentc.runtime.cpu import compile_cpu  # noqa: E402


def main() -> None:
    source = (ROOT / "ir_samples" / "row_softmax.kir").read_text()
    compile_cpu(source, "row_softmax")              # warm: imports, LLVM setup, grammar tables
    samples = []
    for _ in range(7):
        start = time.perf_counter()
        kernel = compile_cpu(source, "row_softmax")
        samples.append((time.perf_counter() - start, kernel.timings))
    samples.sort(key=lambda s: s[0])
    total, stages = samples[len(samples) // 2]
    rows = [[stage, seconds * 1e3] for stage, seconds in stages.items()] + [["total", total * 1e3]]
    print_table(["stage (row_softmax)", "ms"], rows)
    path = write_results("compile_cpu", {"kernel": "row_softmax", "total_ms": total * 1e3,
                                         "stages_ms": {k: v * 1e3 for k, v in stages.items()}, "goal_ms": 30})
    print(f"\nwrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
