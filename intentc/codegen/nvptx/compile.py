"""KIR kernel → PTX text (+ launch configuration) → cubin. One lowering (`codegen.llvm`),
NVPTX hooks; this module only adds the entry's calling convention, libdevice and LLVM's
NVPTX code generator."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, fields, replace

import llvmlite.binding as llvm
from llvmlite import ir

from ...diagnostics import Diagnostic, DiagnosticError
from ...ir.nodes import Kernel, Module
from ...options import Specialization
from ..llvm.kernel import LoweredKernel, lower_kernel
from . import machine
from .emit import optimized_ptx
from .hooks import NvptxHooks
from .mapping import LaunchConfig, Mapping, generic_mapping, launch_config, plan_mapping
from .stage_compile import compile_stages
from .stages import stage_plan
from .tile_structured import StructuredPlan
from .variants import (
    VariantRule, check_variant, eager_variants, exact_row, link_variant, served_launches, variant_mapping, variant_rule,
)

BAD_ARCH = "E0062"
# The mappings a tensor program over one domain leaves for the chunked stages (stages.py):
# one thread (grid-wide ops), and the grid form's loop an op (element-wise programs: one
# chunk loop for every op, each element read once, K coordinates a thread in flight).
STAGED_MAPPINGS = ("single-thread", "grid")


@dataclass
class PtxKernel:
    ptx: str
    launch: LaunchConfig
    lowered: LoweredKernel

    def launch_json(self) -> str:
        """`launch.to_json()`'s text, from the fields themselves: they hold JSON data already
        (plans' `to_json()`), so `asdict`'s deep copy (two thirds of the time) is not needed."""
        return json.dumps({name: getattr(self.launch, name) for name in _LAUNCH_FIELDS}, indent=2) + "\n"


_LAUNCH_FIELDS = [launch_field.name for launch_field in fields(LaunchConfig)]


def _mark_entry(lowered: LoweredKernel, threads: int, resident_ctas: int = 0) -> None:
    module = lowered.module
    entry = module.get_global(lowered.function)
    entry.calling_convention = "ptx_kernel"
    # .maxntid: ptxas fits registers to the CTA size the code is compiled for.
    module.add_named_metadata("nvvm.annotations", [entry, ir.MetaDataString(module, "maxntidx"),
                                                    ir.Constant(ir.IntType(32), threads)])
    if resident_ctas:   # .minnctapersm: registers capped so that this many CTAs fit an SM
        module.add_named_metadata("nvvm.annotations", [entry, ir.MetaDataString(module, "minctasm"),
                                                        ir.Constant(ir.IntType(32), resident_ctas)])
    # libdevice's __nvvm_reflect("__CUDA_FTZ") → 0: subnormals kept, IEEE everywhere.
    flag = module.add_metadata([ir.Constant(ir.IntType(32), 4), ir.MetaDataString(module, "nvvm-reflect-ftz"),
                                ir.Constant(ir.IntType(32), 0)])
    module.add_named_metadata("llvm.module.flags", flag)


def compile_ptx(module: Module, kernel_name: str, arch: str, specialization: Specialization | None = None,
                timings: dict | None = None, file: str = "<input>", source: str | None = None) -> PtxKernel:
    """PTX for one verified (and pass-optimized) kernel; DiagnosticError for what cannot be lowered."""
    if arch not in machine.ARCHS:
        raise DiagnosticError([Diagnostic(BAD_ARCH, f"no NVPTX arch `{arch}`", 1, 1, file,
                                          "archs: " + ", ".join(machine.ARCHS))], source)
    timings = timings if timings is not None else {}
    kernel = module.find(kernel_name)
    assert isinstance(kernel, Kernel), kernel_name
    mark = time.perf_counter()
    mapping = plan_mapping(kernel, specialization, module, arch)
    staged = stage_plan(kernel, specialization) if mapping.kind in STAGED_MAPPINGS else None
    if staged is not None:
        return PtxKernel(*compile_stages(module, kernel, staged, arch, specialization, timings, file, source,
                                         _mark_entry))

    def lower(mapping: Mapping, sites: list | None = None) -> LoweredKernel:
        lowered = lower_kernel(module, kernel_name, NvptxHooks(mapping, arch), specialization, file, source, sites)
        resident = mapping.mma.resident if mapping.mma else mapping.plan.resident if mapping.plan else \
            mapping.cta.resident if mapping.cta else 0
        _mark_entry(lowered, mapping.threads, resident)
        return lowered
    rule = variant_rule(kernel, mapping, specialization)
    serves = None
    if specialization is not None and specialization.variant:   # this one variant alone
        fewest, most = check_variant(kernel, rule, specialization.variant, file, source)
        specialization = exact_row(specialization, rule, fewest, most)   # (what `lower` lowers with)
        mapping = variant_mapping(kernel, mapping, specialization, fewest, most)
        serves, rule = served_launches(kernel.name, mapping, rule), None
    lowered = lower(mapping)
    variants = []
    mappings = [mapping]
    lazy = specialization is not None and specialization.lazy_variants
    for variant, entry_mapping in eager_variants(kernel, mapping, rule, specialization) if rule and not lazy else ():
        # every entry numbers the check sites alike (one abi.json decodes every entry's status)
        variants.append((variant, lower(entry_mapping, lowered.sites)))
        mappings.append(entry_mapping)
        lowered.sites = variants[-1][1].sites
    fallback = _fallback(kernel, mapping, lowered, lower, specialization, module)
    text = lowered.take_text()
    linked = [(variant.entry, lowered_) for variant, lowered_ in variants] + [f[:2] for f in fallback]
    linked_texts = [(entry, variant_lowered.take_text(), variant_lowered.function) for entry, variant_lowered in linked]
    timings["lower-llvm"] = timings.get("lower-llvm", 0.0) + time.perf_counter() - mark
    mark = time.perf_counter()
    every = mappings + [f[2] for f in fallback]
    with machine.LOCK:
        context = machine.context(straight_line=any(map(_straight_line, every)))
        parsed = llvm.parse_assembly(text, context)
        for entry, variant_text, function in linked_texts:
            link_variant(parsed, variant_text, function, entry, context)
        parsed.verify()
        entries = {lowered.function} | {entry for entry, _ in linked}
        strength_reduce = not (_past_variants(mapping, rule) or all(map(_unrolled, mappings)))
        ptx = optimized_ptx(parsed, arch, entries, timings, mark, strength_reduce=strength_reduce,
                            lean=all(_tiled(m) or _lean_plan(m) or _past_variants(m, rule) for m in every),
                            level=max(map(_codegen_level, every)),
                            combine=all(map(_instcombine, every)), prepare=any(map(_codegen_prepare, every)),
                            dag_combine=any(map(_dag_combine, every)), context=context)
    config = replace(launch_config(mapping, lowered.function, arch, [variant.to_json() for variant, _ in variants],
                                   rule.to_json() if rule else {}), strength_reduce=strength_reduce)
    if serves is not None:
        config = replace(config, serves=serves.to_json())
    for entry, _, fallback_mapping in fallback:
        config.mma["fallback"] = _fallback_record(launch_config(fallback_mapping, entry, arch))
    return PtxKernel(ptx, config, lowered)


def variant_rule_of(module: Module, kernel_name: str, arch: str, specialization: Specialization) -> VariantRule | None:
    """The `variant_rule` a lazy compile_ptx of the (pass-optimized) kernel records, from its
    mapping alone, nothing lowered: a runtime that defers the kernel's own entry to the
    launches that need it asks this first (runtime/dynamic_rows.py)."""
    kernel = module.find(kernel_name)
    assert isinstance(kernel, Kernel), kernel_name
    mapping = plan_mapping(kernel, specialization, module, arch)
    if mapping.kind in STAGED_MAPPINGS and stage_plan(kernel, specialization) is not None:
        return None
    return variant_rule(kernel, mapping, specialization)


def _fallback(kernel: Kernel, mapping: Mapping, lowered: LoweredKernel, lower, specialization, module) -> list:
    """The warp-specialized MMA mapping's entry for launches whose views have no tensor map:
    [(entry name, lowered, its mapping)] — the cp.async plan, or for operands only the copy
    engine widens, the generic mapping; [] for other mappings."""
    from .wgmma_tma import FALLBACK_SUFFIX, TmaPlan
    plan = mapping.mma
    if not isinstance(plan, TmaPlan):
        return []
    chosen = plan.fallback_mapping(mapping) if plan.fallback is not None else \
        generic_mapping(kernel, specialization, module)
    fallback = lower(chosen, lowered.sites)
    lowered.sites = fallback.sites
    return [(lowered.function + FALLBACK_SUFFIX, fallback, chosen)]


def _fallback_record(config: LaunchConfig) -> dict:
    """How the runtime launches the fallback entry (`launch.json` `mma.fallback`)."""
    return {"entry": config.kernel, "mapping": config.mapping, "threads": config.block[0], "grid": config.grid,
            "dynamic_shared_bytes": config.shared_bytes, **({"plan": config.mma} if config.mma else {})}


def _unrolled(mapping: Mapping) -> bool:
    """The CTA mapping's register form and the MMA mapping: each iteration (each K step) is
    one unrolled block whose many addresses are affine in the loop's counter. There, LLVM's
    Loop Strength Reduction took about half of code generation (tiled matmul to PTX: 0.50
    -> 0.32 s of CPU) for PTX that ran as fast or faster without it on the H200, with no
    spills and no more registers (ptxas -v); so the warp-rows mapping, whose loop over a row
    makes a few vector loads a trip: LSR was half of `batched_dot_f16`'s code generation, and
    without it ptxas -v gives 56 registers instead of 61 (`q4k_q8k_matvec` 61 either way); and
    the lane-rows and lane-dots plans where they say so (`LaneRows.strength_reduce`,
    `LaneDotsPlan.strength_reduce`), and the CTA plans of generic scans (`CtaPlan.strength_reduce`).
    In the other mappings' loops over a row it saves registers and spills."""
    return (mapping.cta is not None and (mapping.cta.slots > 0 or not mapping.cta.strength_reduce)) or \
        mapping.mma is not None or mapping.kind in ("warp-rows", "flash") or \
        not getattr(mapping.lanes, "strength_reduce", True) or not getattr(mapping.plan, "strength_reduce", True)


def _past_variants(mapping: Mapping, rule: VariantRule | None) -> bool:
    """The CTA mapping's dynamic form as the entry of a dynamic row with register-form
    variants (`rule`): it serves only the rows past them (longer than `rule.largest`, or
    empty). Its loops over the row need no Loop Strength Reduction: without it ptxas -v gives
    fewer registers and no spills (softmax 40 -> 32, layernorm 58 -> 32, dropout 40 -> 30,
    row sum and cumsum +-2), and LSR was about a third of its code generation (the dynamic
    softmax's `intentc compile`); it takes the lean pipeline (`machine._lean_pipeline`), another fifth
    (ptxas -v: softmax 32 -> 40 registers, no spills). Static rows on the dynamic form (no
    rule) keep both."""
    return rule is not None and mapping.cta is not None


def _codegen_level(mapping: Mapping) -> int:
    """LLVM's code generation level for the mapping: its plan's `codegen` (the flash plans:
    0, docs/gpu.md "Flash attention"; an MMA plan's, "Compile pipeline"), else 2."""
    return min(getattr(plan, "codegen", 2) for plan in (mapping.plan, mapping.mma))


def _instcombine(mapping: Mapping) -> bool:
    """Whether the LLVM pipeline runs InstCombine for the mapping: its plans' `instcombine`
    (the flash and MMA plans' choice), else yes."""
    return all(getattr(plan, "instcombine", True) for plan in (mapping.plan, mapping.mma))


def _codegen_prepare(mapping: Mapping) -> bool:
    """Whether the code generator runs CodeGenPrepare for the mapping: its MMA plan's
    `codegen_prepare` (docs/gpu.md, "Compile pipeline"), else yes. A module runs it when any
    of its entries does (the warp-specialized kernel's entry beside its fallback's)."""
    return getattr(mapping.mma, "codegen_prepare", True)


def _straight_line(mapping: Mapping) -> bool:
    """Whether the code generator runs its straight-line scalar optimizations for the mapping
    (`machine.STRAIGHT_LINE_PASSES`): its MMA plan's `straight_line` (docs/gpu.md, "Compile
    pipeline"), else yes. A module runs them when any of its entries does."""
    return getattr(mapping.mma, "straight_line", True)


def _dag_combine(mapping: Mapping) -> bool:
    """Whether the code generator runs the SelectionDAG combiner for the mapping: its plans'
    `dag_combine` (the tensor-core flash plan's choice, docs/gpu.md "Flash attention"), else yes."""
    return all(getattr(plan, "dag_combine", True) for plan in (mapping.plan, mapping.mma))


def _tiled(mapping: Mapping) -> bool:
    """The `mma.sync`/`mma.sp` tile generators' kernels, the structured (scaled, sparse)
    contractions and flash attention: unrolled fragments and staging whose index math LLVM
    only has to fold, so they take the lean pipeline (`machine.optimize`): a third of the O1
    pipeline's time, and as few or fewer registers (ptxas -v; docs/gpu.md, "Compile
    pipeline"). The warp-specialized wgmma kernels and the dense CUDA-core SGEMM keep O1
    (their block layout and loops were tuned under it)."""
    plan = mapping.mma
    return (plan is not None and (plan.instruction.startswith("mma.") or isinstance(plan, StructuredPlan))) \
        or mapping.kind == "flash"


def _lean_plan(mapping: Mapping) -> bool:
    """The lane-rows plan says `lean` (`LaneRows.lean`). (Session 9 also gave it to CTA
    iterations that combine nothing and call costly ops; with each choice compiled apart the
    H200 ran dropout 11 % slower on it, 0.0741 against 0.0663 ms, gelu_fwd and kaiser alike:
    bench/results/cta-choices-ab-20261202-s9-h200/.)"""
    return bool(getattr(mapping.lanes, "lean", False))


def assemble_cubin(ptx: str, arch: str, timings: dict | None = None) -> bytes:
    from ...toolchain.nvidia import ToolchainError, assemble
    mark = time.perf_counter()
    try:
        return assemble(ptx, arch)
    except ToolchainError as error:
        raise DiagnosticError([Diagnostic("E0082", str(error), 1, 1, "<ptxas>")]) from None
    finally:
        if timings is not None:
            timings["ptxas"] = timings.get("ptxas", 0.0) + time.perf_counter() - mark
