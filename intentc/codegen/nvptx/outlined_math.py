"""f32 libdevice functions called, not inlined, where the mapping repeats its coordinate code
(issue #13: compile time; docs/gpu.md "Compile pipeline").

The register form unrolls a coordinate's code K times a thread, the grid form's chunks K
times, the dynamic form DYNAMIC_UNROLL times and its costly values again at every use: each
copy inlined libdevice's body of every math function it calls, which LLVM then optimized
and selected once a copy. A long function (`__nv_lgammaf`, `__nv_erfcf`, `__nv_sinf`: more
than OUTLINE_INSTRUCTIONS in libdevice's own body) is instead one `noinline` function of the
module (`llvm.outlined`) holding libdevice's body once, called from every copy: the same
function of the same operand, so the same bits (a call changes no rounding; nothing is
contracted across it). ptxas keeps it a call (`CALL.REL` in the SASS): a call and return an
element against code size, which pays for a long body only. `Mapping.outlined_math` records
where (`launch.json` `outlined_math`).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from llvmlite import ir

from ..llvm.outlined import outlined
from ..llvm.types import F32
from .libdevice import instructions_of

if TYPE_CHECKING:
    from ..llvm.emitter import Emitter

# the mappings whose coordinate code repeats (cta.py's register and dynamic forms, the grid
# and staged programs' chunks)
OUTLINING_KINDS = frozenset({"cta", "grid", "staged"})
# LLVM instructions of a libdevice function's own body (before its O3 for the arch) past
# which it is outlined: erff (118), logf (125), asinf, log1pf, erfcf, lgammaf (997), sinf,
# powf; expf (55), tanhf (76) and sqrtf stay inline. H200 (bench/results/cscan-20261202-s9-h200-r1/,
# the same bits): special_math with lgammaf and erfcf outlined 0.0538 / 0.0540 ms, gelu_fwd
# with erff and expf outlined 0.0587 / 0.0584
OUTLINE_INSTRUCTIONS = 100


def outlines_math(kind: str) -> bool:
    """Whether a mapping of `kind` outlines long libdevice functions."""
    return kind in OUTLINING_KINDS


def long_function(libdevice_name: str) -> bool:
    return _body_instructions(libdevice_name) > OUTLINE_INSTRUCTIONS


@functools.cache
def _body_instructions(libdevice_name: str) -> int:
    return instructions_of(libdevice_name)


def call_outlined(em: Emitter, libdevice_name: str, x: ir.Value) -> ir.Value:
    """libdevice's `libdevice_name` (an f32 function of one f32) of `x`, through the module's
    one outlined function for it."""
    def body(value: ir.Value) -> ir.Value:
        return em.b.call(em.declare(libdevice_name, F32, [F32]), [value])
    helper = outlined(em, f"intentc_{libdevice_name.removeprefix('__nv_')}", ir.FunctionType(F32, [F32]), body)
    return em.b.call(helper, [x])
