"""LLVM's NVPTX target, set up once per process: one target machine per arch, one pass builder
per arch and optimization level. No fast-math: FMA contraction only where the IR carries
`contract` (fusion-legality), f32 div and sqrt stay IEEE round-to-nearest (`div.rn.f32`,
`sqrt.rn.f32`)."""
from __future__ import annotations

import contextlib
import functools
import threading

import llvmlite.binding as llvm

from .. import llvm_switches
from ..collection import collecting_meanwhile

# sm_90a: Hopper with its arch-specific instructions (wgmma, setmaxnreg); a Hopper launch picks it.
ARCHS = ("sm_80", "sm_90", "sm_90a")
PTX_VERSION = {"sm_80": "+ptx80", "sm_90": "+ptx80", "sm_90a": "+ptx80"}
LOCK = threading.Lock()
# The code generator's straight-line scalar optimizations that a plan may leave out (its
# `straight_line`; docs/gpu.md, "Compile pipeline"): Straight-Line Strength Reduction and
# NaryReassociate, by their names for LLVM's pass gate (`-opt-disable`).
STRAIGHT_LINE_PASSES = ("slsr", "nary-reassociate")


@functools.lru_cache(maxsize=1)
def _initialize() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def new_target_machine(arch: str, level: int = 2) -> llvm.TargetMachine:
    """`level`: the code generator's optimization level (docs/gpu.md, "Compile pipeline")."""
    _initialize()
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    return target.create_target_machine(cpu=arch, features=PTX_VERSION[arch], opt=level)


@functools.cache
def target_machine(arch: str, level: int = 2) -> llvm.TargetMachine:
    return new_target_machine(arch, level)


def pass_builder(arch: str, speed_level: int) -> llvm.PassBuilder:
    """A pass builder for one pass manager run (0.05 ms to build): llvmlite adds each run's
    instrumentation callbacks to the builder it is given for good, callbacks of objects that
    live only as long as the run, so with one builder for the process every pass of every
    run called every earlier run's callbacks (vector add's kernel pipeline 3.2 ms, 20.8 ms
    after 4,000 runs; docs/gpu.md, "Compile pipeline", session 11). At any level, LLVM's
    default module pipeline starts with NVVMReflect for `arch`."""
    tuning = llvm.PipelineTuningOptions(speed_level=speed_level)
    tuning.loop_vectorization = False
    tuning.slp_vectorization = True
    return llvm.create_pass_builder(target_machine(arch), tuning)


@functools.cache
def _inliner() -> llvm.ModulePassManager:
    inline = llvm.create_new_module_pass_manager()
    inline.add_always_inliner_pass()
    inline.add_global_dead_code_eliminate_pass()
    return inline


@functools.cache
def _lean_pipeline(combine: bool = True) -> llvm.FunctionPassManager:
    """SROA, one InstCombine (unless not `combine`), SimplifyCFG and aggressive DCE: what a
    tile generator's code needs from LLVM (its accumulator allocas become registers, index
    math folds); ptxas does the loop work."""
    lean = llvm.create_new_function_pass_manager()
    lean.add_sroa_pass()
    if combine:
        lean.add_instruction_combine_pass()
    lean.add_simplify_cfg_pass()
    lean.add_aggressive_dce_pass()
    return lean


def optimize(module: llvm.ModuleRef, arch: str, lean: bool = False, combine: bool = True) -> None:
    """The kernel pipeline (docs/gpu.md, "Compile pipeline") on a module whose functions other
    than the entry are internal: all of them are inlined, except libdevice's `noinline` helpers,
    then LLVM's O1 function simplification pipeline runs on what is left (`lean`: the lean
    pipeline instead, for the tile generators' kernels; without InstCombine unless `combine`)."""
    for function in module.functions:
        if function.linkage == llvm.Linkage.internal and not function.is_declaration and not _noinline(function):
            function.add_function_attribute("alwaysinline")
    _inliner().run(module, pass_builder(arch, 1))
    for function in module.functions:
        if not function.is_declaration:
            builder = pass_builder(arch, 1)
            (_lean_pipeline(combine) if lean else builder.getFunctionPassManager()).run(function, builder)


def _noinline(function) -> bool:
    return any(b"noinline" in attributes.split() for attributes in function.attributes)


def emit_ptx(module: llvm.ModuleRef, arch: str, strength_reduce: bool = True, level: int = 2,
             prepare: bool = True, collect: bool = False, dag_combine: bool = True) -> str:
    """PTX for an optimized module; `strength_reduce=False` runs the code generator without
    Loop Strength Reduction, `prepare=False` without CodeGenPrepare, `dag_combine=False`
    without the SelectionDAG combiner, `level` is its optimization level (docs/gpu.md,
    "Compile pipeline"); a module of `context(False)` runs it without STRAIGHT_LINE_PASSES.
    `collect`: the caller's IR is garbage (a compile's last LLVM call), so Python's collector
    frees it meanwhile (`codegen/collection.py`); not for an emit in the middle of a lowering,
    whose live objects a collection would only promote."""
    with contextlib.ExitStack() as switches:
        if not strength_reduce:
            switches.enter_context(llvm_switches.switched("disable-lsr", "1", "0"))
        if not prepare:
            switches.enter_context(llvm_switches.switched("disable-cgp", "1", "0"))
        if not dag_combine:
            switches.enter_context(llvm_switches.switched("combiner-disabled", "1", "0"))
        target = _machine_for(module, arch, level)
        with collecting_meanwhile() if collect else contextlib.nullcontext():
            return target.emit_assembly(module)


def context(straight_line: bool = True) -> llvm.ContextRef:
    """The LLVM context to parse a module into (call under LOCK): the global one, or, for a
    module whose code generation is to leave out STRAIGHT_LINE_PASSES, a context of its own
    (everything linked into the module must be parsed into it too)."""
    return llvm.get_global_context() if straight_line else _without_straight_line()


@functools.cache
def _without_straight_line() -> llvm.ContextRef:
    """An LLVM context whose code generation skips STRAIGHT_LINE_PASSES, every other context's
    running them as before. LLVM's `-opt-disable` cannot be set for a call: each setting adds
    to a process-wide list that nothing empties, and a context keeps for good the pass gate in
    force when a pass first asks it (the bisector, which runs every pass, or the disabler of
    the listed ones). So the global context asks first, the list is set once, and a context
    made after it asks (tests/codegen/test_straight_line.py, in fresh processes). Its kernel
    pipeline's runs register the disabler's callback on their pass builder, which no other
    run sees (`pass_builder`: one a run); the list names no pass of that pipeline."""
    with llvm_switches.LOCK:
        _ask_pass_gate(llvm.get_global_context())
        llvm.set_option("intentc", "-opt-disable=" + ",".join(STRAIGHT_LINE_PASSES))
        skipping = llvm.create_context()
        _ask_pass_gate(skipping)
    return skipping


def _ask_pass_gate(context: llvm.ContextRef) -> None:
    """Settles `context`'s pass gate: an empty function through the code generator, whose
    function passes ask the gate whether to run."""
    target_machine("sm_90").emit_assembly(llvm.parse_assembly("define void @gate() {\n  ret void\n}\n", context))


def _machine_for(module: llvm.ModuleRef, arch: str, level: int) -> llvm.TargetMachine:
    # The NVPTX printer numbers call sequences across everything one target machine emitted;
    # a module that can make a call gets a fresh machine (1-10 ms), which keeps its PTX a
    # function of the module alone (the artifact cache relies on it). A module whose only
    # function besides the entry is an LLVM intrinsic has no call sequence to number. (One walk
    # over the functions: each step is a few calls into LLVM, 0.1 ms a walk.)
    defined = 0
    for function in module.functions:
        if not function.is_declaration:
            defined += 1
        elif not function.name.startswith("llvm."):
            return new_target_machine(arch, level)
    return target_machine(arch, level) if defined == 1 else new_target_machine(arch, level)
