"""The CTA-mapped, lane-rows and staged samples' compile-time choices (issue #13, session 9)
timed side by side on the GPU, with `bench/gpu_codegen_ab.choice_row`: each sample compiled
under each choice in one process with a fresh kernel cache (the cache key does not name
these choices), launched on the same device data, its outputs compared bit for bit with the
first choice's, then timed (median of CUDA-event means). The choices run in the order given
and then reversed (A B B A), so that neither order's caches favour one.

Choices: `default`; `O1` / `lean` (the kernel pipeline forced: LLVM's O1 simplification
pipeline, or the tile generators' lean one, `machine._lean_pipeline`); `staged LSR` (Loop
Strength Reduction in the staged and grid programs' code generation, as before session 9:
`StagePlan.strength_reduce`); `outlined math` (each f32 libdevice function called, not
inlined a coordinate).

    python3 bench/cta_pipeline_ab.py --only SAMPLE:KERNEL,... [--choices default,lean] [--out FILE.json]
                                     [--budget-s 0.2]
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import gpu_codegen_ab  # noqa: E402  (after the path insert)


@contextlib.contextmanager
def pipeline(lean: bool):
    from intentc.codegen.nvptx import compile as nvptx_compile
    chosen = nvptx_compile._tiled
    nvptx_compile._tiled = lambda mapping: lean
    try:
        yield
    finally:
        nvptx_compile._tiled = chosen


@contextlib.contextmanager
def staged_lsr():
    from intentc.codegen.nvptx import compile as nvptx_compile
    chosen = nvptx_compile.stage_plan

    def with_lsr(*args, **kwargs):
        plan = chosen(*args, **kwargs)
        return dataclasses.replace(plan, strength_reduce=True) if plan is not None else None
    nvptx_compile.stage_plan = with_lsr
    try:
        yield
    finally:
        nvptx_compile.stage_plan = chosen


@contextlib.contextmanager
def outlined_math():
    """Each f32 libdevice function one `noinline` function of the module, called from every
    coordinate (`llvm.outlined`): LLVM optimizes and selects its body once; ptxas keeps it a
    call (CALL.REL in the SASS)."""
    from intentc.codegen.llvm.outlined import outlined
    from intentc.codegen.llvm.types import F32
    from intentc.codegen.nvptx import hooks
    from llvmlite import ir
    chosen = hooks.NvptxHooks.math_f32

    def math_f32(self, em, name, x):
        if name not in hooks.LIBDEVICE_F32:
            return None
        helper = outlined(em, f"intentc_{name}f", ir.FunctionType(F32, [F32]),
                          lambda v: chosen(self, em, name, v))
        return em.b.call(helper, [x])
    hooks.NvptxHooks.math_f32 = math_f32
    try:
        yield
    finally:
        hooks.NvptxHooks.math_f32 = chosen


CHOICES = {"default": contextlib.nullcontext, "O1": lambda: pipeline(False), "lean": lambda: pipeline(True),
           "staged LSR": staged_lsr, "outlined math": outlined_math}


def main(argv=None) -> int:
    from bench.gpu_sample_specs import SPECS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", required=True, help="comma-separated sample:kernel ids")
    parser.add_argument("--choices", default="default,lean")
    parser.add_argument("--out")
    parser.add_argument("--budget-s", type=float, default=0.2)
    args = parser.parse_args(argv)
    choices = args.choices.split(",")
    gpu_codegen_ab.CHOICES.clear()
    gpu_codegen_ab.CHOICES.update({name: (CHOICES[name], ()) for name in choices})
    by_id = {s.id: s for s in SPECS}
    rows = []
    for ident in args.only.split(","):
        spec = by_id[ident]
        text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
        case = spec.build(spec.sized(spec.dims[spec.scaled]), "cuda")
        reference = None
        for choice in choices + choices[::-1]:
            try:
                row = gpu_codegen_ab.choice_row(spec, text, case, choice, args.budget_s, reference)
                outputs = row.pop("_outputs")
                reference = reference if reference is not None else outputs
            except Exception as error:     # a failing choice is reported in its row
                row = {"id": spec.id, "choice": choice, "error": f"{type(error).__name__}: {str(error)[:300]}"}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
