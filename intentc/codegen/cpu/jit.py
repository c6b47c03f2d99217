"""LLVM on the host, set up once per process: the target machine, the optimization
pipeline, object files and the MCJIT engines that load them (one per compiled kernel, kept
alive by the kernel object)."""
from __future__ import annotations

import contextlib
import functools

import llvmlite
import llvmlite.binding as llvm

from ..llvm_switches import LOCK as _LOCK   # process-wide LLVM options hold still while we compile


@functools.lru_cache(maxsize=1)
def host_target_machine() -> llvm.TargetMachine:
    """The process's target machine for optimizing and emitting objects (never handed to
    an engine: an MCJIT engine takes ownership of its target machine)."""
    return new_target_machine()


def new_target_machine(opt: int = 3) -> llvm.TargetMachine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    _load_libm()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=opt, reloc="pic", codemodel="jitdefault", jit=True)


@functools.lru_cache(maxsize=1)
def _load_libm() -> None:
    """Make libm's symbols resolvable by JIT-compiled code (most Pythons load it already)."""
    import ctypes.util
    name = ctypes.util.find_library("m")
    if name:
        with contextlib.suppress(RuntimeError):
            llvm.load_library_permanently(name)


def host_triple() -> str:
    return llvm.get_process_triple()


def host_data_layout() -> str:
    return str(host_target_machine().target_data)


def toolchain() -> dict[str, str]:
    return {"llvm": ".".join(map(str, llvm.llvm_version_info)), "llvmlite": llvmlite.__version__,
            "cpu": llvm.get_host_cpu_name(), "features": llvm.get_host_cpu_features().flatten()}


def parse_and_optimize(ir_text: str, opt_level: int = 3) -> llvm.ModuleRef:
    """Parse LLVM IR text, verify it and run the standard O`opt_level` pipeline."""
    with _LOCK:
        module = llvm.parse_assembly(ir_text)
        module.verify()
        if opt_level:
            builder = _pass_builder(min(opt_level, 3))
            builder.getModulePassManager().run(module, builder)
        return module


def _pass_builder(level: int):
    """A pass builder of one optimization level for one run (llvmlite keeps a run's
    instrumentation callbacks in its builder for good, and every later run calls them:
    `nvptx.machine.pass_builder`); it keeps its tuning options alive.

    Loops are vectorized but neither interleaved nor unrolled: on row softmax that halves
    the optimized IR and the whole LLVM time (~200 ms -> ~90 ms here, bench/compile_cpu.py)
    while the vector loops stay (interleaving only multiplies their accumulators)."""
    tuning = llvm.PipelineTuningOptions(speed_level=level)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    tuning.loop_interleaving = False
    tuning.loop_unrolling = False
    return llvm.create_pass_builder(host_target_machine(), tuning)


def load_object(data: bytes) -> llvm.ExecutionEngine:
    """An MCJIT engine holding an object file `emit_object` wrote in this or another process."""
    with _LOCK:
        empty = llvm.parse_assembly("")
        empty.triple = host_triple()
        engine = llvm.create_mcjit_compiler(empty, new_target_machine())
        engine.add_object_file(llvm.ObjectFileRef.from_data(data))
        engine.finalize_object()
        return engine


def emit_object(module: llvm.ModuleRef) -> bytes:
    with _LOCK:
        return host_target_machine().emit_object(module)
