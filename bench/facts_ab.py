"""Issue #13's rows with and without each lever of launch-inferred layout facts, side by side
with Triton on the H200, in one process on the same data, in interleaved rounds (the median a
variant); every variant's output is checked against torch.

Rows (as `bench/gpu.py` runs them): vector add f32 2^28, row sum f32 32768 x 4096, cumsum f32
32768 x 4096, softmax f32 32768 x 1024 and 8192 x 4096. Variants, each a compile of its own
(in worker processes) and a launch with or without the grid cut to whole waves of the CTAs
the GPU runs at once (`INTENTC_LAUNCH_OFF=resident_grid` when its kernel is made):
- `unit`: every view `unit_stride` only (session 7's `bench/gpu.py`), launch.json's grid;
- `unit_waves`: `unit` on whole waves;
- `facts_full_grid`: also `aligned16` + `contiguous` (what `intentc.load` infers at a call on
  dense aligned tensors: 16-byte vector groups, `fact_vectors.py`), launch.json's grid;
- `facts`: the defaults (facts, whole waves).
Round 1 (`bench/results/facts-20261202-s8-h200-r1/`) also timed the facts without vector
groups, one wave of the resident CTAs, and 8 coordinates a thread for vector add (switches
since deleted).

    python3 bench/facts_ab.py [--rows vector_add,row_sum,cumsum,softmax1024,softmax4096] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FACTS = ("aligned16", "contiguous")
# name: (facts, whole waves)
VARIANTS = {"unit": ((), False), "unit_waves": ((), True), "facts_full_grid": (FACTS, False), "facts": (FACTS, True)}


@dataclass(frozen=True)
class Row:
    sample: str
    kernel: str
    extents: dict
    text_from: str = ""       # "row_sum_f32": bench/gpu.py's f32 copy of row_sum_f16

    def text(self) -> str:
        if self.text_from == "row_sum_f32":
            from bench.common import row_sum_f32_text
            return row_sum_f32_text()
        return (ROOT / "ir_samples" / f"{self.sample}.kir").read_text()

    def request(self, arch: str, facts: tuple):
        from intentc.driver import front_end
        from intentc.options import CompileOptions
        from intentc.parse import parse
        text = self.text()
        views = [p.name for p in parse(text).find(self.kernel).params if getattr(p.type, "direction", None)]
        return front_end(text, self.kernel, "cubin", arch, CompileOptions(),
                         {"extents": self.extents, "unit_stride": views, **dict.fromkeys(facts, views)},
                         f"ir_samples/{self.sample}.kir", None)


ROWS = {"vector_add": Row("vector_add", "vector_add", {}), "row_sum": Row("row_sum", "row_sum_f32", {"N": 4096},
                                                                        "row_sum_f32"),
        "cumsum": Row("cumsum", "row_cumsum", {"N": 4096}), "softmax1024": Row("row_softmax", "row_softmax",
                                                                               {"N": 1024}),
        "softmax4096": Row("row_softmax", "row_softmax", {"N": 4096})}


def _artifacts(row: Row, facts: tuple, arch: str) -> tuple[dict, dict]:
    from intentc.driver import compile_request
    result = compile_request(row.request(arch, facts))
    return dict(result.artifacts), result.timings


def kernels(rows: list[str]) -> dict:
    """(row, variant) -> CudaKernel; compiled in spawned workers (this process holds CUDA)."""
    from intentc.runtime.cuda import CudaKernel, device_arch
    arch = device_arch()
    jobs = {(row, name): (ROWS[row], facts) for row in rows for name, (facts, _) in VARIANTS.items()}
    with ProcessPoolExecutor(min(16, len(jobs)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {key: pool.submit(_artifacts, *job, arch) for key, job in jobs.items()}
        built = {}
        for (row, name), future in futures.items():
            os.environ["INTENTC_LAUNCH_OFF"] = "" if VARIANTS[name][1] else "resident_grid"
            built[row, name] = CudaKernel(ROWS[row].request(arch, VARIANTS[name][0]), *future.result())
        os.environ["INTENTC_LAUNCH_OFF"] = ""
        return built


def registers(kernel) -> dict:
    try:
        from cuda.bindings import driver  # type: ignore[import-not-found]
        _, count = driver.cuFuncGetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, kernel._function)
        _, resident = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(kernel._function, kernel.block[0],
                                                                         kernel.launch_config.shared_bytes)
        return {"registers": count, "resident_ctas": resident, "block": kernel.block[0],
                "grid_ctas": kernel.grid()[0]}
    except Exception as error:
        return {"occupancy_error": f"{type(error).__name__}: {error}"[:200]}


def workloads(row: str):
    """(arguments a launch binds, output tensor, expected output, triton launch, bytes moved)."""
    import torch
    import triton

    from bench.triton_kernels import t_add, t_cumsum, t_rowsum, t_softmax
    if row == "vector_add":
        n = 1 << 28
        x, y, z = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
        return ({"x": x, "y": y}, "z", (n,), lambda o: torch.equal(o, x + y),
                lambda: t_add[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024), 12 * n)
    rows, cols = {"softmax1024": (32768, 1024), "softmax4096": (8192, 4096)}.get(row, (32768, 4096))
    x = torch.randn(rows, cols, device="cuda")
    if row == "row_sum":
        out = torch.empty(rows, device="cuda")
        return ({"x": x}, "y", (rows,), lambda o: torch.allclose(o, x.sum(1), atol=1e-3),
                lambda: t_rowsum[(rows,)](x, out, cols, BLOCK=cols, num_warps=8), 4 * rows * cols + 4 * rows)
    out = torch.empty_like(x)
    if row == "cumsum":
        expected = torch.cumsum(x.double(), 1).float()
        return ({"x": x}, "y", (rows, cols), lambda o: torch.allclose(o, expected, atol=1e-2),
                lambda: t_cumsum[(rows,)](x, out, cols, BLOCK=cols, num_warps=8), 8 * rows * cols)
    warps = 4 if cols <= 2048 else 8
    return ({"x": x, "t": 1.0}, "y", (rows, cols), lambda o: torch.allclose(o, torch.softmax(x, 1), atol=1e-6),
            lambda: t_softmax[(rows,)](x, out, cols, 1.0, BLOCK=cols, num_warps=warps), 8 * rows * cols)


def main(argv=None) -> None:
    import torch

    from bench.gpu import timed
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--out")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args(argv)
    rows = args.rows.split(",")
    built = kernels(rows)
    table = []
    for row in rows:
        inputs, output, shape, check, triton_launch, nbytes = workloads(row)
        launches, outputs = {"triton": triton_launch}, {}
        for name in VARIANTS:
            outputs[name] = torch.zeros(shape, device="cuda")
            arrays = {**inputs, output: outputs[name]}
            launches[name] = lambda kernel=built[row, name], arrays=arrays: kernel.launch_in_place(arrays)
        times: dict[str, list[float]] = {name: [] for name in launches}
        for _ in range(args.rounds):
            for name, launch in launches.items():
                times[name].append(timed(launch, args.reps))
        torch.cuda.synchronize()
        base = statistics.median(times["triton"])
        for name, seconds in times.items():
            median = statistics.median(seconds)
            entry = {"row": row, "variant": name, "ms": round(median * 1e3, 4), "GB/s": round(nbytes / median / 1e9, 1),
                     "of_triton": round(base / median, 3), "spread": round((max(seconds) - min(seconds)) / median, 3)}
            if name != "triton":
                built[row, name].synchronize()
                entry.update(correct=bool(check(outputs[name])), **registers(built[row, name]))
            table.append(entry)
            print(json.dumps(entry), flush=True)
        del inputs, outputs, launches
        torch.cuda.empty_cache()
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rounds": args.rounds,
                                              "reps": args.reps, "rows": table}, indent=1) + "\n")


if __name__ == "__main__":
    main()
