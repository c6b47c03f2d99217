"""The LLVM IR text of a lowered module, for LLVM to parse.

llvmlite prints each instruction through generic `str.format` templates (~9 µs an
instruction on the dev VM, more than building it), and an unrolled register-form kernel has
thousands: printing was half of `lower-llvm`. The instruction kinds that are most of them
(integer and float arithmetic, casts, compares, loads, stores, selects, address arithmetic)
are formatted here with f-strings into llvmlite's own per-instruction string cache, then
llvmlite prints the module as always, so the text is exactly llvmlite's (the other kinds,
and any instruction with metadata, are left to it). `tests/codegen/test_printing.py` holds
every sample's text to llvmlite's.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import instructions as ins

# llvmlite's `_StrCaching` keeps an object's text in this (name-mangled) attribute
_CACHED_TEXT = "_StrCaching__cached_str"


def _arithmetic(i) -> str:
    opname = " ".join([i.opname, *i.flags]) if i.flags else i.opname
    return f"{opname} {i.type} {', '.join([o.get_reference() for o in i.operands])}"


def _cast(i) -> str:
    (value,) = i.operands
    return f"{i.opname} {value.type} {value.get_reference()} to {i.type}"


def _compare(i) -> str:
    lhs, rhs = i.operands
    flags = "".join(" " + flag for flag in i.flags)
    return f"{i.opname}{flags} {i.op} {lhs.type} {lhs.get_reference()}, {rhs.get_reference()}"


def _load(i) -> str | None:
    if i.align is not None:
        return None
    (pointer,) = i.operands
    return f"load {i.type}, {pointer.type} {pointer.get_reference()}"


def _select(i) -> str:
    cond, lhs, rhs = i.operands
    return (f"select {' '.join(i.flags)} {cond.type} {cond.get_reference()}, {lhs.type} {lhs.get_reference()}, "
            f"{rhs.type} {rhs.get_reference()}")


def _gep(i) -> str:
    indices = ", ".join([f"{index.type} {index.get_reference()}" for index in i.indices])
    op = "getelementptr inbounds" if i.inbounds else "getelementptr"
    return f"{op} {i.source_etype}, {i.pointer.type} {i.pointer.get_reference()}, {indices}"


def _extract_value(i) -> str:
    # the fields of an inline asm's or MMA's result struct (flash attention: 800 of them)
    return f"extractvalue {i.aggregate.type} {i.aggregate.get_reference()}, {', '.join(map(str, i.indices))}"


def _phi(i) -> str:
    # llvmlite's spacing ("phi  float" without flags); the flash kernels carry ~300 values through loops
    incomings = ", ".join([f"[{value.get_reference()}, {block.get_reference()}]" for value, block in i.incomings])
    return f"phi {' '.join(i.flags)} {i.type} {incomings}"


def _vector_element(i) -> str:
    return f"{i.opname} {', '.join([f'{o.type} {o.get_reference()}' for o in i.operands])}"


# The instruction classes formatted here (exact classes: subclasses print differently).
_VALUE_TEXT = {ins.Instruction: _arithmetic, ins.CastInstr: _cast, ins.ICMPInstr: _compare,
               ins.FCMPInstr: _compare, ins.LoadInstr: _load, ins.SelectInstr: _select, ins.GEPInstr: _gep,
               ins.ExtractValue: _extract_value, ins.ExtractElement: _vector_element,
               ins.InsertElement: _vector_element, ins.PhiInstr: _phi}


def _store(i) -> str | None:
    if i.align is not None:
        return None
    value, pointer = i.operands
    return f"store {value.type} {value.get_reference()}, {pointer.type} {pointer.get_reference()}"


def _call(i) -> str | None:
    """A plain call (intrinsics, libdevice, inline asm): no calling convention, tail marker,
    fast-math flags or attributes, a fixed argument list."""
    function_type = i.callee.function_type          # (a property: read once)
    if i.cconv or i.tail or i.fastmath or i.attributes or i.arg_attributes or function_type.var_arg:
        return None
    arguments = ", ".join([f"{a.type} {a.get_reference()}" for a in i.args])
    return f"call {function_type.return_type} {i.callee.get_reference()}({arguments})"


def module_text(module: ir.Module) -> str:
    """str(module), with the common instructions' text formatted here first."""
    for function in module.functions:
        for block in function.blocks:
            for instruction in block.instructions:
                if instruction.metadata or _CACHED_TEXT in instruction.__dict__:
                    continue         # with metadata, or printed before: llvmlite's text
                kind = type(instruction)
                if kind is ins.StoreInstr:
                    text = _store(instruction)
                elif kind is ins.CallInstr:
                    body = _call(instruction)
                    void = isinstance(instruction.type, ir.VoidType)
                    text = body if body is None or void else f"{instruction.get_reference()} = {body}"
                else:
                    format_value = _VALUE_TEXT.get(kind)
                    void = isinstance(instruction.type, ir.VoidType)
                    body = format_value(instruction) if format_value is not None and not void else None
                    text = f"{instruction.get_reference()} = {body}" if body is not None else None
                if text is not None:
                    setattr(instruction, _CACHED_TEXT, text)
    return str(module)
