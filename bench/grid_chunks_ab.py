"""The grid mapping's lowerings side by side on the GPU, in one process on the same data
(the specs of `bench/gpu_sample_specs.py`, full size): an element-wise program as one
chunked stage (nvptx/stages.py: one loop for every op, each element read once, K
coordinates a thread, with or without a guard-free copy for full chunks; `VARIANTS`)
against `loop_per_op`, the grid form of `cta.grid_plan` (a grid-stride loop an op); with
each variant's compile time, beside each sample's torch/Triton equivalent. Staged samples
(top-level reductions and scans) run the chunk variants (the same K for their stages).

    python3 bench/grid_chunks_ab.py [--out FILE] [--only SAMPLE:KERNEL,...] [--reps 50] [--variants chunks_k4,...]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench.common import run_sample_ab  # noqa: E402  (after the path insert)

IDS = ["integer_hash_u32:murmur3_bucket", "stochastic_rounding_bf16:stochastic_round_bf16",
       "fast_activations_approx:fast_silu_gelu", "cumsum:exclusive_offsets", "newton_rsqrt_constexpr:newton_rsqrt",
       "float_sign_bitcast:sign_ops", "philox_dropout:dropout", "special_math:special_math"]


# name -> (K coordinates a thread, full chunks without guards); None: the grid form
VARIANTS = {"chunks_k4": (4, False), "chunks_k8": (8, False), "chunks_k8_split": (8, True), "loop_per_op": None,
            "chunks_k2": (2, False), "chunks_k1": (1, False)}
CHOSEN = ["chunks_k4", "chunks_k8", "chunks_k8_split", "loop_per_op"]


def compiled(spec, dims: dict, variant, philox_64bit: bool = False):
    """The kernel compiled with the element-wise grid program in `variant`'s form (and, with
    `philox_64bit`, Philox's products as the shared lowering's 64-bit multiplies)."""
    from bench.gpu_samples import view_params
    from intentc.codegen.llvm.target import TargetHooks
    from intentc.codegen.nvptx import compile as nvptx_compile, stages
    from intentc.codegen.nvptx.hooks import NvptxHooks
    from intentc.runtime.cuda import compile_cuda
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    saved = (nvptx_compile.STAGED_MAPPINGS, stages.GRID_SLOTS, stages.SLOTS, stages.SPLIT_FULL_CHUNKS,
             NvptxHooks.mul_wide_u32)
    nvptx_compile.STAGED_MAPPINGS = ("single-thread", "grid") if variant else ("single-thread",)
    slots, split = variant or (saved[1], saved[3])
    stages.GRID_SLOTS, stages.SLOTS, stages.SPLIT_FULL_CHUNKS = slots, slots, split
    if philox_64bit:
        NvptxHooks.mul_wide_u32 = TargetHooks.mul_wide_u32  # type: ignore[method-assign]
    try:
        start = time.perf_counter()
        kernel = compile_cuda(text, spec.kernel, spec.specialization(view_params(text, spec.kernel), dims),
                              file=f"ir_samples/{spec.sample}.kir")
        return kernel, time.perf_counter() - start
    finally:
        (nvptx_compile.STAGED_MAPPINGS, stages.GRID_SLOTS, stages.SLOTS, stages.SPLIT_FULL_CHUNKS,
         NvptxHooks.mul_wide_u32) = saved


def measured(spec, reps: int) -> dict:
    from bench.gpu import timed
    dims = spec.sized(spec.dims[spec.scaled])
    case = spec.build(dims, "cuda")
    row: dict = {"id": spec.id, "size": spec.label(dims), "bytes": case.bytes}
    variants = [(label, VARIANTS[label], False) for label in CHOSEN]
    if "random_bits" in spec.sample or "philox" in spec.sample or "stochastic" in spec.sample:
        variants.insert(1, ("philox_64bit", VARIANTS["chunks_k4"], True))
    for label, variant, philox_64bit in variants:
        kernel, compile_s = compiled(spec, dims, variant, philox_64bit)
        mapping = kernel.launch_config.mapping
        if mapping != "grid" and variant is None:
            break                              # a staged program has no loop-an-op form
        if mapping not in ("grid", "staged") and label not in ("chunks_k4", "philox_64bit"):
            continue                           # other mappings have one form (but Philox's two)
        launch = lambda kernel=kernel: kernel.launch_in_place(case.values, spec.constexprs)
        launch()
        kernel.synchronize()
        correct = case.check()
        seconds = timed(launch, reps)
        row[label] = {"mapping": mapping, "slots": kernel.launch_config.slots, "compile_s": round(compile_s, 3),
                      "correct": correct is True, "ms": seconds * 1e3, "GB/s": case.bytes / seconds / 1e9}
    for name, baseline in case.baselines.items():
        seconds = timed(baseline, reps)
        row[name] = {"ms": seconds * 1e3, "GB/s": case.bytes / seconds / 1e9}
        for label, _, _ in variants:
            if label in row:
                row[label][f"ratio_{name}"] = round(seconds * 1e3 / row[label]["ms"], 3)
    return row


def main(argv=None) -> None:
    run_sample_ab(measured, IDS, argv, CHOSEN)


if __name__ == "__main__":
    main()
