"""2:4 sparse f16 matmul (`ir_samples/sparse_2of4_matmul.kir`, issue #14) on `mma.sp` (the
default) under several ring depths, and on the decoding path (the one 1:2 and 2:4 with
32-position IR steps take), beside torch's semi-structured sparse matmul and its dense matmul,
on the same device data (times: medians of CUDA-event means, `bench.gpu.timed`). Each plan is
the same kernel compiled under another plan: the mapping's choice is data. `sparse_row` is
bench/gpu.py's 2:4 row (through `intentc.load`, the default plan).

    python3 bench/gpu_sparse.py [--size 4096] [--stages 4,6] [--out FILE.json] [--probe]

`--probe` first runs one m16n8k32 block (16 x 32 x 8, small integers: every product and sum
exact) on mma.sp against the interpreter and, where they differ, says whether the lane pair
that supplies the metadata splits it by K halves (the layout used) or by rows.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.gpu import timed  # noqa: E402
from bench.gpu_sample_specs import semi_structured  # noqa: E402

TEXT = (ROOT / "ir_samples" / "sparse_2of4_matmul.kir").read_text()
PAIRS = [p | (q << 2) for p in range(4) for q in range(p + 1, 4)]


def _seconds(fn, reps: int = 10) -> float:
    return sorted(timed(fn, reps) for _ in range(3))[1]


def _operands(m: int, k: int, n: int) -> tuple:
    a = torch.randn(m, k // 2, device="cuda", dtype=torch.float16)
    meta = torch.tensor(PAIRS, dtype=torch.uint8, device="cuda")[torch.randint(0, 6, (m, k // 4), device="cuda")]
    dense = torch.zeros(m, k // 4, 4, dtype=torch.float16, device="cuda")
    values = a.reshape(m, k // 4, 2)
    dense.scatter_(2, (meta & 3).long()[:, :, None], values[:, :, :1])
    dense.scatter_(2, ((meta >> 2) & 3).long()[:, :, None], values[:, :, 1:])
    return a, meta, dense.reshape(m, k), torch.randn(k, n, device="cuda", dtype=torch.float16)


def plan_row(stages: int | None, operands: tuple, want: torch.Tensor) -> dict:
    """The kernel on mma.sp with a ring of `stages` (None: on the decoding path)."""
    from intentc.codegen.nvptx import tile_sparse
    from intentc.runtime.cuda import compile_cuda
    chosen = tile_sparse.plan_sparse_mma
    a, meta, _, b = operands
    c = torch.empty(a.shape[0], b.shape[1], device="cuda")
    row: dict = {"plan": {"sparse_mma": stages is not None, "stages": stages}}
    tile_sparse.plan_sparse_mma = (lambda contraction: None) if stages is None else \
        (lambda contraction: dataclasses.replace(chosen(contraction), stages=stages))
    try:
        kernel = compile_cuda(TEXT, "sparse24_matmul")
        row["plan"]["instruction"] = kernel.launch_config.mma["instruction"]
        arrays = {"a": a, "meta": meta, "b": b, "c": c}
        row["ms"] = _seconds(lambda: kernel.launch_in_place(arrays)) * 1e3
        torch.cuda.synchronize()
        row["max_rel_error_vs_f64"] = ((c.double() - want).abs().max() / want.abs().max()).item()
    except Exception as error:      # a failing plan is reported in its row
        row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
    finally:
        tile_sparse.plan_sparse_mma = chosen
    return row


def probe() -> dict:
    """One m16n8k32 block on mma.sp: equal to the interpreter, or which metadata layout the
    hardware read instead (lane T0 holding all of row g, T1 all of row g + 8)."""
    import numpy as np

    from intentc.api import run
    from intentc.runtime.cuda import compile_cuda
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    meta = np.array(PAIRS, dtype=np.uint8)[rng.integers(0, 6, (16, 8))]
    b = rng.integers(-3, 4, (32, 8)).astype(np.float16)
    values = {"a": a, "meta": meta, "b": b}
    got = np.asarray(compile_cuda(TEXT, "sparse24_matmul")(values)["c"])
    want = np.asarray(run(TEXT, "sparse24_matmul", values)["c"])
    row: dict = {"bench": "probe: one m16n8k32 block on mma.sp", "equal": bool((got == want).all())}
    if not row["equal"]:
        by_rows = meta.copy()        # our registers read as (T0: row g's 8 groups, T1: row g + 8's)
        by_rows[:8, 4:], by_rows[8:, :4] = meta[8:, :4], meta[:8, 4:]
        swapped = np.asarray(run(TEXT, "sparse24_matmul", {**values, "meta": by_rows})["c"])
        row.update(rows_differ=np.nonzero((got != want).any(1))[0].tolist(),
                   metadata_split_by_rows=bool((got == swapped).all()))
    return row


def sparse_row(size: int) -> dict:
    """bench/gpu.py's 2:4 row: the sample through `intentc.load` beside torch's semi-structured
    sparse matmul and its dense matmul of the densified A, TFLOP/s of the dense product's flops."""
    import intentc
    a, meta, dense, b = _operands(size, size, size)
    c = torch.empty(size, size, device="cuda")
    kernel = intentc.load(TEXT, "sparse24_matmul", target="cuda", facts={"unit_stride": ["a", "meta", "b", "c"]})
    row: dict = {"bench": f"sparse 2:4 f16 {size}^3", "launch": kernel.launch_config.to_json()["mma"]}
    impls = {"intentc": lambda: kernel(a=a, meta=meta, b=b, c=c), "torch": lambda: dense @ b}
    semi = semi_structured(dense)
    if semi is not None:
        impls["torch_semi_structured"] = lambda: torch.mm(semi, b)
    for label, fn in impls.items():
        try:
            row[label] = {"TFLOP/s": 2.0 * size ** 3 / timed(fn, 20) / 1e12}
        except Exception as error:    # a failing implementation is reported in its row
            row[label] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
    torch.cuda.synchronize()
    want = dense.double() @ b.double()
    row["intentc_max_rel_error_vs_f64"] = ((c.double() - want).abs().max() / want.abs().max()).item()
    for label in ("torch_semi_structured", "torch"):
        if "TFLOP/s" in row.get("intentc", {}) and "TFLOP/s" in row.get(label, {}):
            row[f"intentc/{label}"] = row["intentc"]["TFLOP/s"] / row[label]["TFLOP/s"]
    print(json.dumps(row), flush=True)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--stages", default="4,6")
    parser.add_argument("--out")
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe()), flush=True)
    size = args.size
    operands = _operands(size, size, size)
    _, _, dense, b = operands
    want = dense.double() @ b.double()
    flop = 2.0 * size ** 3          # logical: the dense product's
    baselines = {"torch_matmul": lambda: dense @ b}
    semi = semi_structured(dense)
    if semi is not None:
        baselines["torch_semi_structured"] = lambda: torch.mm(semi, b)
    rows: list[dict] = []

    def report(row: dict) -> None:      # each row as soon as it is measured
        if "ms" in row:
            row["TFLOP/s"] = flop / row["ms"] * 1e-9
            row.update({f"vs {r['bench'].split()[0]}": r["ms"] / row["ms"] for r in rows[:len(baselines)]})
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1))
    for label, fn in baselines.items():
        report({"bench": f"{label} f16 {size}^3", "ms": _seconds(fn) * 1e3})
    for stages in map(int, args.stages.split(",")):
        report({"bench": f"intentc 2:4 mma.sp f16 {size}^3", **plan_row(stages, operands, want)})
    report({"bench": f"intentc 2:4 mma.sync (decoded) f16 {size}^3", **plan_row(None, operands, want)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
