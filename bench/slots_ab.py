"""The register form's coordinates a thread for iterations of independent coordinates, and
the bounds checks masks make redundant, side by side on the GPU, in one process on the same
data (the specs of `bench/gpu_sample_specs.py`, full size): `default` (the compiler as it
is: cheap independent iterations at CHEAP_INDEPENDENT_SLOTS, no check along an axis the
mask bounds, `codegen/llvm/mask_bounds.py`), `r1` (session 7's first GPU round: the
kept-tensor rule for every iteration, every masked access checked), and K = 4 and 8 asked
for (`Specialization.independent_slots`); each variant's compile time to cubin beside its
kernel time, and the sample's torch/Triton equivalent. Every variant is timed twice, in the
order given and then reversed, so that neither order's caches favour one.

    python3 bench/slots_ab.py [--out FILE] [--only SAMPLE:KERNEL,...] [--reps 50] [--variants default,r1,...]
"""
from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import interleaved_variants, run_sample_ab  # noqa: E402  (after the path insert)

IDS = ["vector_add:vector_add", "saxpy:saxpy", "activation_enum:bias_act", "philox_dropout:dropout",
       "reverse_copy_negative_stride:flip_rows", "f8_rowwise_quant:dequantize_e4m3_rowwise",
       "integer_hash_u32:pcg_hash", "kaiser_window_i0:kaiser_frames"]
# name -> (Specialization.independent_slots, 0: the compiler's own choice; whether the
# compiler is as it was in round 1: every iteration on the kept-tensor rule, every masked
# access checked)
VARIANTS = {"default": (0, False), "r1": (0, True), "k4": (4, False), "k8": (8, False)}
CHOSEN = list(VARIANTS)


@contextlib.contextmanager
def as_in_round_1(active: bool):
    """The compiler of round 1 while the block runs, when `active`."""
    if not active:
        yield
        return
    from intentc.codegen.llvm import kernel as lowering
    from intentc.codegen.nvptx import cta
    saved = cta._cheap_coordinates, lowering.masked_in_bounds
    cta._cheap_coordinates = lambda kernel, ops: False            # type: ignore[assignment]
    lowering.masked_in_bounds = lambda kernel: {}                 # type: ignore[assignment]
    try:
        yield
    finally:
        cta._cheap_coordinates, lowering.masked_in_bounds = saved


def compiled(spec, dims: dict, variant: tuple):
    """The kernel compiled with `variant`'s coordinates a thread and compiler."""
    from bench.gpu_samples import view_params
    from intentc.runtime.cuda import compile_cuda
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    slots, round_1 = variant
    with as_in_round_1(round_1):
        start = time.perf_counter()
        specialization = {**spec.specialization(view_params(text, spec.kernel), dims), "independent_slots": slots}
        kernel = compile_cuda(text, spec.kernel, specialization, file=f"ir_samples/{spec.sample}.kir")
        return kernel, time.perf_counter() - start


def measured(spec, reps: int) -> dict:
    from bench.gpu import timed
    row, case = interleaved_variants(spec, reps, CHOSEN,
                                     lambda label, dims: compiled(spec, dims, VARIANTS[label]))
    for name, baseline in case.baselines.items():
        seconds = timed(baseline, reps)
        row[name] = {"ms": round(seconds * 1e3, 4)}
        for label in CHOSEN:
            row[label][f"ratio_{name}"] = round(seconds * 1e3 / min(row[label]["ms"]), 3)
    return row


def main(argv=None) -> None:
    run_sample_ab(measured, IDS, argv, CHOSEN)


if __name__ == "__main__":
    main()
