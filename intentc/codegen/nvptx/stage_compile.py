"""PTX for a staged program (`stages.py`): each stage lowered as its own entry (the same
kernel, `StagedHooks` for the stage), the entries linked into one module, then the usual
libdevice link and kernel pipeline. Every stage numbers the check sites alike (as the
register-form variants do, `variants.py`), so one abi.json decodes the status word whichever
stage raised it."""
from __future__ import annotations

import time

import llvmlite.binding as llvm

from ...ir.nodes import Kernel, Module
from ...options import Specialization
from ..layout.assign import assign, elements
from ..layout.encodings import row_blocked
from ..llvm.abi import layout, slot_count
from ..llvm.kernel import LoweredKernel, lower_kernel
from . import machine
from .emit import optimized_ptx
from .cta import known_extents, per_coordinate_regions
from .mapping import RESIDENT_THREADS, LaunchConfig, Mapping
from .outlined_math import outlines_math
from .staged import StagedHooks
from .stages import THREADS, StagePlan, domain_slots
from .variants import link_variant


def staged_mapping(kernel: Kernel, plan: StagePlan, specialization: Specialization | None) -> Mapping:
    """Every tensor over the chunk layout (V consecutive coordinates a thread, T threads,
    repeated K/V times, CTAs over the grid); reductions `#uniform`."""
    known = known_extents(kernel, specialization or Specialization())

    def distribution(type_):
        return row_blocked(elements(type_, known), THREADS, plan.vector, True)
    return Mapping("staged", THREADS, None, layouts=assign(kernel.body, distribution, known),
                   coordinate_regions=per_coordinate_regions(kernel), outlined_math=outlines_math("staged"))


def compile_stages(module: Module, kernel: Kernel, plan: StagePlan, arch: str, specialization: Specialization | None,
                   timings: dict, file: str, source: str | None, mark_entry) -> tuple[str, LaunchConfig, LoweredKernel]:
    mark = time.perf_counter()
    mapping = staged_mapping(kernel, plan, specialization)
    words = slot_count(layout(kernel))
    lowered_stages: list[tuple[str, LoweredKernel]] = []
    sites: list = []
    for number, stage in enumerate(plan.stages):
        # every stage numbers the check sites alike (one abi.json decodes every entry's status);
        # the hooks are not kept (they hold the lowering's IR, let go once printed)
        lowered = lower_kernel(module, kernel.name, StagedHooks(mapping, plan, stage, kernel, words), specialization,
                               file, source, sites)
        mark_entry(lowered, THREADS)
        sites = lowered.sites
        entry = stage.entry(lowered.function, number) if plan.grid_wide else lowered.function
        lowered_stages.append((entry, lowered))
    (entry, first), *others = lowered_stages
    first_text = first.take_text()
    other_texts = [(other_entry, other.take_text(), other.function) for other_entry, other in others]
    timings["lower-llvm"] = timings.get("lower-llvm", 0.0) + time.perf_counter() - mark
    mark = time.perf_counter()
    with machine.LOCK:
        linked = llvm.parse_assembly(first_text)
        linked.get_function(first.function).name = entry
        for other_entry, other_text, function in other_texts:
            link_variant(linked, other_text, function, other_entry)
        linked.verify()
        ptx = optimized_ptx(linked, arch, {name for name, _ in lowered_stages}, timings, mark,
                            strength_reduce=plan.strength_reduce)
    per_sm = RESIDENT_THREADS // THREADS
    if not plan.grid_wide:         # one launch: an element-wise program on the grid
        config = LaunchConfig(lowered_stages[0][0], "grid", (THREADS, 1, 1), f"ctas_per_sm:{per_sm}", per_sm, arch,
                              plan.slots, layouts=mapping.layouts.to_json(),
                              per_coordinate=sorted(mapping.coordinate_regions), outlined_math=mapping.outlined_math)
        return ptx, config, LoweredKernel(first.module, entry, first.slots, sites)
    stages = [{"entry": entry, "role": stage.role, "block": [THREADS, 1, 1],
               "grid": "fixed:1" if stage.role == "combine" else f"ctas_per_sm:{per_sm}"}
              for (entry, _), stage in zip(lowered_stages, plan.stages)]
    scratch = {**plan.to_json(), "domain": domain_slots(plan, kernel, first.slots)}
    config = LaunchConfig(lowered_stages[0][0], "staged", (THREADS, 1, 1), f"ctas_per_sm:{per_sm}", per_sm, arch,
                          plan.slots, layouts=mapping.layouts.to_json(), per_coordinate=sorted(mapping.coordinate_regions),
                          stages=stages, scratch=scratch, outlined_math=mapping.outlined_math)
    return ptx, config, LoweredKernel(first.module, entry, first.slots, sites)
