"""Pointwise arithmetic, bitwise, comparison and selection ops (spec §3, §4, §5)."""
from typing import TypedDict

from ..optable import AttrSpec, DtypeClass, OpDef, register


class Traits(TypedDict):
    elementwise: bool
    cta_per_coordinate: bool


# Element-wise ops the GPU mapping computes coordinate by coordinate.
POINTWISE = Traits(elementwise=True, cta_per_coordinate=True)
# Operand order does not matter for these.
COMMUTATIVE = {"add", "mul", "and", "or", "xor", "maximum", "minimum", "maximum_num", "minimum_num", "eq", "ne"}


# x op 0 == x for these; division-like ops are costly to compute.
_ZERO_IS_IDENTITY = {"or", "xor", "shl", "shr"}
_COSTLY = {"div", "fmod", "floordiv", "mod"}
# Float arithmetic whose NaN results are new NaNs (§5.2); the *_num forms pass a NaN
# operand through when both are NaN, and neg/abs move the sign bit of a NaN.
_FRESH_NAN = {"mul", "div", "fmod", "maximum", "minimum"}


def _binary(name: str, section: str, summary: str, dtypes: DtypeClass) -> OpDef:
    return OpDef(name, section, summary, operands=("lhs", "rhs"), same_type=True, commutative=name in COMMUTATIVE,
                 dtypes=dtypes, int_identity=0 if name in _ZERO_IS_IDENTITY else None, costly=name in _COSTLY,
                 fresh_nan=name in _FRESH_NAN,
                 example=f"%r = {name} %a, %b : tensor<f32, [%N]>", **POINTWISE)


# Set by fusion-legality (§5.5): which operand of this add/sub is a float `mul` product that
# may be fused with it into one FMA. The product's other uses keep the rounded product.
FMA = AttrSpec("keyword", choices=("lhs", "rhs"),
               doc="operand that is a same-dtype float product this add/sub may fuse with into one FMA (§5.5)")


def _fusable(name: str, summary: str) -> OpDef:
    return OpDef(name, "§4, §5, §5.5", summary, operands=("lhs", "rhs"), attrs={"fma": FMA},
                 same_type=True, commutative=name in COMMUTATIVE, dtypes="numeric", int_identity=0, fresh_nan=True,
                 example=f"%r = {name} %p, %c {{fma = lhs}} : tensor<f32, [%N]>", **POINTWISE)


def _unary(name: str, section: str, summary: str, dtypes: DtypeClass) -> OpDef:
    return OpDef(name, section, summary, operands=("source",), same_type=True, dtypes=dtypes,
                 example=f"%r = {name} %x : tensor<f32, [%N]>", **POINTWISE)


def _compare(name: str, summary: str) -> OpDef:
    return OpDef(name, "§3", f"{summary}; yields bool", operands=("lhs", "rhs"), commutative=name in COMMUTATIVE,
                 enum_operands=name in ("eq", "ne"), fresh_nan=True,
                 example=f"%r = {name} %a, %b : tensor<bool, [%N]>", **POINTWISE)


register(__name__,
    _fusable("add", "sum; integers wrap modulo 2^width, floats round to nearest even"),
    _fusable("sub", "difference; integers wrap, floats IEEE"),
    _binary("mul", "§4, §5", "product; integers keep the low width bits, floats IEEE", "numeric"),
    _binary("div", "§4, §5", "IEEE float division; not defined on integers", "float"),
    _binary("floordiv", "§4", "integer `//`: floor for signed, Euclidean for unsigned", "int"),
    _binary("mod", "§4", "integer `%`: sign of the divisor for signed, Euclidean for unsigned", "int"),
    _binary("fmod", "§4", "named float remainder: lhs - trunc(lhs/rhs)*rhs, exact, sign of lhs", "float"),
    _binary("and", "§4", "bitwise and (logical and on bool)", "int_or_bool"),
    _binary("or", "§4", "bitwise or (logical or on bool)", "int_or_bool"),
    _binary("xor", "§4", "bitwise xor (logical xor on bool)", "int_or_bool"),
    _binary("shl", "§4", "left shift keeping the low width bits; amount in [0, width)", "int"),
    _binary("shr", "§4", "right shift: arithmetic for signed, logical for unsigned", "int"),
    _binary("maximum", "§5.2", "maximum propagating NaN", "numeric"),
    _binary("minimum", "§5.2", "minimum propagating NaN", "numeric"),
    _binary("maximum_num", "§5.2", "maximum ignoring a one-sided NaN", "numeric"),
    _binary("minimum_num", "§5.2", "minimum ignoring a one-sided NaN", "numeric"),
    _unary("neg", "§4, §5", "negation; integers wrap", "numeric"),
    _unary("abs", "§4, §5", "absolute value; integers wrap at signed_min", "numeric"),
    _unary("not", "§4", "bitwise not (logical not on bool)", "int_or_bool"),
    _compare("eq", "equal"),
    _compare("ne", "not equal"),
    _compare("lt", "less than"),
    _compare("le", "less or equal"),
    _compare("gt", "greater than"),
    _compare("ge", "greater or equal"),
    OpDef("select", "§3", "elementwise choice: on_true where cond, else on_false",
          operands=("cond", "on_true", "on_false"),
          example="%r = select %m, %a, %b : tensor<f32, [%N]>", **POINTWISE),
)
