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
    """A pass builder for one compile's runs (0.05 ms to build): llvmlite adds each run's
    instrumentation callbacks to its builder for good, so with one builder for the process
    every pass of every run called every earlier run's callbacks (vector add's kernel
    pipeline 3.2 ms, 20.8 ms after 4,000 runs; docs/gpu.md, "Compile pipeline", session 11).
    At any level, LLVM's default module pipeline starts with NVVMReflect for `arch`."""
    tuning = llvm.PipelineTuningOptions(speed_level=speed_level)
    tuning.loop_vectorization = False
    tuning.slp_vectorization = True
    return llvm.create_pass_builder(target_machine(arch), tuning)


def _kernel_pipeline(arch: str):
    """A compile's pass builder (`pass_builder`), the inliner and O1's simplification."""
    builder = pass_builder(arch, 1)
    inline = llvm.create_new_module_pass_manager()
    inline.add_always_inliner_pass()
    inline.add_global_dead_code_eliminate_pass()
    return builder, inline, builder.getFunctionPassManager()


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
    builder, inline, simplify = _kernel_pipeline(arch)
    inline.run(module, builder)
    simplify = _lean_pipeline(combine) if lean else simplify
    for function in module.functions:
        if not function.is_declaration:
            simplify.run(function, builder)


def _noinline(function) -> bool:
    return any(b"noinline" in attributes.split() for attributes in function.attributes)


def emit_ptx(module: llvm.ModuleRef, arch: str, strength_reduce: bool = True, level: int = 2,
             prepare: bool = True, straight_line: bool = True, collect: bool = False) -> str:
    """PTX for an optimized module; `strength_reduce=False` runs the code generator without
    Loop Strength Reduction, `prepare=False` without CodeGenPrepare, `straight_line=False`
    without STRAIGHT_LINE_PASSES (on a copy of `module` in a context of its own), `level` is
    its optimization level (docs/gpu.md, "Compile pipeline"). `collect`: the caller's IR is
    garbage (a compile's last LLVM call), so Python's collector frees it meanwhile
    (`codegen/collection.py`); not for an emit in the middle of a lowering, whose live
    objects a collection would only promote."""
    with contextlib.ExitStack() as switches:
        if not strength_reduce:
            switches.enter_context(llvm_switches.switched("disable-lsr", "1", "0"))
        if not prepare:
            switches.enter_context(llvm_switches.switched("disable-cgp", "1", "0"))
        if not straight_line:
            module = llvm.parse_bitcode(module.as_bitcode(), _without_straight_line())
        target = _machine_for(module, arch, level)
        with collecting_meanwhile() if collect else contextlib.nullcontext():
            return target.emit_assembly(module)


@functools.cache
def _without_straight_line() -> llvm.ContextRef:
    """An LLVM context whose code generation skips STRAIGHT_LINE_PASSES, every other context's
    running them as before. LLVM's `-opt-disable` cannot be set for a call: each setting adds
    to a process-wide list that nothing empties, and a context keeps for good the pass gate in
    force when a pass first asks it (the bisector, which runs every pass, or the disabler of
    the listed ones). So the global context asks first, the list is set once, and a context
    made after it asks. Only the code generator's (legacy) passes run in that context: a new
    pass manager's run would leave a callback of the disabler's in its pass builder for good
    (llvmlite registers the instrumentation on the builder at every run), which the global
    context's runs would then call (tests/codegen/test_straight_line.py, in fresh processes)."""
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
    # function besides the entry is an LLVM intrinsic has no call sequence to number.
    if all(function.name.startswith("llvm.") for function in module.functions if function.is_declaration) \
            and sum(not function.is_declaration for function in module.functions) == 1:
        return target_machine(arch, level)
    return new_target_machine(arch, level)
