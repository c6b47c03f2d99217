"""The physical mapping of a kernel onto the GPU grid (docs/gpu.md).

Kernels whose iteration body the CTA mapping handles (`cta.py`) run one iteration per CTA.
A kernel without `parallel` whose top level is an element-wise tensor program runs it on
the whole grid (`grid`: every coordinate on its own thread of the grid, `cta.grid_plan`).
Otherwise a kernel whose top level is one `parallel` op and otherwise pure ops runs on the
whole grid: every thread evaluates the pure prologue (identical values, no effects) and the
flattened parallel domain is walked by a grid-stride loop, so any extent (0, 1, odd,
larger than the grid) is covered exactly once. Any other kernel (effects outside
`parallel`, or several top-level `parallel` ops that would need a grid-wide barrier
between them) runs on one thread, in order: slow but correct. Nested `parallel` ops are
plain loops inside their iteration.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ...ir.nodes import Helper, Kernel, Module, Op
from ...ir.types import ViewType
from ...options import Specialization
from ...passes.ir_walk import is_pure_tree
from ..layout.assign import Assignment, assign, elements
from ..layout.encodings import Shared, row_blocked
from ..layout.mma import mma_assignment
from .cta import CtaPlan, cta_plan, grid_plan, known_extents, per_coordinate_regions
from .cta_staging import mark_staged
from .kernel_plans import kernel_plan
from .lane_rows import LaneRows, plan_lane_rows
from .outlined_math import outlines_math
from .tile_matmul import MmaPlan, plan_mma
from .tile_structured import plan_structured

BLOCK_THREADS = 256
RESIDENT_THREADS = 2048    # per SM on sm_80/sm_90: the grid holds this many threads per SM
# A CTA mapping whose CTAs each compute a costly top-level value (kaiser's window, i0 in f64
# for every coordinate) before their iterations gets a grid this many times smaller: each
# CTA then runs more iterations for one computation of it.
COSTLY_PROLOGUE_SHRINK = 4
# A CTA mapping whose iteration scans in the register form (a builtin `scan`: its block scan
# of the row) asks this many CTAs an SM (H200: 33,792 CTAs), cut at launch to the iterations
# and to whole waves of the CTAs that fit (runtime/grid_fit.py): up to that many iterations, a
# CTA runs one iteration and the GPU starts the next CTA where one ends, rather than a wave of
# CTAs striding over the rows. cumsum 32768 x 4096 on the H200 (session 11, `bench/rows_ab.py
# cumsum`): 0.2635 ms a CTA a row against 0.2856 on one wave of 6 CTAs an SM striding
# (Triton's CTA a row: 0.2625). Other iterations keep one wave (their grid was not measured
# against it on the GPU: `bench/grid_ab.py` does). 0: one wave for every iteration.
ITERATION_CTAS_PER_SM = 256


@dataclass(frozen=True)
class Mapping:
    kind: str                    # "cta" | "grid" | "mma" | a kernel plan's kind | "lane-rows" | "grid-stride" | "staged" | "single-thread"
    threads: int                 # the CTA size
    parallel: Op | None          # the top-level `parallel` spread over the grid
    cta: CtaPlan | None = None
    layouts: Assignment = field(default_factory=Assignment)   # every tensor value's layout
    lazy_views: frozenset = frozenset()   # (grid-stride) views the prologue reads, read at each use
    reason: str = ""                      # (single-thread) why
    coordinate_regions: frozenset = frozenset()   # loops and ifs run per coordinate, by first result
    mma: MmaPlan | None = None   # the tensor-core plan of a tiled contraction (tile_matmul.py)
    # a whole-kernel plan with its own emitter (`kernel_plans.py`: lane-group dots, flash attention, warp rows)
    plan: object | None = None
    lanes: LaneRows | None = None   # (lane-rows) an iteration a lane, its view accesses staged (lane_rows.py)
    # each f32 libdevice function one function of the module, called at every use (outlined_math.py)
    outlined_math: bool = False


@dataclass(frozen=True)
class LaunchConfig:
    """How the runtime launches the kernel; stored beside the PTX/cubin as JSON."""
    kernel: str                  # the PTX entry name
    mapping: str                 # "cta" | "grid" | "grid-stride" | "staged" | "single-thread"
    block: tuple[int, int, int]  # exact for "cta" and "grid" (the code is compiled for it), an upper bound otherwise
    grid: str                    # "ctas_per_sm:N" (sized to the device) | "fixed:1"
    ctas_per_sm: int
    arch: str
    slots: int = 0               # coordinates each thread keeps in registers (the CTA mapping's register form)
    slots_rolled: bool = False   # the register form's slots run as one rolled loop, not unrolled (cta.py)
    trip_slots: int = 0          # the register form's iteration runs in a loop of trips of this many slots (cta_group_loop.py)
    layouts: dict = field(default_factory=dict)   # Assignment.to_json(): encodings, values, conversions
    per_coordinate: list = field(default_factory=list)   # loops and ifs run per coordinate (first results)
    lazy_views: list = field(default_factory=list)       # (grid-stride) views the prologue reads at each use
    reason: str = ""             # why a kernel runs on one thread
    # "staged" (stages.py): the entries launched in order ({entry, role, block, grid}), and the
    # scratch memory the runtime allocates (chunk, words_per_chunk, domain extents, grid-wide ops)
    stages: list = field(default_factory=list)
    scratch: dict = field(default_factory=dict)
    # register-form entries for run-time row lengths (nvptx/variants.py), by increasing `max`;
    # a launch whose extent exceeds every `max` runs `kernel` as configured above
    variants: list = field(default_factory=list)
    # which variant serves a row length (VariantRule.to_json()): where `variants` is empty (a
    # lazy compile), the runtime compiles the one a launch needs on first use
    variant_rule: dict = field(default_factory=dict)
    # a variant's own compile (Specialization.variant): the launches it serves (Variant.to_json())
    serves: dict = field(default_factory=dict)
    iterations_per_cta: int = 1  # iterations of the `parallel` a CTA runs at once (short rows: cta_groups.py)
    mma: dict = field(default_factory=dict)       # MmaPlan.to_json() of the "mma" mapping
    plan: dict = field(default_factory=dict)      # a kernel plan's to_json() (kernel_plans.py)
    shared_bytes: int = 0        # dynamic shared memory a launch asks for (the MMA mapping's ring past 48 KiB)
    outlined_math: bool = False  # long f32 libdevice functions are calls (outlined_math.py)
    lean_pipeline: bool = False  # the lean kernel pipeline (LaneRows.lean)
    abi: str = "void kernel(i64 w0, ..., i64 wN-1, i64 *status): argument words as parameters, status in global memory"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> LaunchConfig:
        return cls(**{**data, "block": tuple(data["block"])})


def grid_parallel(kernel: Kernel) -> Op | None:
    """The top-level `parallel` op to spread over the grid, or None for one thread: the
    other top-level ops must be pure or reads of `in` views (which every thread re-reads at
    each use, `prologue_views`)."""
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1:
        return None
    others = [op for op in kernel.body if op is not parallels[0] and op.name != "yield"]
    read_only = {p.name for p in kernel.params if isinstance(p.type, ViewType) and p.type.direction == "in"}
    return parallels[0] if all(is_pure_tree(op) or (op.name == "read" and op.operands[0] in read_only)
                               for op in others) else None


def prologue_views(kernel: Kernel, parallel: Op) -> frozenset[str]:
    """The views a grid-stride kernel reads before its `parallel`: read where each element is
    used (the same elements for every thread: cached), not copied into a temporary per thread."""
    return frozenset(op.operands[0] for op in kernel.body[:kernel.body.index(parallel)] if op.name == "read")


def plan_mapping(kernel: Kernel, specialization: Specialization | None = None, module: Module | None = None,
                 arch: str = "sm_90") -> Mapping:
    """The kernel's mapping (docs/gpu.md)."""
    return _plan(kernel, specialization, module, arch)


def _plan(kernel: Kernel, specialization: Specialization | None, module: Module | None, arch: str) -> Mapping:
    known = known_extents(kernel, specialization or Specialization())
    mma = plan_mma(kernel, arch) or plan_structured(kernel, arch)
    if mma is not None:
        return Mapping("mma", mma.threads, mma.contraction.parallel, layouts=mma_assignment(mma, known), mma=mma)
    plan = kernel_plan(kernel, known, arch)
    if plan is not None:
        # the top-level reads are the plan's to stage: left lazy, never materialized
        return Mapping(plan.kind, plan.threads, plan.parallel, layouts=plan.layouts(known), plan=plan,
                       lazy_views=prologue_views(kernel, plan.parallel))
    return generic_mapping(kernel, specialization, module)


def generic_mapping(kernel: Kernel, specialization: Specialization | None = None,
                    module: Module | None = None) -> Mapping:
    """The mapping of a kernel the tensor cores do not run (CTA, grid, grid-stride or one thread)."""
    known = known_extents(kernel, specialization or Specialization())
    helpers = {item.name: item for item in module.items if isinstance(item, Helper)} if module else {}
    regions = per_coordinate_regions(kernel)
    lanes = plan_lane_rows(kernel, grid_parallel(kernel), known)
    if lanes is not None:
        return Mapping(lanes.kind, lanes.threads, lanes.parallel, lazy_views=prologue_views(kernel, lanes.parallel),
                       layouts=assign(kernel.body, None, known, one_thread_per_iteration=True),
                       coordinate_regions=regions, lanes=lanes)
    cta = cta_plan(kernel, specialization, helpers) or grid_plan(kernel)
    if cta is not None:
        return cta_mapping(kernel, cta, known, regions)
    grid = grid_parallel(kernel)
    one_thread = assign(kernel.body, None, known, one_thread_per_iteration=True)
    if grid is not None:
        return Mapping("grid-stride", BLOCK_THREADS, grid, layouts=one_thread, lazy_views=prologue_views(kernel, grid),
                       coordinate_regions=regions)
    return Mapping("single-thread", 1, None, layouts=one_thread, reason=single_thread_reason(kernel))


def cta_mapping(kernel: Kernel, cta: CtaPlan, known: dict[str, int], regions: frozenset) -> Mapping:
    """The CTA (or grid) mapping of the plan `cta`, with every tensor's layout: over the
    row-major linearization of its coordinates, T threads."""
    def distribution(type_):
        return row_blocked(elements(type_, known), cta.width, cta.vector, cta.grid)
    layouts = assign(kernel.body, distribution, known)
    mark_staged(layouts, cta.staged)
    for name, _, _ in cta.shared_results:   # partial reductions' results live in shared memory
        layouts.values[name] = Shared(tuple(reversed(range(layouts.values[name].rank))))
    for name, place in cta.buffers:          # so do the iteration's buffers that fit (cta_buffers.py)
        if place == "shared":
            layouts.values[name] = Shared((0,))
    kind = "grid" if cta.grid else "cta"
    return Mapping(kind, cta.threads, cta.parallel, cta, layouts, coordinate_regions=regions,
                   outlined_math=outlines_math(kind))


def single_thread_reason(kernel: Kernel) -> str:
    """Why no mapping spreads `kernel` over threads, naming the op that keeps it in order."""
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) > 1:
        return f"{len(parallels)} top-level `parallel` ops (each would need the previous one finished grid-wide)"
    for op in kernel.body:
        if op in parallels or op.name == "read" or is_pure_tree(op):
            continue
        where = f" at {op.loc.line}:{op.loc.col}" if op.loc else ""
        if op.regions:
            return f"`{op.name}`{where} has effects outside `parallel`: its body runs in order, on one thread"
        return f"`{op.name}`{where} outside `parallel` is not an element-wise write of a tensor program"
    return "the top-level program holds ops no grid mapping spreads over threads yet"


def iteration_ctas_per_sm(plan: CtaPlan) -> int:
    """The CTAs an SM the grid of a CTA-mapped iteration asks (the launch cuts it: grid_fit.py)."""
    if ITERATION_CTAS_PER_SM and plan.slots and any(op.name == "scan" for op in plan.parallel.regions[0].ops):
        return ITERATION_CTAS_PER_SM
    return max(1, RESIDENT_THREADS // plan.threads)


def launch_config(mapping: Mapping, entry: str, arch: str, variants: list | None = None,
                  variant_rule: dict | None = None) -> LaunchConfig:
    layouts, variants, variant_rule = mapping.layouts.to_json(), list(variants or []), dict(variant_rule or {})
    if mapping.kind == "single-thread":
        return LaunchConfig(entry, mapping.kind, (1, 1, 1), "fixed:1", 0, arch, layouts=layouts, variants=variants,
                            variant_rule=variant_rule, reason=mapping.reason)
    if mapping.plan is not None:
        plan = mapping.plan
        return LaunchConfig(entry, mapping.kind, (plan.threads, 1, 1), f"ctas_per_sm:{plan.ctas_per_sm}",
                            plan.ctas_per_sm, arch, layouts=layouts, variants=variants, plan=plan.to_json(),
                            shared_bytes=plan.shared_bytes, lazy_views=sorted(mapping.lazy_views))
    per_sm = max(1, RESIDENT_THREADS // mapping.threads)
    if mapping.lanes is not None:
        per_sm = mapping.lanes.ctas_per_sm
    if mapping.mma is not None and mapping.mma.ctas_per_sm:
        per_sm = mapping.mma.ctas_per_sm
    if mapping.cta is not None and mapping.cta.costly_prologue:
        per_sm = max(1, per_sm // COSTLY_PROLOGUE_SHRINK)
    elif mapping.cta is not None and mapping.lanes is None and mapping.mma is None:
        per_sm = iteration_ctas_per_sm(mapping.cta)
    return LaunchConfig(entry, mapping.kind, (mapping.threads, 1, 1), f"ctas_per_sm:{per_sm}", per_sm, arch,
                        mapping.cta.slots if mapping.cta else 0, layouts=layouts, variants=variants,
                        variant_rule=variant_rule, iterations_per_cta=mapping.cta.iterations if mapping.cta else 1,
                        slots_rolled=bool(mapping.cta and mapping.cta.slots and not mapping.cta.unrolled),
                        trip_slots=mapping.cta.trip_slots if mapping.cta else 0,
                        per_coordinate=sorted(mapping.coordinate_regions), lazy_views=sorted(mapping.lazy_views),
                        mma=mapping.mma.to_json() if mapping.mma else {},
                        plan=mapping.lanes.to_json() if mapping.lanes else {},
                        shared_bytes=mapping.mma.dynamic_shared_bytes if mapping.mma else 0,
                        outlined_math=mapping.outlined_math,
                        lean_pipeline=bool(getattr(mapping.lanes, "lean", False)))
