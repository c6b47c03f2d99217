"""The tile generators' compile-time choices (issue #13) timed side by side on the GPU: each
sample compiled under each choice in one process, launched on the same device data, its
outputs compared bit for bit with the default's (every choice keeps the meaning: the same
instructions' semantics in the same order), then timed (median of CUDA-event means,
`bench/gpu_samples.timing`), and its median time to PTX taken beside vector add's.

Choices: `default`; `no CodeGenPrepare`, `no InstCombine`, `CodeGenPrepare`, `InstCombine`,
`codegen -O0`, `codegen -O0 no InstCombine`, `no InstCombine no CodeGenPrepare` (the tile generators' kernels, `compile._tiled`, without or with LLVM's
CodeGenPrepare, without or with the lean pipeline's InstCombine, whatever their plans say,
or with the code generator at -O0, or both at -O0 and without InstCombine, or without both passes); `straight-line passes` (sparse 2:4
and mxfp4 with the code generator's SLSR and NaryReassociate, which their plans leave out; session
11; `--skipped-passes` gives the process another list to leave out), `no straight-line passes` (sparse
1:2 without them); `unrolled K step` (sparse f32 on
the CUDA cores with its K step unrolled, `StructuredPlan.rolled` off); `LSR` (Loop Strength
Reduction in the warp-rows mapping's code generation: `compile._unrolled` false for it);
`lane-dots no LSR` (the lane-dots mapping's code generation without it: its plan's since session 10); the
flash plans' LLVM choices (session 9): `flash -O0` / `flash -O2` (the code generator's level),
`flash no InstCombine`, `flash -O0 no InstCombine`; `flash op by op` (session 10: the tensor-core
plans' [D] columns lowered a slot at a time, `vector_columns` off: the same bits); `flash steps rolled` (a tile's K steps as PTX loops, session 9's, not one
inline asm: `step_asm` off); `flash libdevice
inlined` (expf inlined by LLVM, not the inline PTX template of `ptx_math.py`: `math_asm` off);
`flash DAG combine` / `flash no DAG combine` (session 11: the code generator with or without
the SelectionDAG combiner, the plans' `dag_combine`; without it ran slower); `flash masked reductions` (session 11: every
reduction of the summarizer selects its identity for keys past the axis, none combined unmasked:
the plans' `identity_past_axis` empty); `flash 32-key tiles`, `flash 48-key tiles` (the tensor-core plans' key tiles of 32 or 48
keys, not 64: a summarizer of half the slots; the fold's slices change, so its bits may differ from
the default's, §6). `--rounds N` times every choice N times,
the choices interleaved (A B A B: a slow moment of the device does not favour one).

Neither intentc's kernel cache nor `intentc.load`'s table of loaded kernels names a choice
(both key the source), so each choice compiles in `chosen_compiles`: a fresh cache
directory, both in-memory tables emptied, the choice patched in for the compile
(`tests/bench/test_gpu_codegen_ab.py` checks that the choices give different PTX).

    python3 bench/gpu_codegen_ab.py [--only SAMPLE:KERNEL,...] [--choices default,...] [--out FILE.json]
                                    [--budget-s 0.25] [--rounds 1] [--skipped-passes slsr,...]

(A copy of this script in another tree's bench/ with `--choices default` times that tree's
compiler on the same device in the same round: main against a branch.)
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPARSE12 = "sparse_1of2_matmul:sparse12_matmul"
SPARSE24 = "sparse_2of4_matmul:sparse24_matmul"
MXFP4 = "mxfp4_scaled_matmul:mxfp4_matmul"
TILES = (SPARSE12, SPARSE24, MXFP4, "tiled_matmul:matmul_tiled")
REFERENCE = "vector_add:vector_add"     # the yardstick of compile times (issue #13: tiles <= 3x it)
WARP_ROWS = ("dot_f16_f32acc:batched_dot_f16", "q4k_q8k_matvec:q4k_q8k_matvec")
LANE_DOTS = ("decode_attention_scores_contract:decode_scores",)


@contextlib.contextmanager
def patched(name: str, choose):
    """`compile.<name>` replaced by `choose(mapping, the original)` while the block runs."""
    from intentc.codegen.nvptx import compile as nvptx_compile
    original = getattr(nvptx_compile, name)
    setattr(nvptx_compile, name, lambda mapping: choose(mapping, original))
    try:
        yield
    finally:
        setattr(nvptx_compile, name, original)


def for_tiles(name: str, value):
    """The tile generators' kernels take `value` for `compile.<name>`; the others keep theirs."""
    from intentc.codegen.nvptx import compile as nvptx_compile
    return patched(name, lambda mapping, original: value if nvptx_compile._tiled(mapping) else original(mapping))


@contextlib.contextmanager
def k_step(**changes):
    """The sparse f32 plan (CUDA cores, a rolled K step) with `changes`."""
    from intentc.codegen.nvptx import tile_sparse
    chosen = tile_sparse.plan_sparse

    def changed(contraction):
        plan = chosen(contraction)
        return dataclasses.replace(plan, **changes) if getattr(plan, "rolled", False) else plan
    tile_sparse.plan_sparse = changed
    try:
        yield
    finally:
        tile_sparse.plan_sparse = chosen


def warp_rows_lsr():
    return patched("_unrolled", lambda mapping, original: mapping.kind != "warp-rows" and original(mapping))


def lane_dots_without_lsr():
    return patched("_unrolled", lambda mapping, original: mapping.kind == "lane-dots" or original(mapping))


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


@contextlib.contextmanager
def stacked(*patches):
    """Every one of `patches` at once."""
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        yield


# choice -> (its patch, the samples it changes)
CHOICES = {"default": (contextlib.nullcontext, TILES + WARP_ROWS + LANE_DOTS + FLASH),
           "no CodeGenPrepare": (lambda: for_tiles("_codegen_prepare", False), TILES),
           "no InstCombine": (lambda: for_tiles("_instcombine", False), TILES),
           "CodeGenPrepare": (lambda: for_tiles("_codegen_prepare", True), TILES),
           "InstCombine": (lambda: for_tiles("_instcombine", True), TILES),
           "codegen -O0": (lambda: for_tiles("_codegen_level", 0), TILES),
           "codegen -O0 no InstCombine": (lambda: stacked(for_tiles("_codegen_level", 0), for_tiles("_instcombine", False)),
                                          TILES),
           "no InstCombine no CodeGenPrepare": (lambda: stacked(for_tiles("_instcombine", False),
                                                                for_tiles("_codegen_prepare", False)), TILES),
           # session 11: SLSR and NaryReassociate in code generation again (the plans leave them
           # out; mxfp4's cubin is the same either way, unless --skipped-passes names more)
           "straight-line passes": (lambda: for_tiles("_straight_line", True), (SPARSE24, MXFP4)),
           "no straight-line passes": (lambda: for_tiles("_straight_line", False), (SPARSE12,)),
           "unrolled K step": (lambda: k_step(rolled=False), (SPARSE12,)), "LSR": (warp_rows_lsr, WARP_ROWS),
           "lane-dots no LSR": (lane_dots_without_lsr, LANE_DOTS),
           "flash -O0": (flash_plan(codegen=0), FLASH), "flash -O2": (flash_plan(codegen=2), FLASH),
           "flash no InstCombine": (flash_plan(instcombine=False), FLASH),
           "flash -O0 no InstCombine": (flash_plan(codegen=0, instcombine=False), FLASH),
           "flash -O2 InstCombine": (flash_plan(codegen=2, instcombine=True), FLASH),
           "flash -O0 InstCombine": (flash_plan(codegen=0, instcombine=True), FLASH),
           "flash op by op": (flash_plan(vector_columns=False), FLASH[:2]),
           "flash steps rolled": (flash_plan(step_asm=False), FLASH[:2]),
           "flash libdevice inlined": (flash_plan(math_asm=False), FLASH[:2]),
           "flash DAG combine": (flash_plan(dag_combine=True), FLASH),
           "flash no DAG combine": (flash_plan(dag_combine=False), FLASH),
           "flash masked reductions": (flash_plan(identity_past_axis=frozenset()), FLASH),
           "flash 32-key tiles": (flash_plan(block_keys=32), FLASH[:2]),
           "flash 48-key tiles": (flash_plan(block_keys=48), FLASH[:2])}


def chosen_compiles(choice: str):
    """Compiles under `choice` while the block runs (`fresh_compiles` of its patch)."""
    return fresh_compiles(CHOICES[choice][0]())


@contextlib.contextmanager
def fresh_compiles(patch):
    """Compiles under `patch` (a context manager) while the block runs, with a fresh kernel
    cache directory, the cache's memory and `intentc.load`'s loaded kernels emptied before and
    after (neither key names a patch)."""
    from intentc.runtime import kernel_cache
    from intentc.runtime import load as loading
    configured = os.environ.get("INTENTC_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache, patch:
        os.environ["INTENTC_CACHE_DIR"] = cache
        try:
            kernel_cache.CACHE._memory.clear()
            loading._LOADED.clear()
            yield
        finally:
            kernel_cache.CACHE._memory.clear()
            loading._LOADED.clear()
            if configured is None:
                os.environ.pop("INTENTC_CACHE_DIR", None)
            else:
                os.environ["INTENTC_CACHE_DIR"] = configured


def to_ptx_ms(spec, choice: str, reps: int = 3) -> float:
    """Median milliseconds to PTX (sm_90, `bench/compile.py`'s specialization) under `choice`,
    after one warm-up compile: the compile-time side of the choice, in the same process."""
    import statistics
    import time

    from bench.compile import compile_args
    from intentc.driver import compile_kernel
    text, kernel, specialization = compile_args(spec)
    seconds = []
    with CHOICES[choice][0]():
        for _ in range(reps + 1):
            start = time.perf_counter()
            compile_kernel(text, kernel, "ptx", "sm_90", specialization=specialization)
            seconds.append(time.perf_counter() - start)
    return round(statistics.median(seconds[1:]) * 1e3, 1)


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
    row: dict = {"id": spec.id, "choice": choice}
    dims = spec.sized(spec.dims[spec.scaled])
    outputs = out_views(text, spec.kernel)
    with chosen_compiles(choice):    # the first launch too: a call may compile a variant for its views
        launcher = Launcher(text, spec.kernel, spec.specialization(view_params(text, spec.kernel), dims),
                            f"ir_samples/{spec.sample}.kir")
        launch = launcher.bind(case.values)
        if case.reset:
            case.reset()
        for name in outputs:       # poisoned (NaN bits): a choice that wrote nothing cannot pass
            _bits_view(case.values[name]).fill_(0xFF)
        launch()
        launcher.check_status()
    row["plan"] = launcher.mapping.get("mma") or launcher.mapping["mapping"]
    row["ptx_sha1"] = hashlib.sha1((launcher.kernel.ptx or "").encode()).hexdigest()[:12]
    row["correct"] = case.check() is True
    outputs = {name: _bits(case.values[name]) for name in outputs}
    if reference is not None:
        import torch
        row["same_bits_as_default"] = all(torch.equal(outputs[name], bits) for name, bits in reference.items())
    row["intentc"] = timing(launch, budget_s, case)
    row["to_ptx_ms"] = to_ptx_ms(spec, choice)
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
    parser.add_argument("--skipped-passes", help="comma-separated code generator passes that the plans' "
                        "`straight_line` False leaves out in this process (machine.STRAIGHT_LINE_PASSES: "
                        "LLVM's list is the process's, so another list needs another process)")
    args = parser.parse_args(argv)
    if args.skipped_passes:
        from intentc.codegen.nvptx import machine
        machine.STRAIGHT_LINE_PASSES = tuple(args.skipped_passes.split(","))
    ids = args.only.split(",") if args.only else TILES + WARP_ROWS
    by_id = {s.id: s for s in SPECS}
    rows = [{"id": REFERENCE, "choice": "default", "to_ptx_ms": to_ptx_ms(by_id[REFERENCE], "default", 5)}]
    print(json.dumps(rows[0]), flush=True)
    for spec in (by_id[ident] for ident in ids):
        chosen = [choice for choice, (_, changed) in CHOICES.items()
                  if spec.id in changed and (not args.choices or choice in args.choices.split(","))]
        time_choices(spec, chosen * args.rounds, args.budget_s, rows, args.out)
    return 0


def time_choices(spec, choices: list[str], budget_s: float, rows: list[dict], out: str | None) -> None:
    """`choice_row` of each of `choices` in turn on one set of the sample's device data, each
    row's outputs against the first choice's, the rows appended to `rows` (and written to `out`)
    as they come; a choice that fails is reported in its row."""
    text = (ROOT / "ir_samples" / f"{spec.sample}.kir").read_text()
    case = spec.build(spec.sized(spec.dims[spec.scaled]), "cuda")
    reference = None
    for choice in choices:
        try:
            row = choice_row(spec, text, case, choice, budget_s, reference)
            outputs = row.pop("_outputs")
            reference = reference if reference is not None else outputs
        except Exception as error:
            row = {"id": spec.id, "choice": choice, "error": f"{type(error).__name__}: {str(error)[:300]}"}
        rows.append(row)
        print(json.dumps(row), flush=True)
        if out:
            Path(out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    sys.exit(main())
