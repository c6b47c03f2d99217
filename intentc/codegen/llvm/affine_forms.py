"""Affine forms of the integer values the lowering builds: a value as a constant plus
constant multiples of opaque terms (`add`, `sub`, constant `mul` and `shl` see through, any
other value is a term). What the builder cannot fold one instruction at a time, these
decide while the code is built: that a group's lanes lie at consecutive displacements, or
that a displacement is a multiple of a vector's length (`memory._vector_ready`), so the
branch LLVM would fold away later is never built."""
from __future__ import annotations

from llvmlite import ir

# a form: ({term key: (term, coefficient)}, constant)
Form = tuple[dict[object, tuple[ir.Value, int]], int]


def affine_form(value: ir.Value) -> Form:
    if isinstance(value, ir.Constant) and isinstance(value.type, ir.IntType) and isinstance(value.constant, int):
        return {}, _signed(value.constant, value.type.width)
    if isinstance(value, ir.Instruction) and isinstance(value.type, ir.IntType) and value.type.width == 64:
        operands = value.operands
        if value.opname in ("add", "sub"):     # LLVM opcodes, not op names
            return _sum(affine_form(operands[0]), affine_form(operands[1]), 1 if value.opname == "add" else -1)
        scale = _constant_scale(value)
        if scale is not None:
            term, factor = scale
            return _scaled(affine_form(term), factor)
    return {_term_key(value): (value, 1)}, 0


# integer instructions whose result is a function of their operands alone: two of them with
# the same opcode on the same operands are one term (lowering may build one twice in
# different blocks); any other value is a term of its own
PURE = frozenset({"add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor", "udiv", "sdiv", "urem", "srem",
                  "zext", "sext", "trunc", "icmp", "select"})


def _term_key(value: ir.Value, depth: int = 6) -> object:
    """The term's identity: structural through PURE instructions (`depth` levels deep, which
    bounds the walk of a shared DAG), else the value itself."""
    if isinstance(value, ir.Constant) and isinstance(value.constant, int):
        return (str(value.type), value.constant)
    if depth and isinstance(value, ir.Instruction) and value.opname in PURE:
        predicate = getattr(value, "op", "")
        return (value.opname, predicate, str(value.type),
                tuple(_term_key(operand, depth - 1) for operand in value.operands))
    return id(value)


def difference(first: ir.Value, second: ir.Value) -> int | None:
    """first - second where it is a constant whatever the terms are, else None."""
    terms, constant = _sum(affine_form(first), affine_form(second), -1)
    return None if terms else constant


def multiple_of(value: ir.Value, modulus: int) -> bool:
    """Whether `value` is a multiple of `modulus` whatever its terms are."""
    terms, constant = affine_form(value)
    return constant % modulus == 0 and all(coefficient % modulus == 0 for _, coefficient in terms.values())


def _constant_scale(value: ir.Instruction) -> tuple[ir.Value, int] | None:
    """(term, factor) of a `mul` by a constant or a `shl` by a constant."""
    if value.opname not in ("mul", "shl"):     # LLVM opcodes, not op names
        return None
    first, second = value.operands
    if value.opname == "mul":
        if _integer(second):
            return first, _signed(second.constant, 64)
        if _integer(first):
            return second, _signed(first.constant, 64)
    if value.opname == "shl" and _integer(second) and 0 <= second.constant < 63:
        return first, 1 << second.constant
    return None


def _integer(value: ir.Value) -> bool:
    return isinstance(value, ir.Constant) and isinstance(value.constant, int)


def _sum(first: Form, second: Form, sign: int) -> Form:
    terms = dict(first[0])
    for key, (term, coefficient) in second[0].items():
        total = terms.get(key, (term, 0))[1] + sign * coefficient
        if total:
            terms[key] = (term, total)
        else:
            terms.pop(key, None)
    return terms, first[1] + sign * second[1]


def _scaled(form: Form, factor: int) -> Form:
    if factor == 0:
        return {}, 0
    return {key: (term, coefficient * factor) for key, (term, coefficient) in form[0].items()}, form[1] * factor


def _signed(constant, width: int) -> int:
    constant = int(constant)
    return constant - (1 << width) if constant >= 1 << (width - 1) else constant
