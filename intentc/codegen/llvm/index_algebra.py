"""What the lowering proves about integer index values from how they were built, without
LLVM: a value is a multiple of a power of two, or two values differ by a constant.

A vector group's run-time test (`memory._vector_ready`: the first lane aligned, each lane one
element past the one before) is built from the lanes' displacements, sums of coordinates
times strides. Where the launch's layout facts make it hold (a dense, 16-byte aligned view of
known row length at `tid·V + j` coordinates), LLVM used to prove it, per group, after the
Python side had built the compares, a branch and a scalar copy of every access: a fifth of
softmax's LLVM instructions. Proving it here builds only the vector access.
"""
from __future__ import annotations

from llvmlite import ir

# how deep an expression is followed (index expressions are a few adds and multiplies deep)
_DEPTH = 8


def _bits(value: ir.Value) -> int | None:
    """An integer constant's bits, else None."""
    if type(value) is ir.Constant and type(value.constant) is int and isinstance(value.type, ir.IntType):
        return value.constant & ((1 << value.type.width) - 1)
    return None


def _opname(value: ir.Value) -> str | None:
    return value.opname if isinstance(value, ir.Instruction) else None


def known_multiple(value: ir.Value, multiple: int, depth: int = _DEPTH) -> bool:
    """Whether the integer `value` is certainly a multiple of `multiple` (a power of two no
    wider than the value: wrapping then keeps the remainder)."""
    bits = _bits(value)
    if bits is not None:
        return bits % multiple == 0
    if depth == 0:
        return False
    operation = _opname(value)
    if operation in ("add", "sub"):     # LLVM opcodes, not op names
        return all(known_multiple(operand, multiple, depth - 1) for operand in value.operands)
    if operation == "mul":
        return any(known_multiple(operand, multiple, depth - 1) for operand in value.operands)
    if operation == "shl":
        shift = _bits(value.operands[1])
        return (shift is not None and (1 << shift) % multiple == 0) or known_multiple(value.operands[0], multiple,
                                                                                   depth - 1)
    if operation == "zext":
        return known_multiple(value.operands[0], multiple, depth - 1)
    return False


def _split(value: ir.Value) -> tuple[ir.Value, int]:
    """(x, c) with value = x + c, c a constant (0 where value adds none)."""
    if _opname(value) == "add":
        first, second = value.operands
        for term, added in ((first, _bits(second)), (second, _bits(first))):
            if added is not None:
                return term, added
    return value, 0


def constant_difference(value: ir.Value, other: ir.Value, depth: int = _DEPTH) -> int | None:
    """`value - other` (modulo 2^width) where it is certainly a constant, else None: the same
    value, two constants, or sums that share every term but constant ones."""
    if value is other:
        return 0
    width = (1 << value.type.width) - 1
    left, right = _bits(value), _bits(other)
    if left is not None and right is not None:
        return (left - right) & width
    if depth == 0:
        return None
    (base, added), (other_base, other_added) = _split(value), _split(other)
    offset = added - other_added
    if base is other_base:
        return offset & width
    if _opname(base) != "add" or _opname(other_base) != "add":
        return None
    (a, b), (c, d) = base.operands, other_base.operands
    inner = constant_difference(b, d, depth - 1) if a is c else constant_difference(a, c, depth - 1) if b is d \
        else None
    return None if inner is None else (inner + offset) & width
