"""The IR builder the lowering uses: llvmlite's, with integer identities folded as they are
built (`x + 0`, `x * 1`, `x & true`, `x | false`, `select true, a, b`, `~const`) and pure
instructions reused within a basic block (the same op on the same operands returns the
value built before).

Lowering is generic (a unit stride, an access without a mask, slot 0's offset) and an
unrolled iteration computes the same address parts, bounds compares and casts for every
slot and every op, so both are common: together a third of the instructions of vector add
and softmax in the register form. LLVM's InstCombine and EarlyCSE remove them anyway, but
each costs the Python side its construction and its printing (~13 µs with llvmlite, the
bulk of `lower-llvm`), and LLVM its parsing. Only integer (and i1) identities fold: `x + 0.0`
is not `x` for x = -0.0. Reuse is limited to the block the builder appends to, where an
earlier instruction dominates everything after it; an instruction whose value is reused
is never changed afterwards (the lowering sets metadata only on loads, calls and branches,
which are not reused).
"""
from __future__ import annotations

from llvmlite import ir


def _constant(value: ir.Value) -> int | None:
    """The bits of an integer constant (two's complement, the type's width), else None."""
    if isinstance(value, ir.Constant) and isinstance(value.type, ir.IntType) and isinstance(value.constant, int):
        return value.constant & ((1 << value.type.width) - 1)
    return None


def _ones(value: ir.Value) -> int:
    return (1 << value.type.width) - 1


def _signed_constant(type_: ir.IntType, bits: int) -> ir.Constant:
    """The constant with these bits, written as LLVM's parser takes it (i1 as 0 or 1)."""
    top = 1 << (type_.width - 1)
    return ir.Constant(type_, bits - 2 * top if type_.width > 1 and bits & top else bits)


def _key(item) -> object:
    """What identifies an operand: a scalar constant by its type and value, any other value
    by identity (the reused instruction keeps its operands alive, so no id is reused while
    its entry lives), lists element by element, types and flags as themselves."""
    kind = type(item)
    if kind is ir.Constant:
        constant = item.constant
        if type(constant) is int:
            return (item.type, constant)
        # a float by its bits: 0.0 == -0.0 in Python
        return (item.type, constant.hex()) if type(constant) is float else id(item)
    if kind is list or kind is tuple:
        return tuple(_key(element) for element in item)
    if isinstance(item, ir.Value):
        return id(item)
    return item


def _reused(method):
    """`method` of the builder, returning the value the same call built earlier in the block
    (the name, if given, is not part of the call)."""
    def build(self, *args, name="", **kwargs):
        key = (method, *map(_key, args), *((k, _key(v)) for k, v in kwargs.items()))
        known = self._built.get(key)
        if known is not None and known[0] is self.block:
            return known[1]
        value = method(self, *args, name=name, **kwargs)
        self._built[key] = (self.block, value)
        return value
    return build


class LoweringBuilder(ir.IRBuilder):
    def __init__(self, block: ir.Block | None = None):
        super().__init__(block)
        self._built: dict = {}    # call key -> (block, value): the pure instructions built so far

    def add(self, lhs, rhs, name="", flags=()):
        if _constant(rhs) == 0:
            return lhs
        if _constant(lhs) == 0:
            return rhs
        return self._add(lhs, rhs, name=name, flags=flags)

    def sub(self, lhs, rhs, name="", flags=()):
        if _constant(rhs) == 0:
            return lhs
        return self._sub(lhs, rhs, name=name, flags=flags)

    def mul(self, lhs, rhs, name="", flags=()):
        if _constant(rhs) == 1:
            return lhs
        if _constant(lhs) == 1:
            return rhs
        return self._mul(lhs, rhs, name=name, flags=flags)

    def and_(self, lhs, rhs, name="", flags=()):
        for this, other in ((lhs, rhs), (rhs, lhs)):
            bits = _constant(this)
            if bits is not None and bits == _ones(this):
                return other
            if bits == 0:
                return this
        return self._and(lhs, rhs, name=name, flags=flags)

    def or_(self, lhs, rhs, name="", flags=()):
        for this, other in ((lhs, rhs), (rhs, lhs)):
            bits = _constant(this)
            if bits == 0:
                return other
            if bits is not None and bits == _ones(this):
                return this
        return self._or(lhs, rhs, name=name, flags=flags)

    def xor(self, lhs, rhs, name="", flags=()):
        left, right = _constant(lhs), _constant(rhs)
        if right == 0:
            return lhs
        if left is not None and right is not None:
            return _signed_constant(lhs.type, left ^ right)
        return self._xor(lhs, rhs, name=name, flags=flags)

    def select(self, cond, lhs, rhs, name="", flags=()):
        bits = _constant(cond)
        if bits is not None and cond.type.width == 1:
            return lhs if bits else rhs
        return self._select(cond, lhs, rhs, name=name, flags=flags)

    _add = _reused(ir.IRBuilder.add)
    _sub = _reused(ir.IRBuilder.sub)
    _mul = _reused(ir.IRBuilder.mul)
    _and = _reused(ir.IRBuilder.and_)
    _or = _reused(ir.IRBuilder.or_)
    _xor = _reused(ir.IRBuilder.xor)
    _select = _reused(ir.IRBuilder.select)
    shl = _reused(ir.IRBuilder.shl)
    lshr = _reused(ir.IRBuilder.lshr)
    ashr = _reused(ir.IRBuilder.ashr)
    udiv = _reused(ir.IRBuilder.udiv)
    urem = _reused(ir.IRBuilder.urem)
    icmp_signed = _reused(ir.IRBuilder.icmp_signed)
    icmp_unsigned = _reused(ir.IRBuilder.icmp_unsigned)
    trunc = _reused(ir.IRBuilder.trunc)
    zext = _reused(ir.IRBuilder.zext)
    sext = _reused(ir.IRBuilder.sext)
    bitcast = _reused(ir.IRBuilder.bitcast)
    ptrtoint = _reused(ir.IRBuilder.ptrtoint)
    inttoptr = _reused(ir.IRBuilder.inttoptr)
    gep = _reused(ir.IRBuilder.gep)
