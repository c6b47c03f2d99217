"""The LLVM IR text of a lowered module, for LLVM to parse.

llvmlite prints each instruction through generic `str.format` templates (~9 µs an
instruction on the dev VM, more than building it), and an unrolled register-form kernel has
thousands: printing was half of `lower-llvm`. The instruction kinds that are most of them
(integer and float arithmetic, casts, compares, loads, stores, selects, address arithmetic,
branches, allocas) are formatted here with f-strings (the other kinds, and any instruction
with metadata, are left to llvmlite), and each defined function's body is joined here in one
pass instead of llvmlite's per-line `format` over each instruction's cached text (every
sample's main module: 243 → 175 ms of CPU on the dev VM, medians of 8 alternations; session
10, branches, allocas, aligned accesses and constant operands here too: 288 → 273 ms). The
text is exactly llvmlite's: `tests/codegen/test_printing.py` holds every sample's to it.
"""
from __future__ import annotations

import functools
import struct

from llvmlite import ir
from llvmlite.ir import instructions as ins


def _ref(value) -> str:
    """`value.get_reference()`, an integer or float constant's formatted here: llvmlite formats
    each new constant object again (an i64 1.5 µs, a float 3.3: three struct conversions and
    a format string built for each), and the lowering makes a constant object a use."""
    if type(value) is ir.Constant:
        kind, constant = type(value.type), value.constant
        if kind is ir.IntType and type(constant) is int:
            return str(constant)
        if kind in _FLOATS and type(constant) is float:
            return _float_text(value.type, _DOUBLE.pack(constant))      # (by bits: 0.0 == -0.0)
    return value.get_reference()


_DOUBLE = struct.Struct("d")
_FLOATS = (ir.HalfType, ir.FloatType, ir.DoubleType)


@functools.lru_cache(maxsize=1024)
def _float_text(type_: ir.Type, bits: bytes) -> str:
    """A float constant's text (llvmlite's): a kernel has few distinct ones."""
    return type_.format_constant(_DOUBLE.unpack(bits)[0])


def _arithmetic(i) -> str:
    opname = " ".join([i.opname, *i.flags]) if i.flags else i.opname
    operands = i.operands
    if len(operands) == 2:      # (most: a binary operation's two, without a list and a join)
        return f"{opname} {i.type} {_ref(operands[0])}, {_ref(operands[1])}"
    return f"{opname} {i.type} {', '.join([_ref(o) for o in operands])}"


def _cast(i) -> str:
    (value,) = i.operands
    return f"{i.opname} {value.type} {_ref(value)} to {i.type}"


def _compare(i) -> str:
    lhs, rhs = i.operands
    flags = "".join(" " + flag for flag in i.flags)
    return f"{i.opname}{flags} {i.op} {lhs.type} {_ref(lhs)}, {_ref(rhs)}"


def _load(i) -> str:
    (pointer,) = i.operands
    return f"load {i.type}, {pointer.type} {pointer.get_reference()}{_align(i)}"


def _align(i) -> str:
    return "" if i.align is None else f", align {i.align}"


def _alloca(i) -> str:
    count = "".join([f", {o.type} {o.get_reference()}" for o in i.operands])
    return f"alloca {i.allocated_type}{count}{_align(i)}"


def _select(i) -> str:
    cond, lhs, rhs = i.operands
    return (f"select {' '.join(i.flags)} {cond.type} {_ref(cond)}, {lhs.type} {_ref(lhs)}, "
            f"{rhs.type} {_ref(rhs)}")


def _gep(i) -> str:
    indices = ", ".join([f"{index.type} {_ref(index)}" for index in i.indices])
    op = "getelementptr inbounds" if i.inbounds else "getelementptr"
    return f"{op} {i.source_etype}, {i.pointer.type} {i.pointer.get_reference()}, {indices}"


def _extract_value(i) -> str:
    # the fields of an inline asm's or MMA's result struct (flash attention: 800 of them)
    return f"extractvalue {i.aggregate.type} {i.aggregate.get_reference()}, {', '.join(map(str, i.indices))}"


def _phi(i) -> str:
    # llvmlite's spacing ("phi  float" without flags); the flash kernels carry ~300 values through loops
    incomings = ", ".join([f"[{_ref(value)}, {block.get_reference()}]" for value, block in i.incomings])
    return f"phi {' '.join(i.flags)} {i.type} {incomings}"


def _vector_element(i) -> str:
    return f"{i.opname} {', '.join([f'{o.type} {_ref(o)}' for o in i.operands])}"


# The instruction classes formatted here (exact classes: subclasses print differently).
_VALUE_TEXT = {ins.Instruction: _arithmetic, ins.CastInstr: _cast, ins.ICMPInstr: _compare,
               ins.FCMPInstr: _compare, ins.LoadInstr: _load, ins.SelectInstr: _select, ins.GEPInstr: _gep,
               ins.ExtractValue: _extract_value, ins.ExtractElement: _vector_element,
               ins.InsertElement: _vector_element, ins.PhiInstr: _phi, ins.AllocaInstr: _alloca}


def _store(i) -> str:
    value, pointer = i.operands
    return f"store {value.type} {_ref(value)}, {pointer.type} {pointer.get_reference()}{_align(i)}"


def _branch(i) -> str:
    """`br` with its operands (a branch's label; a conditional one's i1 and two labels)."""
    return f"{i.opname} {', '.join([f'{o.type} {o.get_reference()}' for o in i.operands])}"


def _call(i) -> str | None:
    """A plain call (intrinsics, libdevice, inline asm): no calling convention, tail marker,
    fast-math flags or attributes, a fixed argument list."""
    function_type = i.callee.function_type          # (a property: read once)
    if i.cconv or i.tail or i.fastmath or i.attributes or i.arg_attributes or function_type.var_arg:
        return None
    arguments = ", ".join([f"{a.type} {_ref(a)}" for a in i.args])
    return f"call {function_type.return_type} {i.callee.get_reference()}({arguments})"


def module_text(module: ir.Module, numbered: bool = False) -> str:
    """str(module): llvmlite's module text (`Module.__repr__`), with each defined function's
    body written here in one pass (llvmlite formats every line again through `str.format`).
    `numbered`: each instruction's result is a number (`%7`), not its name (`_number_results`)."""
    lines = [f'; ModuleID = "{module.name}"', f'target triple = "{module.triple}"',
             f'target datalayout = "{module.data_layout}"', ""]
    lines += [named.get_declaration() for named in module.get_identified_types().values()]
    lines += [_function_text(value, numbered) if type(value) is ir.Function and value.blocks else str(value)
              for value in module.globals.values()]
    lines += module._get_metadata_lines()
    return "\n".join(lines)


def _number_results(function: ir.Function) -> None:
    """Makes each instruction result's reference its number in the function (`%0`, `%1`, ...:
    LLVM numbers unnamed values in order of definition; llvmlite names every argument and
    block, so the instructions' numbers start at 0). LLVM's parser then makes no name for
    them: every sample's text parses in about a quarter less time, into the same module but
    for the names (the same PTX). The reference is the one llvmlite caches for
    `get_reference`, so every printer of an operand (this one's, llvmlite's) writes it."""
    number = 0
    for block in function.blocks:
        for instruction in block.instructions:
            if type(instruction.type) is not ir.VoidType:
                cached = instruction.__dict__
                cached[_CACHED_REFERENCE] = f"%{number}"
                cached.pop(_CACHED_TEXT, None)      # (a text llvmlite cached holds the name)
                number += 1


# llvmlite's caches (`_utils._StringReferenceCaching`, `_StrCaching`)
_CACHED_REFERENCE, _CACHED_TEXT = "_StringReferenceCaching__cached_refstr", "_StrCaching__cached_str"


def _function_text(function: ir.Function, numbered: bool = False) -> str:
    """`Function.descr`'s text: the prototype (llvmlite's), then each block's label and lines."""
    if numbered:
        _number_results(function)
    buf: list[str] = []
    function.descr_prototype(buf)
    buf.append("{\n")
    for block in function.blocks:
        buf.append(f"{block._format_name()}:\n  ")
        buf.append("\n  ".join([_instruction_text(instruction) for instruction in block.instructions]))
        buf.append("\n")
    buf.append("}\n")
    return "".join(buf)


def _instruction_text(instruction) -> str:
    """The instruction's line: formatted here for the common kinds, else llvmlite's (which
    also prints every instruction carrying metadata)."""
    if instruction.metadata:
        return str(instruction)
    kind = type(instruction)
    format_value = _VALUE_TEXT.get(kind)
    if format_value is not None:
        body = None if type(instruction.type) is ir.VoidType else format_value(instruction)
        return str(instruction) if body is None else f"{instruction.get_reference()} = {body}"
    text: str | None
    if kind is ins.StoreInstr:
        text = _store(instruction)
    elif kind is ins.Branch or kind is ins.ConditionalBranch:
        text = _branch(instruction)
    elif kind is ins.CallInstr:
        body = _call(instruction)
        text = body if body is None or type(instruction.type) is ir.VoidType else \
            f"{instruction.get_reference()} = {body}"
    else:
        text = None
    return str(instruction) if text is None else text
