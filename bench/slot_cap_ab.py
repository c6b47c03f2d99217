"""The register form's slots a thread for row iterations with reductions (the kept-tensor
rule, `cta._slots_for_kept`, capped at MAX_SLOTS), side by side on the GPU in one process on
the same data (the specs of `bench/gpu_sample_specs.py`, full size): `default` (the compiler
as it is), `cap16` and `cap8` (MAX_SLOTS = 16 / 8: T doubles as K halves, T·K = S), `s7`
(as session 7 planned: the register form up to 32 slots of 1024 threads, scatters on the
kept-tensor rule). Fewer slots make the unrolled body, and LLVM's and ptxas' time, shorter
(issue #13: compile time to PTX); this measures what they cost at run time. Every variant is timed twice, in the
order given and then reversed, so that neither order's caches favour one.

    python3 bench/slot_cap_ab.py [--out FILE] [--only SAMPLE:KERNEL,...] [--reps 50] [--variants default,cap16]
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import attributes, compiled_sample, interleaved_variants, run_sample_ab  # noqa: E402  (after the path insert)

IDS = ["nan_max_vs_maximum_num:nan_max", "row_argmax:row_argmax", "segment_sum_scatter_reduce:segment_sum",
       "f8_rowwise_quant:quantize_e4m3_rowwise", "f8_rowwise_quant:quantize_e5m2_rowwise",
       "histogram_masked:histogram256"]
# name -> the `cta` module's constants while the variant compiles
VARIANTS = {"default": {}, "cap16": {"MAX_SLOTS": 16}, "cap8": {"MAX_SLOTS": 8},
            "s7": {"MAX_REGISTER_SIZE": 32 * 1024, "SCATTER_SLOTS": 32}}
CHOSEN = list(VARIANTS)


def planned_with(constants: dict):
    from intentc.codegen.nvptx import cta
    return attributes(cta, **constants)


def measured(spec, reps: int) -> dict:
    def compile_variant(label: str, dims: dict):
        with planned_with(VARIANTS[label]):
            return compiled_sample(spec, dims)
    return interleaved_variants(spec, reps, CHOSEN, compile_variant)[0]


def main(argv=None) -> None:
    run_sample_ab(measured, IDS, argv, CHOSEN)


if __name__ == "__main__":
    main()
