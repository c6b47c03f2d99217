"""Times the reference interpreter on row softmax (256x1024 f32, goal <= 0.2 s) and other samples.

Prints a table and writes bench/results/interp-<date>-<hostname>.json.
"""
from __future__ import annotations

import datetime
import json
import platform
import socket
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from intentc.api import run  # noqa: E402
from intentc.parse import parse  # noqa: E402

SAMPLES = ROOT / "ir_samples"
F32 = np.float32


def _cases(rng):
    return [
        ("row_softmax 256x1024 f32", "row_softmax", "row_softmax",
         {"x": rng.standard_normal((256, 1024)).astype(F32), "t": F32(1.0)}),
        ("layernorm 256x1024 f32", "layernorm", "layernorm",
         {"x": rng.standard_normal((256, 1024)).astype(F32), "gamma": np.ones(1024, F32),
          "beta": np.zeros(1024, F32), "eps": F32(1e-5)}),
        ("vector_add 1M f32", "vector_add", "vector_add",
         {"x": rng.standard_normal(1 << 20).astype(F32), "y": rng.standard_normal(1 << 20).astype(F32)}),
        ("tiled_matmul 256x256x256 f16", "tiled_matmul", "matmul_tiled",
         {"a": rng.standard_normal((256, 256)).astype(np.float16), "b": rng.standard_normal((256, 256)).astype(np.float16)}),
        ("welford 64x1024 f32", "welford_generic_reduce", "welford_rows",
         {"x": rng.standard_normal((64, 1024)).astype(F32)}),
        ("histogram 1M i32", "histogram_masked", "histogram256",
         {"values": rng.integers(-5, 300, 1 << 20).astype(np.int32), "hist": np.zeros(256, np.int32)}),
    ]


def main(repeats: int = 3) -> dict:
    rng = np.random.default_rng(0)
    rows = []
    for label, sample, kernel, inputs in _cases(rng):
        module = parse((SAMPLES / f"{sample}.kir").read_text())
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run(module, kernel, inputs)
            times.append(time.perf_counter() - start)
        rows.append({"case": label, "best_s": min(times), "median_s": sorted(times)[len(times) // 2]})
    width = max(len(r["case"]) for r in rows)
    print(f"{'case':<{width}}  {'best s':>8}  {'median s':>8}")
    for r in rows:
        print(f"{r['case']:<{width}}  {r['best_s']:8.4f}  {r['median_s']:8.4f}")
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "host": socket.gethostname(),
              "python": platform.python_version(), "numpy": np.__version__, "goal": "row_softmax <= 0.2 s",
              "results": rows}
    out = ROOT / "bench" / "results" / f"interp-{datetime.date.today()}-{socket.gethostname()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return result


if __name__ == "__main__":
    main()
