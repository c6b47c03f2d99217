"""The grid mapping's two lowerings side by side on the GPU, in one process on the same
data (the specs of `bench/gpu_sample_specs.py`, full size): `chunks`, an element-wise
program as one chunked stage (nvptx/stages.py: one loop for every op, each element read
once, K coordinates a thread in flight), against `loop_per_op`, the grid form of
`cta.grid_plan` (a grid-stride loop an op); beside each sample's torch/Triton equivalent.
Staged samples (top-level reductions and scans) run their one lowering.

    python3 bench/grid_chunks_ab.py [--out FILE] [--only SAMPLE:KERNEL,...] [--reps 50]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

IDS = ["stochastic_rounding_bf16:stochastic_round_bf16", "integer_hash_u32:murmur3_bucket",
       "fast_activations_approx:fast_silu_gelu", "newton_rsqrt_constexpr:newton_rsqrt", "float_sign_bitcast:sign_ops",
       "cumsum:exclusive_offsets", "special_math:special_math"]


def compiled(spec, dims: dict, chunks: bool):
    """The kernel compiled with the element-wise grid program chunked or not."""
    from bench.gpu_samples import view_params
    from intentc.codegen.nvptx import compile as nvptx_compile
    from intentc.runtime.cuda import compile_cuda
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    saved = nvptx_compile.STAGED_MAPPINGS
    nvptx_compile.STAGED_MAPPINGS = ("single-thread", "grid") if chunks else ("single-thread",)
    try:
        return compile_cuda(text, spec.kernel, spec.specialization(view_params(text, spec.kernel), dims),
                            file=f"ir_samples/{spec.sample}.kir")
    finally:
        nvptx_compile.STAGED_MAPPINGS = saved


def measured(spec, reps: int) -> dict:
    from bench.gpu import timed
    dims = spec.sized(spec.dims[spec.scaled])
    case = spec.build(dims, "cuda")
    row: dict = {"id": spec.id, "size": spec.label(dims), "bytes": case.bytes}
    for label, chunks in (("chunks", True), ("loop_per_op", False)):
        kernel = compiled(spec, dims, chunks)
        mapping = kernel.launch_config.mapping
        if not chunks and mapping != "grid":
            break                              # a staged program has no loop-an-op form
        launch = lambda kernel=kernel: kernel.launch_in_place(case.values, spec.constexprs)
        launch()
        kernel.synchronize()
        correct = case.check()
        seconds = timed(launch, reps)
        row[label] = {"mapping": mapping, "stages": len(kernel.launch_config.stages) or 1, "correct": correct is True,
                      "ms": seconds * 1e3, "GB/s": case.bytes / seconds / 1e9}
    for name, baseline in case.baselines.items():
        seconds = timed(baseline, reps)
        row[name] = {"ms": seconds * 1e3, "GB/s": case.bytes / seconds / 1e9}
        for label in ("chunks", "loop_per_op"):
            if label in row:
                row[label][f"ratio_{name}"] = seconds * 1e3 / row[label]["ms"]
    return row


def main(argv=None) -> None:
    from bench.gpu_sample_specs import SPECS
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--only", default=",".join(IDS))
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args(argv)
    rows = []
    for ident in args.only.split(","):
        spec = next(s for s in SPECS if s.id == ident)
        try:
            row = measured(spec, args.reps)
        except Exception as error:            # one failing kernel is a row, not the end of the run
            row = {"id": ident, "error": f"{type(error).__name__}: {error}"[:500]}
        print(json.dumps(row), flush=True)
        rows.append(row)
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
