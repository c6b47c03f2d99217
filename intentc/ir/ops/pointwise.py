"""Pointwise arithmetic, bitwise, comparison and selection ops (spec §3, §4, §5)."""
from ..optable import APPROXIMATE, FLUSH_TO_ZERO, AttrSpec, OpDef, register


# Element-wise ops the GPU mapping computes coordinate by coordinate.
POINTWISE = {"elementwise": True, "cta_per_coordinate": True}
# Operand order does not matter for these.
COMMUTATIVE = {"add", "mul", "and", "or", "xor", "maximum", "minimum", "maximum_num", "minimum_num", "eq", "ne"}


def _binary(name: str, section: str, summary: str) -> OpDef:
    return OpDef(name, section, summary, operands=("lhs", "rhs"), same_type=True, commutative=name in COMMUTATIVE,
                 example=f"%r = {name} %a, %b : tensor<f32, [%N]>", **POINTWISE)


# Set by fusion-legality (§5.5): which operand of this add/sub is a float `mul` product that
# may be fused with it into one FMA. The product's other uses keep the rounded product.
FMA = AttrSpec("keyword", choices=("lhs", "rhs"),
               doc="operand that is a same-dtype float product this add/sub may fuse with into one FMA (§5.5)")


def _fusable(name: str, summary: str) -> OpDef:
    return OpDef(name, "§4, §5, §5.5", summary, operands=("lhs", "rhs"), attrs={"fma": FMA},
                 same_type=True, commutative=name in COMMUTATIVE,
                 example=f"%r = {name} %p, %c {{fma = lhs}} : tensor<f32, [%N]>", **POINTWISE)


def _compare(name: str, summary: str) -> OpDef:
    return OpDef(name, "§3", f"{summary}; yields bool", operands=("lhs", "rhs"), commutative=name in COMMUTATIVE,
                 example=f"%r = {name} %a, %b : tensor<bool, [%N]>", **POINTWISE)


register(
    _fusable("add", "sum; integers wrap modulo 2^width, floats round to nearest even"),
    _fusable("sub", "difference; integers wrap, floats IEEE"),
    _binary("mul", "§4, §5", "product; integers keep the low width bits, floats IEEE"),
    _binary("div", "§4, §5", "IEEE float division; not defined on integers"),
    _binary("floordiv", "§4", "integer `//`: floor for signed, Euclidean for unsigned"),
    _binary("mod", "§4", "integer `%`: sign of the divisor for signed, Euclidean for unsigned"),
    _binary("fmod", "§4", "named float remainder: lhs - trunc(lhs/rhs)*rhs, exact, sign of lhs"),
    _binary("and", "§4", "bitwise and (logical and on bool)"),
    _binary("or", "§4", "bitwise or (logical or on bool)"),
    _binary("xor", "§4", "bitwise xor (logical xor on bool)"),
    _binary("shl", "§4", "left shift keeping the low width bits; amount in [0, width)"),
    _binary("shr", "§4", "right shift: arithmetic for signed, logical for unsigned"),
    _binary("maximum", "§5.2", "maximum propagating NaN"),
    _binary("minimum", "§5.2", "minimum propagating NaN"),
    _binary("maximum_num", "§5.2", "maximum ignoring a one-sided NaN"),
    _binary("minimum_num", "§5.2", "minimum ignoring a one-sided NaN"),
    _compare("eq", "equal"),
    _compare("ne", "not equal"),
    _compare("lt", "less than"),
    _compare("le", "less or equal"),
    _compare("gt", "greater than"),
    _compare("ge", "greater or equal"),
    OpDef("fdiv", "§5.1", "float division with explicit approximate / flush_to_zero modes",
          operands=("lhs", "rhs"), attrs={"approximate": APPROXIMATE, "flush_to_zero": FLUSH_TO_ZERO},
          same_type=True, example="%r = fdiv %a, %b {approximate = true, flush_to_zero = false} : f32", **POINTWISE),
    OpDef("select", "§3", "elementwise choice: on_true where cond, else on_false",
          operands=("cond", "on_true", "on_false"),
          example="%r = select %m, %a, %b : tensor<f32, [%N]>", **POINTWISE),
)
