"""The CTA-mapped, lane-rows and staged samples' compile-time choices (issue #13, session 9)
timed side by side on the GPU, with `bench/gpu_codegen_ab.choice_row`: each sample compiled
under each choice in one process with a fresh kernel cache (the cache key does not name
these choices), launched on the same device data, its outputs compared bit for bit with the
first choice's, then timed (median of CUDA-event means). The choices run in the order given
and then reversed (A B B A), so that neither order's caches favour one.

Choices: `default`; `O1` / `lean` (the kernel pipeline forced: LLVM's O1 simplification
pipeline, or the tile generators' lean one, `machine._lean_pipeline`); `staged LSR` / `staged
no LSR` (Loop Strength Reduction in the staged and grid programs' code generation on or off:
`StagePlan.strength_reduce`); `outlined math` / `outlined long math` (every f32 libdevice
function, or those longer than `outlined_math.OUTLINE_INSTRUCTIONS`, called rather than
inlined a coordinate), `inlined math` (none outlined); `half slots` (the register form's K
halved), `32 slots` (an iteration that combines nothing up to 32 slots again); `unrolled scan
chunks` (the dynamic form's scan chunks a position at a time, as before session 10 rolled
them for the author's combines); `lane-rows LSR` / `lane-rows no LSR` (Loop Strength
Reduction in the lane-rows mapping's code generation); `refill 4 rows` / `refill 8 rows` (lane
rows' window refills 4 or 8 rows a trip of their loop, `lane_rows.REFILL_ROWS`); `cta no LSR`
(the CTA mapping's dynamic form without Loop Strength Reduction too); `unrolled groups`
(independent costly iterations unroll their slots, as before session 10, instead of a loop
of trips: `nvptx/cta_group_loop.py`), `unrolled shared Philox` (unrolled, but Philox drawn by
groups of 4 consecutive coordinates sharing blocks), `2 slots a trip` / `4 slots a trip` (its
trips run at least that many slots); `grid math 4 slots` (element-wise grid programs calling
libdevice at K = 4, as before session 10, instead of 2: `stages.MATH_GRID_SLOTS`); `branched grid reads` (an element-wise grid program's guarded chunk
branches around each slot's read, as before session 10, instead of predicating it:
`StagedHooks._in_domain`); `encoded casts` (a store of a cast to f16, bf16 or fp8 encodes the
cast's f64 image again, as before session 10, instead of taking the code the conversion
computed: `lowfloat.remember_pattern`); `joined cvt asm` (an fp8 cast's `cvt` to the format
and back to f16 in one asm, as before session 11, so the widening stays where only the code
is stored: `f8_casts._narrowing`); `one wave` (the CTA mapping's grid of one wave striding
over the iterations, before session 11: `mapping.ITERATION_CTAS_PER_SM` 0); `libdevice inlined` (the CTA mapping's f32 libdevice
functions inlined by LLVM, not PTX templates: `ptx_math.TEMPLATE_KINDS`); `scans T x V
[resident R]` (the dynamic form of an iteration with a generic scan in CTAs of T threads, V
scan positions a thread, R CTAs an SM asked of ptxas, none without: `cta.AUTHOR_SCAN_*`,
whose default is 256 x 8 resident 6), `scans with LSR` (its code generation with Loop Strength
Reduction: `cta.AUTHOR_SCAN_LSR`); `a+b`: both; `ptx:PATH` (the kernel's PTX replaced by
the text stored at PATH, its launch.json kept: another tree's code for the same mapping, say
an older commit's, timed in this process beside this tree's, outputs compared bit for bit).

    python3 bench/cta_pipeline_ab.py --only 'SAMPLE:KERNEL[=CHOICE,...];...' [--choices default,lean]
                                     [--out FILE.json] [--budget-s 0.2]
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import gpu_codegen_ab  # noqa: E402  (after the path insert)
from bench.common import attributes  # noqa: E402


def pipeline(lean: bool):
    from intentc.codegen.nvptx import compile as nvptx_compile
    return attributes(nvptx_compile, _tiled=lambda mapping: lean, _lean_plan=lambda mapping: lean)


@contextlib.contextmanager
def staged_lsr(enabled: bool = True):
    from intentc.codegen.nvptx import compile as nvptx_compile
    chosen = nvptx_compile.stage_plan

    def with_lsr(*args, **kwargs):
        plan = chosen(*args, **kwargs)
        return dataclasses.replace(plan, strength_reduce=enabled) if plan is not None else None
    nvptx_compile.stage_plan = with_lsr
    try:
        yield
    finally:
        nvptx_compile.stage_plan = chosen


def outlined_math(longer_than: int | None = None):
    """The CTA, grid and staged mappings outline their libdevice functions longer than
    `longer_than` instructions (`nvptx/outlined_math.py`; None: its own threshold)."""
    from intentc.codegen.nvptx import outlined_math as chosen
    return attributes(chosen, OUTLINING_KINDS=frozenset({"cta", "grid", "staged"}),
                      OUTLINE_INSTRUCTIONS=chosen.OUTLINE_INSTRUCTIONS if longer_than is None else longer_than)


@contextlib.contextmanager
def half_slots():
    """The register form's K halved: T doubled for the same S (`cta._threads_for`)."""
    from intentc.codegen.nvptx import cta
    chosen = cta._threads_for
    cta._threads_for = lambda size, slots: min(cta.MAX_THREADS, 2 * chosen(size, slots))
    try:
        yield
    finally:
        cta._threads_for = chosen


@contextlib.contextmanager
def inlined_math():
    """No mapping outlines a libdevice function (as before session 9)."""
    from intentc.codegen.nvptx import outlined_math as chosen
    saved = chosen.OUTLINING_KINDS
    chosen.OUTLINING_KINDS = frozenset()
    try:
        yield
    finally:
        chosen.OUTLINING_KINDS = saved


def libdevice_inlined():
    """The CTA mapping's f32 libdevice functions inlined by LLVM (as before session 11), not
    inline PTX templates of LLVM's code for them (`ptx_math.TEMPLATE_KINDS`)."""
    from intentc.codegen.nvptx import ptx_math
    return attributes(ptx_math, TEMPLATE_KINDS=frozenset())


@contextlib.contextmanager
def slots_32():
    """An iteration that combines nothing keeps up to 32 slots (as before session 9)."""
    from intentc.codegen.nvptx import cta
    saved = cta.SCATTER_SLOTS
    cta.SCATTER_SLOTS = 32
    try:
        yield
    finally:
        cta.SCATTER_SLOTS = saved


def unrolled_scan_chunks():
    """The dynamic form's scan chunks unrolled a position at a time for every scan (before
    session 10 rolled them for the author's combines: `cta_scan.rolls_chunks`)."""
    from intentc.codegen.nvptx import cta_scan
    return attributes(cta_scan, rolls_chunks=lambda states: False)


def author_scans(threads: int, positions: int, resident: int = 0):
    """The dynamic form of an iteration with a generic scan in CTAs of `threads`, its scan
    chunks `positions` consecutive positions a thread, `resident` CTAs an SM asked of ptxas
    (`cta.AUTHOR_SCAN_THREADS`, `AUTHOR_SCAN_POSITIONS`, `AUTHOR_SCAN_RESIDENT`)."""
    from intentc.codegen.nvptx import cta
    return attributes(cta, AUTHOR_SCAN_THREADS=threads, AUTHOR_SCAN_POSITIONS=positions, AUTHOR_SCAN_RESIDENT=resident)


def author_scans_lsr(enabled: bool = True):
    """The dynamic form of an iteration with a generic scan with or without Loop Strength
    Reduction (`cta.AUTHOR_SCAN_LSR`)."""
    from intentc.codegen.nvptx import cta
    return attributes(cta, AUTHOR_SCAN_LSR=enabled)


def math_templates():
    """The CTA mapping's f32 libdevice functions as inline PTX templates of LLVM's code for
    them (`ptx_math.TEMPLATE_KINDS = {"cta"}`), the path awaiting its GPU round."""
    from intentc.codegen.nvptx import ptx_math
    return attributes(ptx_math, TEMPLATE_KINDS=frozenset({"cta"}))


def lane_rows_lsr(enabled: bool):
    """Loop Strength Reduction in the lane-rows mapping's code generation on or off
    (`compile._unrolled` for it)."""
    from intentc.codegen.nvptx import compile as nvptx_compile
    chosen = nvptx_compile._unrolled
    return attributes(nvptx_compile, _unrolled=lambda mapping: (not enabled) if mapping.kind == "lane-rows"
                      else chosen(mapping))


def cta_without_lsr():
    """The CTA mapping's code generation without Loop Strength Reduction in its dynamic form
    too (`compile._unrolled` true for every CTA mapping; its register form has none already)."""
    from intentc.codegen.nvptx import compile as nvptx_compile
    chosen = nvptx_compile._unrolled
    return attributes(nvptx_compile, _unrolled=lambda mapping: mapping.cta is not None or chosen(mapping))


def refill_rows(rows: int):
    """Lane rows' window refills load `rows` rows a trip of their loop (`lane_rows.REFILL_ROWS`)."""
    from intentc.codegen.nvptx import lane_rows
    return attributes(lane_rows, REFILL_ROWS=rows)


def group_loop(rolled: bool = True, trip: int = 1, shared: bool = True):
    """Independent costly iterations roll their slot groups (`rolled`) in trips of at least
    `trip` slots, Philox drawn by groups of 4 consecutive coordinates sharing blocks
    (`shared`; `nvptx/cta_group_loop.py`)."""
    from intentc.codegen.nvptx import cta_group_loop
    return attributes(cta_group_loop, ROLL_GROUPS=rolled, MIN_TRIP_SLOTS=trip, SHARE_PHILOX=shared)


def grid_math_slots(slots: int):
    """Element-wise grid programs calling libdevice give a thread `slots` coordinates a chunk
    (`stages.MATH_GRID_SLOTS`)."""
    from intentc.codegen.nvptx import stages
    return attributes(stages, MATH_GRID_SLOTS=slots)


def branched_grid_reads():
    """A grid program's guarded slots branch around every read (`staged.StagedHooks._in_domain`
    without its `lane_safe` predication)."""
    from intentc.codegen.nvptx.staged import StagedHooks
    chosen = StagedHooks._in_domain
    return attributes(StagedHooks, _in_domain=lambda self, em, linear, body, lane_safe=False:
                      chosen(self, em, linear, body))


@contextlib.contextmanager
def encoded_casts():
    """The conversions remember no code beside their images (`lowfloat.remember_pattern`)."""
    from intentc.codegen.nvptx import f8_casts, narrow
    with attributes(f8_casts, remember_pattern=lambda em, image, pattern: image), \
            attributes(narrow, remember_pattern=lambda em, image, pattern: image):
        yield


@contextlib.contextmanager
def joined_cvt_asm():
    """An fp8 cast's narrowing and widening in one asm, as before session 11: the widening
    stays where only the code is used."""
    from llvmlite import ir

    from intentc.codegen.llvm.types import F32, I16, I32
    from intentc.codegen.nvptx import f8_casts
    pairs: dict = {}

    def narrowing(em, x, fmt):
        text = f"{{ cvt.rn.satfinite.{fmt}x2.f32 $1, 0f00000000, $2; cvt.rn.f16x2.{fmt}x2 $0, $1; }}"
        both = em.b.asm(ir.FunctionType(ir.LiteralStructType([I32, I16]), [F32]), text, "=r,=h,f", [x],
                        side_effect=False)
        codes = em.b.extract_value(both, 1)
        pairs[id(codes)] = em.b.extract_value(both, 0)
        return codes
    with attributes(f8_casts, _narrowing=narrowing, _widening=lambda em, codes, fmt: pairs[id(codes)]):
        yield


def one_wave():
    """The CTA mapping's grid of one wave of CTAs striding over the iterations (before
    session 11: 2048 threads an SM asked) instead of a CTA an iteration."""
    from intentc.codegen.nvptx import mapping
    return attributes(mapping, ITERATION_CTAS_PER_SM=0)


def stored_ptx(path: str):
    """The PTX compiled for the kernel replaced by the text at `path` (`ptx:PATH`; the same
    mapping's launch.json and ABI assumed: an older tree's PTX for the sample)."""
    from intentc.codegen.nvptx import compile as nvptx_compile
    chosen = nvptx_compile.compile_ptx
    text = Path(path).read_text()
    with attributes(nvptx_compile, compile_ptx=lambda *args, **kwargs:
                    dataclasses.replace(chosen(*args, **kwargs), ptx=text)):
        yield


def choice(name: str):
    """The patch of choice `name`: one of CHOICES, or `ptx:PATH`."""
    return functools.partial(stored_ptx, name[len("ptx:"):]) if name.startswith("ptx:") else CHOICES[name]


@contextlib.contextmanager
def combined(names: list[str]):
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(choice(name)())
        yield


CHOICES = {"default": contextlib.nullcontext, "O1": lambda: pipeline(False), "lean": lambda: pipeline(True),
           "staged LSR": staged_lsr, "staged no LSR": lambda: staged_lsr(False), "outlined math": lambda: outlined_math(0), "outlined long math": outlined_math,
           "inlined math": inlined_math, "half slots": half_slots, "32 slots": slots_32,
           "unrolled scan chunks": unrolled_scan_chunks, "lane-rows LSR": lambda: lane_rows_lsr(True),
           "lane-rows no LSR": lambda: lane_rows_lsr(False), "refill 4 rows": lambda: refill_rows(4), "refill 8 rows": lambda: refill_rows(8),
           "cta no LSR": cta_without_lsr, "unrolled groups": lambda: group_loop(False, shared=False),
           "unrolled shared Philox": lambda: group_loop(False), "2 slots a trip": lambda: group_loop(trip=2),
           "4 slots a trip": lambda: group_loop(trip=4), "grid math 4 slots": lambda: grid_math_slots(4),
           "branched grid reads": branched_grid_reads, "encoded casts": encoded_casts,
           "joined cvt asm": joined_cvt_asm, "one wave": one_wave,
           "libdevice inlined": libdevice_inlined, "math templates": math_templates,
           "scans 512 x 4": lambda: author_scans(512, 4), "scans 512 x 4 resident 4": lambda: author_scans(512, 4, 4),
           "scans 256 x 8": lambda: author_scans(256, 8), "scans with LSR": author_scans_lsr,
           "scans without LSR": lambda: author_scans_lsr(False), "scans 256 x 8 resident 6": lambda: author_scans(256, 8, 6),
           "scans 128 x 16 resident 12": lambda: author_scans(128, 16, 12)}


def main(argv=None) -> int:
    from bench.gpu_sample_specs import SPECS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", required=True,
                        help="sample:kernel ids separated by ';', each with its own choices after '=' (a,b,...)")
    parser.add_argument("--choices", default="default,lean", help="the choices of an id without its own")
    parser.add_argument("--out")
    parser.add_argument("--budget-s", type=float, default=0.2)
    args = parser.parse_args(argv)
    gpu_codegen_ab.CHOICES.clear()
    gpu_codegen_ab.CHOICES.update({name: (patch, ()) for name, patch in CHOICES.items()})
    for entry in args.only.split(";"):       # choices made of several ("a+b") or a stored PTX
        for name in entry.partition("=")[2].split(","):
            if name not in CHOICES:
                gpu_codegen_ab.CHOICES[name] = (functools.partial(combined, name.split("+")), ())
    by_id = {s.id: s for s in SPECS}
    rows = []
    for entry in args.only.split(";"):
        ident, _, own = entry.partition("=")
        choices = (own or args.choices).split(",")
        gpu_codegen_ab.time_choices(by_id[ident], choices + choices[::-1], args.budget_s, rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
