"""The register form's coordinates a thread for iterations of independent coordinates
(`Specialization.independent_slots`, default off until this runs on a GPU) side by side on
the GPU, in one process on the same data (the specs of `bench/gpu_sample_specs.py`, full
size): K = 4 and 8 against the default (K from the tensors a thread keeps), and `before`,
the default with every access also checked against the allocation (as before contiguous
views were proven inside theirs, `ViewRef.in_allocation`); each variant's compile time to
cubin beside its kernel time, and the sample's torch/Triton equivalent. Every variant is
timed twice, in the order given and then reversed, so that neither order's caches favour one.

    python3 bench/slots_ab.py [--out FILE] [--only SAMPLE:KERNEL,...] [--reps 50]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import run_sample_ab  # noqa: E402  (after the path insert)

IDS = ["vector_add:vector_add", "saxpy:saxpy", "activation_enum:bias_act", "philox_dropout:dropout", "reverse_copy_negative_stride:flip_rows",
       "f8_rowwise_quant:dequantize_e4m3_rowwise", "integer_hash_u32:pcg_hash", "kaiser_window_i0:kaiser_frames"]
# name -> (Specialization.independent_slots, 0: K from the tensors a thread keeps, as for
# other iterations; whether contiguous views skip the allocation compare)
VARIANTS = {"k4": (4, True), "k8": (8, True), "kept": (0, True), "before": (0, False)}


def compiled(spec, dims: dict, variant: tuple):
    """The kernel compiled with `variant`'s coordinates a thread for independent iterations
    and allocation checks."""
    from bench.gpu_samples import view_params
    from intentc.codegen.llvm import kernel as lowering, values
    from intentc.runtime.cuda import compile_cuda
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    slots, in_allocation = variant
    saved = lowering.ViewRef
    if not in_allocation:     # every view's accesses compare against the allocation again
        lowering.ViewRef = lambda *fields: values.ViewRef(*fields[:8])   # type: ignore[misc, assignment]
    try:
        start = time.perf_counter()
        specialization = {**spec.specialization(view_params(text, spec.kernel), dims), "independent_slots": slots}
        kernel = compile_cuda(text, spec.kernel, specialization, file=f"ir_samples/{spec.sample}.kir")
        return kernel, time.perf_counter() - start
    finally:
        lowering.ViewRef = saved


def measured(spec, reps: int) -> dict:
    from bench.gpu import timed
    dims = spec.sized(spec.dims[spec.scaled])
    case = spec.build(dims, "cuda")
    row: dict = {"id": spec.id, "size": spec.label(dims), "bytes": case.bytes}
    launches = {}
    for label, variant in VARIANTS.items():
        kernel, compile_s = compiled(spec, dims, variant)
        launch = lambda kernel=kernel: kernel.launch_in_place(case.values, spec.constexprs)
        if case.reset:
            case.reset()
        launch()
        kernel.synchronize()
        row[label] = {"threads": kernel.launch_config.block[0], "slots": kernel.launch_config.slots,
                      "compile_s": round(compile_s, 3), "correct": case.check() is True, "ms": []}
        launches[label] = launch
    for label in list(VARIANTS) + list(VARIANTS)[::-1]:
        row[label]["ms"].append(round(timed(launches[label], reps) * 1e3, 4))
    for name, baseline in case.baselines.items():
        seconds = timed(baseline, reps)
        row[name] = {"ms": round(seconds * 1e3, 4)}
        for label in VARIANTS:
            row[label][f"ratio_{name}"] = round(seconds * 1e3 / min(row[label]["ms"]), 3)
    return row


def main(argv=None) -> None:
    run_sample_ab(measured, IDS, argv)


if __name__ == "__main__":
    main()
