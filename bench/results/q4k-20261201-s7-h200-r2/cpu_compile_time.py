"""CPU ms to PTX of q4k_q8k_matvec (process_time, best of N), specialized as the GPU table
runs it (NB fixed, dense unit-stride views). Run from a checkout's root:

    PYTHONPATH=$PWD python3 bench/results/q4k-20261201-s7-h200-r2/cpu_compile_time.py 7
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from intentc.driver.compile import compile_kernel

TEXT = Path("ir_samples/q4k_q8k_matvec.kir").read_text()
SPECIALIZATION = {"extents": {"NB": 16}, "unit_stride": ("w", "x", "y"), "contiguous": ("w", "x", "y")}


def best_ms(reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        compile_kernel(TEXT, "q4k_q8k_matvec", "ptx", "sm_90", specialization=SPECIALIZATION)
        best = min(best, time.process_time() - start)
    return best * 1e3


if __name__ == "__main__":
    print(f"{best_ms(int(sys.argv[1]) if len(sys.argv) > 1 else 5):.0f} ms")
