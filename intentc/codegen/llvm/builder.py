"""The IR builder the lowering uses: llvmlite's, with integer identities folded as they are
built (`x + 0`, `x * 1`, `x * 0`, `x & true`, `x | false`, `select true, a, b`, `~const`), integer
arithmetic on two constants folded (a generator's coordinates of a constant register index:
llvmlite folds nothing) and pure instructions reused within a basic block (the same op on
the same operands returns the value built before).

Lowering is generic (a unit stride, an access without a mask, slot 0's offset) and an
unrolled iteration computes the same address parts, bounds compares and casts for every
slot and every op, so both are common: with the reads of tid.x and check flags they were a
fifth to a quarter of vector add and softmax in the register form. LLVM's InstCombine and EarlyCSE remove them anyway, but
each costs the Python side its construction and its printing (~13 µs with llvmlite, the
bulk of `lower-llvm`), and LLVM its parsing. Only integer (and i1) identities fold: `x + 0.0`
is not `x` for x = -0.0. Reuse is limited to the block the builder appends to, where an
earlier instruction dominates everything after it; an instruction whose value is reused
is never changed afterwards (the lowering sets metadata only on loads, calls and branches,
which are not reused).
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import _utils


def _constant(value: ir.Value) -> int | None:
    """The bits of an integer constant (two's complement, the type's width), else None."""
    if type(value) is ir.Constant and type(value.constant) is int and isinstance(value.type, ir.IntType):
        return value.constant & ((1 << value.type.width) - 1)
    return None


def _ones(value: ir.Value) -> int:
    return (1 << value.type.width) - 1


def _signed_constant(type_: ir.IntType, bits: int) -> ir.Constant:
    """The constant with these bits, written as LLVM's parser takes it (i1 as 0 or 1)."""
    top = 1 << (type_.width - 1)
    return ir.Constant(type_, bits - 2 * top if type_.width > 1 and bits & top else bits)


# integer operations on the bits of two constants (None: no folding, the result is poison or
# undefined: a division by zero, a shift by the width or more)
_FOLDS = {"add": lambda a, b, w: a + b, "sub": lambda a, b, w: a - b, "mul": lambda a, b, w: a * b,
          "udiv": lambda a, b, w: a // b if b else None, "urem": lambda a, b, w: a % b if b else None,
          "shl": lambda a, b, w: a << b if b < w else None, "lshr": lambda a, b, w: a >> b if b < w else None,
          "and": lambda a, b, w: a & b, "or": lambda a, b, w: a | b, "xor": lambda a, b, w: a ^ b}


def _folded(lhs: ir.Value, rhs: ir.Value, operation: str) -> ir.Constant | None:
    """`lhs operation rhs` as a constant when both are integer constants (wrapping as LLVM
    does; where the flags would make an overflow poison, its wrapped value is one of the
    values poison may take), else None."""
    if type(lhs) is not ir.Constant or type(rhs) is not ir.Constant:
        return None       # (the common case, without two calls)
    left, right = _constant(lhs), _constant(rhs)
    if left is None or right is None:
        return None
    width = lhs.type.width
    value = _FOLDS[operation](left, right, width)
    return None if value is None else _signed_constant(lhs.type, value & ((1 << width) - 1))


_COMPARISONS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
                "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _compared(cmpop: str, lhs: ir.Value, rhs: ir.Value, signed: bool) -> ir.Constant | None:
    """An integer comparison of two constants as an i1 constant, else None."""
    if type(lhs) is not ir.Constant or type(rhs) is not ir.Constant:
        return None       # (the common case, without two calls)
    left, right = _constant(lhs), _constant(rhs)
    if left is None or right is None:
        return None
    if signed:
        top = 1 << (lhs.type.width - 1)
        left, right = left - 2 * (left & top), right - 2 * (right & top)
    return ir.Constant(ir.IntType(1), int(_COMPARISONS[cmpop](left, right)))


def _less_multiples(value: ir.Value, divisor: ir.Value) -> ir.Value:
    """`value` less the constant multiples of a power-of-two `divisor` added to it, which
    leave `value urem divisor` unchanged (even where the adds wrap: 2^width is a multiple);
    an unrolled slot's coordinate `tid + slot · threads` then has the remainder of `tid`,
    one instruction for every slot."""
    bits = _constant(divisor)
    if not bits or bits & (bits - 1):
        return value
    while isinstance(value, ir.Instruction) and value.opname == "add":
        added = _constant(value.operands[1])
        if added is None or added % bits:
            break
        value = value.operands[0]
    return value


def _key(item) -> object:
    """What identifies an operand: a scalar constant by its type and value, any other value
    by identity (the reused instruction keeps its operands alive, so no id is reused while
    its entry lives)."""
    kind = type(item)
    if kind is ir.Constant:
        constant = item.constant
        if type(constant) is int:
            return (item.type, constant)
        # a float by its bits: 0.0 == -0.0 in Python
        return (item.type, constant.hex()) if type(constant) is float else id(item)
    return id(item)


def _reused(method, key_of):
    """`method` of the builder, returning the value the same call (the same key_of(*args))
    built earlier in the block."""
    def build(self, *args, **kwargs):
        key = (method, *key_of(*args, **kwargs))
        known = self._built.get(key)
        if known is not None and known[0] is self.block:
            return known[1]
        value = method(self, *args, **kwargs)
        self._built[key] = (self.block, value)
        return value
    return build


def _binary_key(lhs, rhs, name="", flags=()):
    return _key(lhs), _key(rhs), *flags


def _unary_key(operand, name="", flags=()):
    return _key(operand), *flags


def _compare_key(cmpop, lhs, rhs, name=""):
    return cmpop, _key(lhs), _key(rhs)


def _cast_key(value, type_, name=""):
    return _key(value), type_


def _gep_key(pointer, indices, inbounds=False, name="", source_etype=None):
    return _key(pointer), *map(_key, indices), inbounds, source_etype


class _Names(_utils.NameScope):
    """llvmlite's name scope, `register` in one call: every value an instruction makes
    registers its name (an unnamed one becomes `.N`), through three method calls and a
    `str.format` in llvmlite, a tenth of lowering's time. The same names, the same errors."""

    def register(self, name: str, deduplicate: bool = False) -> str:
        used = self._useset
        if name in used:
            if not deduplicate:
                raise _utils.DuplicatedNameError(name)
            counts = self._basenamemap
            ident, candidate = counts[name], name
            while candidate in used:
                ident += 1
                candidate = f"{name}.{ident}"
            counts[name], name = ident, candidate
        used.add(name)
        return name


class LoweringBuilder(ir.IRBuilder):
    def __init__(self, block: ir.Block | None = None, entry: LoweringBuilder | None = None):
        super().__init__(block)
        if block is not None and type(block.scope) is _utils.NameScope:
            block.scope.__class__ = _Names      # in place: the function's blocks share it
        self._built: dict = {}    # call key -> (block, value): the pure instructions built so far
        # the function's entry builder: an element pointer at constant indices into an alloca
        # (a register array SROA promotes) is made there, once for the function,
        # not once in every block that touches the element (the MMA kernels' accumulator
        # arrays: a sixth of their instructions were such pointers)
        self.entry = entry

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        entry = self.entry
        if entry is not None and type(ptr) is ir.AllocaInstr and ptr.parent is entry.block \
                and all(_constant(index) is not None for index in indices):
            return entry._gep(ptr, indices, inbounds, name, source_etype)
        return self._gep(ptr, indices, inbounds, name, source_etype)

    def add(self, lhs, rhs, name="", flags=()):
        if _constant(rhs) == 0:
            return lhs
        if _constant(lhs) == 0:
            return rhs
        return _folded(lhs, rhs, "add") or self._add(lhs, rhs, name, flags)

    def sub(self, lhs, rhs, name="", flags=()):
        if _constant(rhs) == 0:
            return lhs
        return _folded(lhs, rhs, "sub") or self._sub(lhs, rhs, name, flags)

    def mul(self, lhs, rhs, name="", flags=()):
        if _constant(rhs) == 1 or _constant(lhs) == 0:
            return lhs
        if _constant(lhs) == 1 or _constant(rhs) == 0:
            return rhs
        return _folded(lhs, rhs, "mul") or self._mul(lhs, rhs, name, flags)

    def udiv(self, lhs, rhs, name="", flags=()):
        return _folded(lhs, rhs, "udiv") or self._udiv(lhs, rhs, name, flags)

    def urem(self, lhs, rhs, name="", flags=()):
        return _folded(lhs, rhs, "urem") or self._urem(_less_multiples(lhs, rhs), rhs, name, flags)

    def shl(self, lhs, rhs, name="", flags=()):
        if _constant(rhs) == 0 or _constant(lhs) == 0:
            return lhs
        return _folded(lhs, rhs, "shl") or super().shl(lhs, rhs, name, flags)

    def lshr(self, lhs, rhs, name="", flags=()):
        if _constant(rhs) == 0 or _constant(lhs) == 0:
            return lhs
        return _folded(lhs, rhs, "lshr") or self._lshr(lhs, rhs, name, flags)

    def zext(self, value, typ, name=""):
        bits = _constant(value)
        return ir.Constant(typ, bits) if bits is not None and typ.width > value.type.width else \
            super().zext(value, typ, name)

    def trunc(self, value, typ, name=""):
        bits = _constant(value)
        return _signed_constant(typ, bits & ((1 << typ.width) - 1)) if bits is not None else \
            super().trunc(value, typ, name)

    def icmp_signed(self, cmpop, lhs, rhs, name=""):
        return _compared(cmpop, lhs, rhs, signed=True) or self._icmp_signed(cmpop, lhs, rhs, name)

    def icmp_unsigned(self, cmpop, lhs, rhs, name=""):
        return _compared(cmpop, lhs, rhs, signed=False) or self._icmp_unsigned(cmpop, lhs, rhs, name)

    def and_(self, lhs, rhs, name="", flags=()):
        for this, other in ((lhs, rhs), (rhs, lhs)):
            bits = _constant(this)
            if bits is not None and bits == _ones(this):
                return other
            if bits == 0:
                return this
        return _folded(lhs, rhs, "and") or super().and_(lhs, rhs, name, flags)

    def or_(self, lhs, rhs, name="", flags=()):
        for this, other in ((lhs, rhs), (rhs, lhs)):
            bits = _constant(this)
            if bits == 0:
                return other
            if bits is not None and bits == _ones(this):
                return this
        return _folded(lhs, rhs, "or") or super().or_(lhs, rhs, name, flags)

    def xor(self, lhs, rhs, name="", flags=()):
        if _constant(rhs) == 0:
            return lhs
        return _folded(lhs, rhs, "xor") or self._xor(lhs, rhs, name, flags)

    def select(self, cond, lhs, rhs, name="", flags=()):
        bits = _constant(cond)
        if bits is not None and cond.type.width == 1:
            return lhs if bits else rhs
        return super().select(cond, lhs, rhs, name, flags)

    # Reused: the kinds an unrolled iteration repeats (address arithmetic, bounds compares,
    # element pointers, float bitcasts, and negations: a row's bounds check negated for each
    # slot's check, once reads of a view proven inside its allocation compare only the row;
    # a row's maximum negated for each slot's fused subtraction in softmax);
    # counted on tiled matmul, softmax, nan_max and dequantize_q4_k, the others (and, or,
    # select, shifts left, extensions, truncations) never repeated, and their keys would only
    # cost time.
    _add = _reused(ir.IRBuilder.add, _binary_key)
    _sub = _reused(ir.IRBuilder.sub, _binary_key)
    _mul = _reused(ir.IRBuilder.mul, _binary_key)
    _udiv = _reused(ir.IRBuilder.udiv, _binary_key)
    _urem = _reused(ir.IRBuilder.urem, _binary_key)
    _lshr = _reused(ir.IRBuilder.lshr, _binary_key)
    _xor = _reused(ir.IRBuilder.xor, _binary_key)
    _icmp_signed = _reused(ir.IRBuilder.icmp_signed, _compare_key)
    _icmp_unsigned = _reused(ir.IRBuilder.icmp_unsigned, _compare_key)
    bitcast = _reused(ir.IRBuilder.bitcast, _cast_key)
    fneg = _reused(ir.IRBuilder.fneg, _unary_key)
    _gep = _reused(ir.IRBuilder.gep, _gep_key)
