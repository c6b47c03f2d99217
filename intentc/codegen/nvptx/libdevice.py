"""libdevice, parsed once per process. Each set of `__nv_*` functions a module calls is cut out
of it once per arch: a clone with everything else internalized, run through LLVM's O3 and
cached as bitcode. O3 starts with NVVMReflect, which folds `__CUDA_ARCH` for the arch and
`__CUDA_FTZ` to 0 (no `nvvm-reflect-ftz` flag in the clone; the kernel's says 0 too); the
kernel pipeline (`machine.optimize`) has no NVVMReflect and links the functions already
optimized."""
from __future__ import annotations

import functools
import threading

import llvmlite.binding as llvm

from ...toolchain.nvidia import libdevice_path
from . import machine

_LOCK = threading.Lock()
_SUBSETS: dict[tuple[str, frozenset[str]], bytes] = {}


@functools.lru_cache(maxsize=1)
def libdevice() -> llvm.ModuleRef:
    """The parsed libdevice module (never linked into anything directly: it is cloned)."""
    return llvm.parse_bitcode(libdevice_path().read_bytes())


def instructions_of(name: str) -> int:
    """LLVM instructions in the body of libdevice's function `name` (as libdevice holds it,
    before any optimization)."""
    with _LOCK:          # the shared parsed module, which _subset clones under the lock
        function = libdevice().get_function(name)
        return sum(len(list(block.instructions)) for block in function.blocks)


def used(module: llvm.ModuleRef) -> frozenset[str]:
    return frozenset(f.name for f in module.functions if f.is_declaration and f.name.startswith("__nv_"))


def _subset(names: frozenset[str], arch: str) -> bytes:
    with _LOCK:
        if (arch, names) not in _SUBSETS:
            clone = libdevice().clone()
            for function in clone.functions:
                if not function.is_declaration and function.name not in names:
                    function.linkage = "internal"
            unused = llvm.create_new_module_pass_manager()
            unused.add_global_dead_code_eliminate_pass()
            unused.run(clone, machine.pass_builder(arch, 3))
            builder = machine.pass_builder(arch, 3)
            builder.getModulePassManager().run(clone, builder)
            _SUBSETS[arch, names] = clone.as_bitcode()
        return _SUBSETS[arch, names]


def link(module: llvm.ModuleRef, arch: str, context: llvm.ContextRef | None = None) -> None:
    """Link the libdevice functions `module` calls into it (their helpers come along);
    `context`: `module`'s, where it is not the global one (`machine.context`)."""
    names = used(module)
    if names:
        module.link_in(llvm.parse_bitcode(_subset(names, arch), context))
