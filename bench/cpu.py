"""The CPU backend against numpy, side by side in one run, as ratios (numpy time / ours:
above 1 means faster than numpy). Kernels are compiled once and launched in place.

    .venv/bin/python bench/cpu.py [--quick]

Prints a table and writes bench/results/cpu-<date>-<hostname>.json.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import median_seconds, print_table, write_results  # noqa: E402
from bench.cpu_kernels import MATMUL, ROW_SUM, UNIFORM  # noqa: E402
from intentc.interp.rng import uniform as numpy_uniform  # noqa: E402
from intentc.runtime.cpu import compile_cpu  # noqa: E402

SAMPLES = ROOT / "ir_samples"
F32 = np.float32


def sample(name: str) -> str:
    return (SAMPLES / f"{name}.kir").read_text()


def softmax(x, y):
    m = x.max(axis=1, keepdims=True)
    np.subtract(x, m, out=y)
    np.exp(y, out=y)
    y /= y.sum(axis=1, keepdims=True)


def cases(rng, scale: int):
    n = 4_000_000 // scale
    rows = 4096 // scale
    x1, y1 = rng.standard_normal(n).astype(F32), rng.standard_normal(n).astype(F32)
    z1 = np.empty_like(x1)
    m2 = rng.standard_normal((rows, 1024)).astype(F32)
    out2, sums = np.empty_like(m2), np.empty(rows, F32)
    values = rng.integers(0, 256, n).astype(np.int32)
    hist = np.zeros(256, np.int32)
    uniform_out = np.empty(n, F32)
    a, b, c = (rng.standard_normal((128, 128)).astype(F32) for _ in range(3))
    counters = np.arange(n, dtype=np.uint64)
    return [
        ("vector add", sample("vector_add"), "vector_add", {"x": x1, "y": y1, "z": z1}, lambda: np.add(x1, y1, out=z1),
         n * 12),
        ("saxpy", sample("saxpy"), "saxpy", {"a": F32(2.5), "x": x1, "y": y1},
         lambda: np.add(np.multiply(F32(2.5), x1, out=z1), y1, out=y1), n * 12),
        (f"row softmax {rows}x1024", sample("row_softmax"), "row_softmax", {"x": m2, "t": F32(1.0), "y": out2},
         lambda: softmax(m2, out2), m2.nbytes * 2),
        (f"row sum {rows}x1024", ROW_SUM, "row_sum", {"x": m2, "y": sums}, lambda: m2.sum(axis=1, out=sums), m2.nbytes),
        (f"cumsum {rows}x1024", sample("cumsum"), "row_cumsum", {"x": m2, "y": out2},
         lambda: np.cumsum(m2, axis=1, out=out2), m2.nbytes * 2),
        ("histogram 256 bins", sample("histogram_masked"), "histogram256", {"values": values, "hist": hist},
         lambda: np.bincount(values, minlength=256), values.nbytes),
        ("philox uniform", UNIFORM, "uniform", {"seed": np.uint64(7), "y": uniform_out},
         lambda: numpy_uniform(np.uint64(7), counters), n * 4),
        ("matmul 128x128x128", MATMUL, "matmul", {"a": a, "b": b, "c": c}, lambda: np.matmul(a, b, out=c), 3 * a.nbytes),
    ]


def main() -> None:
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(0)
    rows, records = [], []
    for name, source, kernel, arrays, numpy_fn, nbytes in cases(rng, 16 if quick else 1):
        views = [k for k, v in arrays.items() if isinstance(v, np.ndarray) and v.ndim]
        compiled = compile_cpu(source, kernel, {"unit_stride": views})
        ours = median_seconds(functools.partial(compiled.launch, **arrays), repeat=3 if quick else 9)
        theirs = median_seconds(numpy_fn, repeat=3 if quick else 9)
        rows.append([name, ours * 1e3, theirs * 1e3, theirs / ours, nbytes / ours / 1e9])
        records.append({"kernel": name, "intentc_ms": ours * 1e3, "numpy_ms": theirs * 1e3,
                        "speedup_vs_numpy": theirs / ours, "intentc_gbps": nbytes / ours / 1e9})
    print_table(["kernel", "intentc ms", "numpy ms", "numpy/intentc", "intentc GB/s"], rows)
    path = write_results("cpu", {"quick": quick, "results": records})
    print(f"\nwrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
