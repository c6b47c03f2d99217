"""The row cumsum of `bench/gpu.py --rows row_sum_cumsum` (f32 32768 x 4096, `ir_samples/cumsum.kir`)
in several code generation variants side by side on the GPU, with Triton's `t_cumsum`, in
one process on the same data, interleaved rounds (the median a variant): the default; the
GPU paths `grouped-scans` and `predicated-vectors`, each alone and together; and the
default's PTX with `.minnctapersm R` (R CTAs an SM: ptxas caps its registers to fit; the
default's 60 registers fit 4 of the grid's 8 CTAs of 256 threads). Each variant's result is
checked against torch's f64 cumsum.

    python3 bench/cumsum_ab.py [--out FILE] [--rounds 5] [--reps 20] [--rows 32768 --cols 4096]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# name -> (gpu_paths, .minnctapersm to add to the default's PTX: 0 for none)
VARIANTS = {"default": ((), 0), "grouped-scans": (("grouped-scans",), 0),
            "predicated-vectors": (("predicated-vectors",), 0),
            "both": (("grouped-scans", "predicated-vectors"), 0),
            "resident5": ((), 5), "resident6": ((), 6)}


def compiled(cols: int, paths: tuple, resident: int):
    from intentc.codegen.nvptx.compile import assemble_cubin
    from intentc.driver import compile_request, front_end
    from intentc.options import CompileOptions
    from intentc.runtime.cuda import CudaKernel, device_arch
    text = (ROOT / "ir_samples" / "cumsum.kir").read_text()
    request = front_end(text, "row_cumsum", "cubin", device_arch(), CompileOptions(gpu_paths=paths),
                        {"extents": {"N": cols}, "unit_stride": ("x", "y")}, "ir_samples/cumsum.kir", None)
    result = compile_request(request)
    artifacts = dict(result.artifacts)
    if resident:
        ptx = str(artifacts["kernel.ptx"])
        marked = ptx.replace(".maxntid 256\n", f".maxntid 256\n.minnctapersm {resident}\n", 1)
        assert marked != ptx, "no .maxntid 256 to mark"
        artifacts["kernel.ptx"], artifacts["kernel.cubin"] = marked, assemble_cubin(marked, device_arch())
    return CudaKernel(request, artifacts, result.timings)


def main(argv=None) -> None:
    import torch

    from bench.gpu import timed
    from bench.triton_kernels import t_cumsum
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rows", type=int, default=32768)
    parser.add_argument("--cols", type=int, default=4096)
    args = parser.parse_args(argv)
    rows, cols = args.rows, args.cols
    x = torch.randn(rows, cols, device="cuda")
    expected = torch.cumsum(x.double(), 1).float()
    launches, outputs, errors = {}, {}, {}
    for name, (paths, resident) in VARIANTS.items():
        try:
            kernel = compiled(cols, paths, resident)
        except Exception as error:      # one failing variant is a row, not the end of the run
            errors[name] = f"{type(error).__name__}: {error}"[:300]
            continue
        y = torch.zeros_like(x)
        outputs[name] = y
        launches[name] = lambda kernel=kernel, y=y: kernel.launch_in_place({"x": x, "y": y})
    triton_y = torch.empty_like(x)
    launches["triton"] = lambda: t_cumsum[(rows,)](x, triton_y, cols, BLOCK=cols, num_warps=8)
    triton_kernel = launches["triton"]()      # Triton's compiled kernel: its registers beside ours (ptxas -v)
    triton_registers = {"registers": getattr(triton_kernel, "n_regs", None), "spills": getattr(triton_kernel, "n_spills", None)}
    times: dict[str, list[float]] = {name: [] for name in launches}
    for _ in range(args.rounds):
        for name, launch in launches.items():
            times[name].append(timed(launch, args.reps))
    torch.cuda.synchronize()
    triton_ms = statistics.median(times["triton"]) * 1e3
    table = []
    for name, seconds in times.items():
        ms = statistics.median(seconds) * 1e3
        row = {"variant": name, "ms": round(ms, 4), "GB/s": round(8 * rows * cols / (ms * 1e-3) / 1e9, 1),
               "of_triton": round(triton_ms / ms, 3), "spread": round((max(seconds) - min(seconds)) / (ms * 1e-3), 3)}
        if name in outputs:
            row["correct"] = bool(torch.allclose(outputs[name], expected, atol=1e-2))
        if name == "triton":
            row.update(triton_registers)
        table.append(row)
        print(json.dumps(row), flush=True)
    table += [{"variant": name, "error": error} for name, error in errors.items()]
    if args.out:
        Path(args.out).write_text(json.dumps({"size": f"{rows}x{cols}", "rounds": args.rounds, "reps": args.reps,
                                              "rows": table}, indent=1) + "\n")


if __name__ == "__main__":
    main()
