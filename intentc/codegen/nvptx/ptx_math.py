"""f32 libdevice functions as inline PTX: LLVM's own code for the function, pasted where it is
called (docs/gpu.md, "Flash attention", session 10; the CTA mapping's too since session 11).

Inlined, libdevice's `__nv_expf` is 12 LLVM instructions an element, which LLVM optimizes and
selects at every call: flash attention's summarizer calls it 32 times a tile, and those copies
were a quarter of the tensor-core kernel's LLVM instructions. Here the function is compiled
once per arch, alone, by the same pipeline and code generator (`machine.optimize`,
`machine.emit_ptx`: libdevice linked, `__CUDA_FTZ` 0 as in every kernel), and its PTX body,
registers renamed into a scope of their own, becomes an inline asm template: one LLVM
instruction a call, and ptxas gets the instructions LLVM would have emitted in place, so the
bits are the same. Only bodies without branches, calls or memory accesses (besides the
parameter's) qualify; any other function is left to the usual call (`template` is None).
"""
from __future__ import annotations

import functools
import re

import llvmlite.binding as llvm
from llvmlite import ir

from ..llvm.types import F32
from . import libdevice, machine

WRAPPER = "intentc_math_template"
# The mappings that call the templates besides the flash plans' `math_asm`: the CTA mapping
# (session 11, issue #13): softmax's and gelu's SASS is the same as with libdevice inlined
# but for register names, and `prefix_logsumexp`'s 16 exponentials and two logarithms were a
# tenth of its time to PTX. `Mapping.math_templates` records where (`launch.json`). On the
# H200 (session 12 round 1, `bench/cta_pipeline_ab.py`'s `math templates`) the CTA mapping's
# templates gave the same output bits as libdevice inlined and ran as fast (row_softmax 0.0399
# against 0.0401 ms, gelu_fwd 0.0593 / 0.0592, bias_act 0.0392-0.0400 / 0.0391-0.0396).
TEMPLATE_KINDS: frozenset[str] = frozenset({"cta"})
# A PTX register of the function's body (%r12, %rd3, %p1) or a declaration's range (%r<14>)
_REGISTER = re.compile(r"%([a-z]+)(?=\d|<)")
# what a template may not hold: branches and labels, calls, memory other than its parameter
_UNSUITABLE = re.compile(r"\$L|\bbra\b|\bcall\b|\b(?:ld|st)\.(?!param)|\.(?:local|global|const|shared)\b")


def templates_math(kind: str) -> bool:
    """Whether a mapping of `kind` calls the templates of its f32 libdevice functions."""
    return kind in TEMPLATE_KINDS


def call(b: ir.IRBuilder, libdevice_name: str, arch: str, x: ir.Value) -> ir.Value | None:
    """libdevice's f32 function `libdevice_name` of `x` as inline PTX, or None where its body is
    not a straight-line template."""
    text = template(libdevice_name, arch)
    if text is None:
        return None
    return b.asm(ir.FunctionType(F32, [F32]), text, "=f,f", [x], side_effect=False)


@functools.cache
def template(libdevice_name: str, arch: str) -> str | None:
    """The PTX body of `libdevice_name` (f32 -> f32) for `arch` as an inline asm template ($0
    the result, $1 the argument), or None."""
    body = _function_body(_compiled(libdevice_name, arch))
    if body is None:
        return None
    declarations, instructions = body
    lines = []
    for line in instructions:
        argument = re.fullmatch(r"ld\.param\.b32\s+(%\w+), \[\w+\];", line)
        result = re.fullmatch(r"st\.param\.b32\s+\[\w+\], (%\w+);", line)
        if argument:
            lines.append(f"mov.b32 {argument.group(1)}, $1;")
        elif result:
            lines.append(f"mov.b32 $0, {result.group(1)};")
        elif line != "ret;":
            lines.append(line)
    if _UNSUITABLE.search(" ".join(lines)):
        return None
    # the body's registers in a scope of their own, named apart from the kernel's
    return "{ " + " ".join(_REGISTER.sub(r"%m\1", line) for line in declarations + lines) + " }"


def _compiled(libdevice_name: str, arch: str) -> str:
    """PTX of a module whose one function returns `libdevice_name` of its argument."""
    from .hooks import DATA_LAYOUT, TRIPLE
    module = ir.Module()
    module.triple, module.data_layout = TRIPLE, DATA_LAYOUT
    callee = ir.Function(module, ir.FunctionType(F32, [F32]), libdevice_name)
    wrapper = ir.Function(module, ir.FunctionType(F32, [F32]), WRAPPER)
    b = ir.IRBuilder(wrapper.append_basic_block("entry"))
    b.ret(b.call(callee, list(wrapper.args)))
    flag = module.add_metadata([ir.Constant(ir.IntType(32), 4), ir.MetaDataString(module, "nvvm-reflect-ftz"),
                                ir.Constant(ir.IntType(32), 0)])
    module.add_named_metadata("llvm.module.flags", flag)
    with machine.LOCK:
        parsed = llvm.parse_assembly(str(module))
        libdevice.link(parsed, arch)
        for function in parsed.functions:
            if not function.is_declaration and function.name != WRAPPER:
                function.linkage = "internal"
        machine.optimize(parsed, arch)
        return machine.emit_ptx(parsed, arch)


def _function_body(ptx: str) -> tuple | None:
    """(register declarations, instructions) of the wrapper's body in `ptx`, or None."""
    start = ptx.find(WRAPPER + "(")
    if start < 0:
        return None
    opening = ptx.index("{", start)
    closing = ptx.index("\n}", opening)
    declarations: list[str] = []
    instructions: list[str] = []
    for raw in ptx[opening + 1:closing].splitlines():
        line = raw.split("//")[0].strip()
        if not line:
            continue
        (declarations if line.startswith(".reg") else instructions).append(" ".join(line.split()))
    return declarations, instructions
