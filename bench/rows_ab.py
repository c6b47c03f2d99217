"""Code generation variants of two rows kernels side by side on the GPU, with their Triton
equivalents, in one process on the same data, in interleaved rounds (the median a variant);
every variant's output is checked.

- `cumsum` (`bench/gpu.py --rows row_sum_cumsum`: f32 32768 x 4096, `ir_samples/cumsum.kir`,
  Triton's `t_cumsum`; every view `unit_stride`, `aligned16` and `contiguous`, as
  `intentc.load` compiles it for `bench/gpu.py`'s tensors): the default (since session 11 a
  CTA a row: `mapping.ITERATION_CTAS_PER_SM`); `one wave` (the grid before: 8 CTAs an SM
  asked, whole waves of those that fit, striding over the rows); `group by group` (the
  register form's block scan a group with a barrier pair each, before session 11:
  `cta_scan.EXCHANGE_GROUPS_AT_ONCE` off); `session 10` (one wave, group by group, and the
  warps' totals scanned over all 32 lanes: `5-step totals`); `resident8` (the default's PTX
  with `.minnctapersm 8`: ptxas caps its registers to fit, 32 without a spill since the one
  exchange). Checked against torch's f64 cumsum and, bit for bit, against the default.
  (Session 7's round 2, `bench/results/rows-20261201-s7-h200-r2/`, timed `grouped-scans` and
  `predicated-vectors`, since deleted, under the unit_stride fact alone.)
- `ema` (`ema_row_buffer:ema_rows`, M = 16384, T = 1024, lane-rows, Triton's `triton_seq` of
  `bench/gpu_sample_specs.py`): lane-rows' tensor write chunk (`lane_rows.CHUNK`) and the
  rows a window refill loads at once (`lane_rows.REFILL_ROWS`: 32, one unrolled block, or
  a rolled loop of 8 or 4 rows a trip; issue #13, compile time), as EMA_VARIANTS lists
  them. Each must give triton_seq's bits (the same FMAs in the same order).

    python3 bench/rows_ab.py cumsum|ema [--out FILE] [--rounds 5] [--reps 20]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CUMSUM = (32768, 4096)
FACTS = ("aligned16", "contiguous")
ONE_WAVE = 8         # Variant.grid: the CTA mapping's grid before session 11 (2048 threads an SM asked)
# name -> Variant's (resident, grid, scan choices)
CUMSUM_VARIANTS = {"default": (0, 0, ()), "group by group": (0, 0, ("group by group",)),
                   "one wave": (0, ONE_WAVE, ()),
                   "session 10": (0, ONE_WAVE, ("group by group", "5-step totals")),
                   "resident8": (8, 0, ())}
EMA = (16384, 1024)
# name -> (lane_rows.CHUNK, lane_rows.REFILL_ROWS)
# (the default since session 8: chunk8-refill8; session 7's: chunk16-refill32)
EMA_VARIANTS = {"chunk8-refill8": (8, 8), "chunk16-refill32": (16, 32), "chunk8-refill4": (8, 4),
                "chunk16-refill8": (16, 8)}


@dataclass(frozen=True)
class Variant:
    """One compile: the sample's kernel, `.minnctapersm` to add to its PTX (0: none), layout
    facts besides unit_stride, the CTAs an SM its launches ask for (0: launch.json's),
    lane-rows' write chunk and rows a refill trip (0: the defaults),
    the block scan's choices (SCAN_CHOICES)."""
    sample: str
    kernel: str
    extents: dict
    resident: int = 0
    facts: tuple = ()
    grid: int = 0
    chunk: int = 0
    refill_rows: int = 0
    scan: tuple = ()

    def request(self, arch: str):
        from intentc.driver import front_end
        from intentc.options import CompileOptions
        text = (ROOT / "ir_samples" / f"{self.sample}.kir").read_text()
        views = ("x", "y")
        return front_end(text, self.kernel, "cubin", arch, CompileOptions(),
                         {"extents": self.extents, "unit_stride": views, **dict.fromkeys(self.facts, views)},
                         f"ir_samples/{self.sample}.kir", None)


def _group_by_group():
    from intentc.codegen.nvptx import cta_scan
    cta_scan.EXCHANGE_GROUPS_AT_ONCE = False


def _five_step_totals():
    from intentc.codegen.nvptx import cta_scan
    scan = cta_scan._warp_scan
    cta_scan._scanned_totals = lambda em, plan, ranks, totals, combine: scan(em, totals, ranks.lane, combine, False)


# the block scan's code before session 11, patched in a worker process
SCAN_CHOICES = {"group by group": _group_by_group, "5-step totals": _five_step_totals}


def _artifacts(variant: Variant, arch: str) -> tuple[dict, dict]:
    """The variant's artifacts and timings (in a worker process: no CUDA here)."""
    from intentc.codegen.nvptx import lane_rows
    from intentc.codegen.nvptx.compile import assemble_cubin
    from intentc.driver import compile_request
    if variant.chunk:
        lane_rows.CHUNK = variant.chunk
    if variant.refill_rows:
        lane_rows.REFILL_ROWS = variant.refill_rows
    for choice in variant.scan:
        SCAN_CHOICES[choice]()
    result = compile_request(variant.request(arch))
    artifacts = dict(result.artifacts)
    if variant.resident:
        ptx = str(artifacts["kernel.ptx"])
        marked = ptx.replace(".maxntid 256\n", f".maxntid 256\n.minnctapersm {variant.resident}\n", 1)
        assert marked != ptx, "no .maxntid 256 to mark"
        artifacts["kernel.ptx"], artifacts["kernel.cubin"] = marked, assemble_cubin(marked, arch)
    if variant.grid:
        config = json.loads(artifacts["launch.json"])
        assert config["grid"].startswith("ctas_per_sm:"), config["grid"]
        config.update(grid=f"ctas_per_sm:{variant.grid}", ctas_per_sm=variant.grid)
        artifacts["launch.json"] = json.dumps(config)
    return artifacts, result.timings


def compiled(variants: dict[str, Variant]) -> dict:
    """name -> CudaKernel, every variant compiled at once in its own process (spawned: this
    process holds CUDA)."""
    from intentc.runtime.cuda import CudaKernel, device_arch
    arch = device_arch()
    with ProcessPoolExecutor(len(variants), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {name: pool.submit(_artifacts, variant, arch) for name, variant in variants.items()}
        return {name: CudaKernel(variants[name].request(arch), *future.result()) for name, future in futures.items()}


def occupancy(kernel) -> dict:
    """A compiled kernel's registers a thread and CTAs that fit an SM (the driver's numbers)."""
    try:
        from cuda.bindings import driver  # type: ignore[import-not-found]
        function, threads = kernel._function, kernel.block[0]
        _, registers = driver.cuFuncGetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, function)
        _, resident = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads,
                                                                         kernel.launch_config.shared_bytes)
        return {"registers": registers, "resident_ctas": resident, "grid_ctas": kernel.grid()[0]}
    except Exception as error:          # the timings matter more than these numbers
        return {"occupancy_error": f"{type(error).__name__}: {error}"[:200]}


def cumsum_variants():
    """(launches, checks, bytes moved, baseline name, occupancy a variant): a launch and a
    check a variant."""
    import torch

    from bench.triton_kernels import t_cumsum
    rows, cols = CUMSUM
    x = torch.randn(rows, cols, device="cuda")
    expected = torch.cumsum(x.double(), 1).float()
    launches, checks = {}, {}
    kernels = compiled({name: Variant("cumsum", "row_cumsum", {"N": cols}, resident, FACTS, grid, scan=scan)
                        for name, (resident, grid, scan) in CUMSUM_VARIANTS.items()})
    outputs = {}
    for name, kernel in kernels.items():
        y = outputs[name] = torch.zeros_like(x)
        launches[name] = lambda kernel=kernel, y=y: kernel.launch_in_place({"x": x, "y": y})
        checks[name] = lambda y=y: bool(torch.allclose(y, expected, atol=1e-2)) and bool(torch.equal(y, outputs["default"]))
    triton_y = torch.empty_like(x)
    launches["triton"] = lambda: t_cumsum[(rows,)](x, triton_y, cols, BLOCK=cols, num_warps=8)
    checks["triton"] = lambda: bool(torch.allclose(triton_y, expected, atol=1e-2))
    return launches, checks, 8 * rows * cols, "triton", {name: occupancy(k) for name, k in kernels.items()}


def ema_variants():
    import torch

    from bench.triton_kernels import t_ema_sequential
    m, t = EMA
    x = torch.randn(m, t, device="cuda")
    seq_y = torch.empty_like(x)
    launches = {"triton_seq": lambda: t_ema_sequential[((m + 31) // 32,)](x, seq_y, m, t, 0.25, ROWS=32,
                                                                        num_warps=1)}
    checks = {"triton_seq": lambda: True}
    kernels = compiled({name: Variant("ema_row_buffer", "ema_rows", {"T": t}, chunk=chunk, refill_rows=rows)
                        for name, (chunk, rows) in EMA_VARIANTS.items()})
    for name, kernel in kernels.items():
        y = torch.zeros_like(x)
        launches[name] = lambda kernel=kernel, y=y: kernel.launch_in_place({"x": x, "alpha": 0.25, "y": y})
        checks[name] = lambda y=y: bool(torch.equal(y, seq_y))
    return launches, checks, 8 * m * t, "triton_seq", {name: occupancy(k) for name, k in kernels.items()}


def main(argv=None) -> None:
    import torch

    from bench.gpu import timed
    parser = argparse.ArgumentParser()
    parser.add_argument("kernel", choices=["cumsum", "ema"])
    parser.add_argument("--out")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args(argv)
    launches, checks, nbytes, baseline, occupancies = (cumsum_variants if args.kernel == "cumsum" else ema_variants)()
    times: dict[str, list[float]] = {name: [] for name in launches}
    for _ in range(args.rounds):
        for name, launch in launches.items():
            times[name].append(timed(launch, args.reps))
    torch.cuda.synchronize()
    base_ms = statistics.median(times[baseline]) * 1e3
    table = []
    for name, seconds in times.items():
        ms = statistics.median(seconds) * 1e3
        row = {"variant": name, "ms": round(ms, 4), "GB/s": round(nbytes / (ms * 1e-3) / 1e9, 1),
               f"of_{baseline}": round(base_ms / ms, 3),
               "spread": round((max(seconds) - min(seconds)) / (ms * 1e-3), 3), "correct": checks[name](),
               **occupancies.get(name, {})}
        table.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"kernel": args.kernel, "device": torch.cuda.get_device_name(),
                                              "rounds": args.rounds, "reps": args.reps, "rows": table}, indent=1) + "\n")


if __name__ == "__main__":
    main()
