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

from ...ir.nodes import Kernel, Op
from ...options import Specialization
from ...passes.ir_walk import is_pure_tree
from ..layout.assign import Assignment, assign, elements
from ..layout.encodings import row_blocked
from .cta import CtaPlan, cta_plan, grid_plan, known_extents
from .cta_staging import mark_staged

BLOCK_THREADS = 256
RESIDENT_THREADS = 2048    # per SM on sm_80/sm_90: the grid holds this many threads per SM
# A CTA mapping whose CTAs each compute a costly top-level value (kaiser's window, i0 in f64
# for every coordinate) before their iterations gets a grid this many times smaller: each
# CTA then runs more iterations for one computation of it.
COSTLY_PROLOGUE_SHRINK = 4


@dataclass(frozen=True)
class Mapping:
    kind: str                    # "cta" | "grid" | "grid-stride" | "single-thread"
    threads: int                 # the CTA size
    parallel: Op | None          # the top-level `parallel` spread over the grid
    cta: CtaPlan | None = None
    layouts: Assignment = field(default_factory=Assignment)   # every tensor value's layout


@dataclass(frozen=True)
class LaunchConfig:
    """How the runtime launches the kernel; stored beside the PTX/cubin as JSON."""
    kernel: str                  # the PTX entry name
    mapping: str                 # "cta" | "grid" | "grid-stride" | "single-thread"
    block: tuple[int, int, int]  # exact for "cta" and "grid" (the code is compiled for it), an upper bound otherwise
    grid: str                    # "ctas_per_sm:N" (sized to the device) | "fixed:1"
    ctas_per_sm: int
    arch: str
    slots: int = 0               # coordinates each thread keeps in registers (the CTA mapping's register form)
    layouts: dict = field(default_factory=dict)   # Assignment.to_json(): encodings, values, conversions
    # register-form entries for run-time row lengths (nvptx/variants.py), by increasing `max`;
    # a launch whose extent exceeds every `max` runs `kernel` as configured above
    variants: list = field(default_factory=list)
    iterations_per_cta: int = 1  # iterations of the `parallel` a CTA runs at once (short rows: cta_groups.py)
    abi: str = "void kernel(i64 *args, i64 *status): args and status in global memory"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> LaunchConfig:
        return cls(**{**data, "block": tuple(data["block"])})


def grid_parallel(kernel: Kernel) -> Op | None:
    """The top-level `parallel` op to spread over the grid, or None for one thread."""
    parallels = [op for op in kernel.body if op.name == "parallel"]
    if len(parallels) != 1:
        return None
    others = [op for op in kernel.body if op is not parallels[0] and op.name != "yield"]
    return parallels[0] if all(is_pure_tree(op) for op in others) else None


def plan_mapping(kernel: Kernel, specialization: Specialization | None = None) -> Mapping:
    known = known_extents(kernel, specialization or Specialization())
    cta = cta_plan(kernel, specialization) or grid_plan(kernel)
    if cta is not None:
        # every tensor over the row-major linearization of its coordinates, T threads
        def distribution(type_):
            return row_blocked(elements(type_, known), cta.width, cta.vector, cta.grid)
        kind = "grid" if cta.grid else "cta"
        layouts = assign(kernel.body, distribution, known)
        mark_staged(layouts, cta.staged)
        return Mapping(kind, cta.threads, cta.parallel, cta, layouts)
    grid = grid_parallel(kernel)
    one_thread = assign(kernel.body, None, known, one_thread_per_iteration=True)
    if grid is not None:
        return Mapping("grid-stride", BLOCK_THREADS, grid, layouts=one_thread)
    return Mapping("single-thread", 1, None, layouts=one_thread)


def launch_config(mapping: Mapping, entry: str, arch: str, variants: list | None = None) -> LaunchConfig:
    layouts, variants = mapping.layouts.to_json(), list(variants or [])
    if mapping.kind == "single-thread":
        return LaunchConfig(entry, mapping.kind, (1, 1, 1), "fixed:1", 0, arch, layouts=layouts, variants=variants)
    per_sm = max(1, RESIDENT_THREADS // mapping.threads)
    if mapping.cta is not None and mapping.cta.costly_prologue:
        per_sm = max(1, per_sm // COSTLY_PROLOGUE_SHRINK)
    return LaunchConfig(entry, mapping.kind, (mapping.threads, 1, 1), f"ctas_per_sm:{per_sm}", per_sm, arch,
                        mapping.cta.slots if mapping.cta else 0, layouts=layouts, variants=variants,
                        iterations_per_cta=mapping.cta.iterations if mapping.cta else 1)
