"""The structured contractions' compile-time choices (issue #13, session 8) timed side by
side on the GPU: each sample compiled under each choice in one process, launched on the
same device data, its outputs compared bit for bit with the default's (every choice keeps
the meaning: the same instructions' semantics in the same order), then timed (median of
CUDA-event means, `bench/gpu_samples.timing`).

Choices: `default`; `codegen -O2` (the LLVM code generator at -O2 for the tile generators,
as before: `compile._tile_generator` off); `unrolled K step` (sparse f32 on the CUDA cores
with its K step unrolled, `StructuredPlan.rolled` off); `LSR` (Loop Strength Reduction in
the warp-rows mapping's code generation, as before: `compile._unrolled` false for it); the flash
plans' LLVM choices (session 9): `flash -O0` / `flash -O2` (the code generator's level),
`flash no InstCombine`, `flash -O0 no InstCombine`. Each compile uses a fresh kernel cache (the
cache key does not name these choices). `--rounds N` times every choice N times, the choices
interleaved (A B A B: a slow moment of the device does not favour one).

    python3 bench/gpu_codegen_ab.py [--only SAMPLE:KERNEL,...] [--choices default,...] [--out FILE.json]
                                    [--budget-s 0.25] [--rounds 1]

(A copy of this script in another tree's bench/ with `--choices default` times that tree's
compiler on the same device in the same round: main against a branch.)
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPARSE12 = "sparse_1of2_matmul:sparse12_matmul"
TILES = (SPARSE12, "sparse_2of4_matmul:sparse24_matmul", "mxfp4_scaled_matmul:mxfp4_matmul")
WARP_ROWS = ("dot_f16_f32acc:batched_dot_f16", "q4k_q8k_matvec:q4k_q8k_matvec")


@contextlib.contextmanager
def codegen_o2():
    from intentc.codegen.nvptx import compile as nvptx_compile
    chosen = nvptx_compile._tile_generator
    nvptx_compile._tile_generator = lambda mapping: False
    try:
        yield
    finally:
        nvptx_compile._tile_generator = chosen


@contextlib.contextmanager
def unrolled_k_step():
    from intentc.codegen.nvptx import tile_sparse
    chosen = tile_sparse.plan_sparse

    def unrolled(contraction):
        plan = chosen(contraction)
        return dataclasses.replace(plan, rolled=False) if getattr(plan, "rolled", False) else plan
    tile_sparse.plan_sparse = unrolled
    try:
        yield
    finally:
        tile_sparse.plan_sparse = chosen


@contextlib.contextmanager
def warp_rows_lsr():
    from intentc.codegen.nvptx import compile as nvptx_compile
    chosen = nvptx_compile._unrolled
    nvptx_compile._unrolled = lambda mapping: mapping.kind != "warp-rows" and chosen(mapping)
    try:
        yield
    finally:
        nvptx_compile._unrolled = chosen


FLASH = ("attention_tensor_cores:causal_attention_f16", "attention_tensor_cores:causal_attention_bf16",
         "attention_region_fold:causal_attention")


def flash_plan(**fields):
    """The flash plans with `fields` replaced (their `codegen`, `instcombine`: data)."""
    @contextlib.contextmanager
    def patched():
        from intentc.codegen.nvptx import flash_attention
        chosen = flash_attention.plan_flash

        def plan(kernel, known):
            found = chosen(kernel, known)
            return None if found is None else dataclasses.replace(found, **fields)
        flash_attention.plan_flash = plan
        try:
            yield
        finally:
            flash_attention.plan_flash = chosen
    return patched


# choice -> (its patch, the samples it changes)
CHOICES = {"default": (contextlib.nullcontext, TILES + WARP_ROWS + FLASH), "codegen -O2": (codegen_o2, TILES),
           "unrolled K step": (unrolled_k_step, (SPARSE12,)), "LSR": (warp_rows_lsr, WARP_ROWS),
           "flash -O0": (flash_plan(codegen=0), FLASH), "flash -O2": (flash_plan(codegen=2), FLASH),
           "flash no InstCombine": (flash_plan(instcombine=False), FLASH),
           "flash -O0 no InstCombine": (flash_plan(codegen=0, instcombine=False), FLASH)}


def out_views(text: str, kernel: str) -> list[str]:
    from intentc.ir.types import ViewType
    from intentc.parse import parse
    return [p.name for p in parse(text).find(kernel).params
            if isinstance(p.type, ViewType) and p.type.direction == "out"]


def _bits_view(value):
    import torch
    return value.view(-1).view(torch.uint8)


def _bits(value):
    return _bits_view(value).clone()


def choice_row(spec, text: str, case, choice: str, budget_s: float, reference: dict | None) -> dict:
    from bench.gpu_samples import Launcher, timing, view_params
    from intentc.runtime import kernel_cache
    row: dict = {"id": spec.id, "choice": choice}
    dims = spec.sized(spec.dims[spec.scaled])
    with tempfile.TemporaryDirectory() as cache, CHOICES[choice][0]():
        os.environ["INTENTC_CACHE_DIR"] = cache
        kernel_cache.CACHE._memory.clear()
        launcher = Launcher(text, spec.kernel, spec.specialization(view_params(text, spec.kernel), dims),
                            f"ir_samples/{spec.sample}.kir")
    row["plan"] = launcher.mapping.get("mma") or launcher.mapping["mapping"]
    launch = launcher.bind(case.values)
    if case.reset:
        case.reset()
    outputs = out_views(text, spec.kernel)
    for name in outputs:       # poisoned (NaN bits): a choice that wrote nothing cannot pass
        _bits_view(case.values[name]).fill_(0xFF)
    launch()
    launcher.check_status()
    row["correct"] = case.check() is True
    outputs = {name: _bits(case.values[name]) for name in outputs}
    if reference is not None:
        import torch
        row["same_bits_as_default"] = all(torch.equal(outputs[name], bits) for name, bits in reference.items())
    row["intentc"] = timing(launch, budget_s, case)
    launcher.check_status()
    row["_outputs"] = outputs
    return row


def main(argv=None) -> int:
    from bench.gpu_sample_specs import SPECS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated sample:kernel ids")
    parser.add_argument("--out")
    parser.add_argument("--choices", help="comma-separated choices (default: all)")
    parser.add_argument("--budget-s", type=float, default=0.25)
    parser.add_argument("--rounds", type=int, default=1, help="times each choice is timed, choices interleaved")
    args = parser.parse_args(argv)
    ids = args.only.split(",") if args.only else TILES + WARP_ROWS
    rows = []
    by_id = {s.id: s for s in SPECS}
    for spec in (by_id[ident] for ident in ids):
        text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
        case = spec.build(spec.sized(spec.dims[spec.scaled]), "cuda")
        reference = None
        chosen = [choice for choice, (_, changed) in CHOICES.items()
                  if spec.id in changed and (not args.choices or choice in args.choices.split(","))]
        for choice in chosen * args.rounds:
            try:
                row = choice_row(spec, text, case, choice, args.budget_s, reference)
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
