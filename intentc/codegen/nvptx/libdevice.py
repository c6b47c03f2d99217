"""libdevice, parsed once per process; each set of `__nv_*` functions a module calls is cut
out of it once (a clone with everything else internalized and dropped) and cached as
bitcode, so a compile links only what it uses and never clones the 470 KB library again."""
from __future__ import annotations

import functools
import threading

import llvmlite.binding as llvm

from ...toolchain.nvidia import libdevice_path

_LOCK = threading.Lock()
_SUBSETS: dict[frozenset[str], bytes] = {}


@functools.lru_cache(maxsize=1)
def libdevice():
    """The parsed libdevice module (never linked into anything directly: it is cloned)."""
    return llvm.parse_bitcode(libdevice_path().read_bytes())


def used(module) -> frozenset[str]:
    return frozenset(f.name for f in module.functions if f.is_declaration and f.name.startswith("__nv_"))


def _subset(names: frozenset[str]) -> bytes:
    with _LOCK:
        if names not in _SUBSETS:
            clone = libdevice().clone()
            for function in clone.functions:
                if not function.is_declaration and function.name not in names:
                    function.linkage = "internal"
            manager = llvm.ModulePassManager()
            manager.add_global_dead_code_eliminate_pass()
            manager.run(clone, llvm.create_pass_builder(_tm(), llvm.PipelineTuningOptions()))
            _SUBSETS[names] = clone.as_bitcode()
        return _SUBSETS[names]


def _tm():
    from .machine import target_machine
    return target_machine("sm_80")


def link(module) -> None:
    """Link the libdevice functions `module` calls into it (their helpers come along)."""
    names = used(module)
    if names:
        module.link_in(llvm.parse_bitcode(_subset(names)))
