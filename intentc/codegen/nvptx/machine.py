"""LLVM's NVPTX target, set up once per process: one target machine and one O3 pipeline per
arch. No fast-math: FMA contraction only where the IR carries `contract` (fusion-legality),
f32 div and sqrt stay IEEE round-to-nearest (`div.rn.f32`, `sqrt.rn.f32`)."""
from __future__ import annotations

import functools
import threading

import llvmlite.binding as llvm

ARCHS = ("sm_80", "sm_90")
PTX_VERSION = {"sm_80": "+ptx80", "sm_90": "+ptx80"}
LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _initialize() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def new_target_machine(arch: str):
    _initialize()
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    return target.create_target_machine(cpu=arch, features=PTX_VERSION[arch], opt=3)


@functools.lru_cache(maxsize=None)
def target_machine(arch: str):
    return new_target_machine(arch)


@functools.lru_cache(maxsize=None)
def _pass_builder(arch: str):
    tuning = llvm.PipelineTuningOptions(speed_level=3)
    tuning.loop_vectorization = False
    tuning.slp_vectorization = True
    return llvm.create_pass_builder(target_machine(arch), tuning), tuning


def optimize(module, arch: str) -> None:
    builder = _pass_builder(arch)[0]
    builder.getModulePassManager().run(module, builder)


def emit_ptx(module, arch: str) -> str:
    # The NVPTX printer numbers call sequences across everything one target machine emitted;
    # a fresh machine per module (about 1 ms) keeps the PTX a function of the module alone,
    # which the artifact cache relies on.
    return new_target_machine(arch).emit_assembly(module)
