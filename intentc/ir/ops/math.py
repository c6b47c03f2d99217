"""Named math functions and the approximate-mode ops (spec §5, §5.1): pure, element-wise,
keep dtype and shape (isnan/isinf yield bool)."""
from ..optable import APPROXIMATE, FLUSH_TO_ZERO, OpDef, register
from .pointwise import POINTWISE

_UNARY = {
    "exp": ("§5", "e^x"),
    "log": ("§5", "natural logarithm"),
    "log2": ("§5", "base-2 logarithm"),
    "log1p": ("§5", "log(1+x) without rounding 1+x; ULP bound 1/1 (f32/f64)"),
    "expm1": ("§5", "e^x - 1 without rounding e^x"),
    "sqrt": ("§5", "square root, correctly rounded"),
    "rsqrt": ("§5", "1/sqrt(x)"),
    "sin": ("§5", "sine"),
    "cos": ("§5", "cosine"),
    "tan": ("§5", "tangent"),
    "asin": ("§5", "arcsine principal value in [-pi/2, pi/2]; libdevice special values"),
    "acos": ("§5", "arccosine"),
    "atan": ("§5", "arctangent"),
    "sinh": ("§5", "hyperbolic sine"),
    "cosh": ("§5", "hyperbolic cosine"),
    "erf": ("§5", "error function"),
    "erfc": ("§5", "complementary error function without rounding erf; ULP bound 4/5"),
    "i0": ("§5", "modified Bessel function of the first kind, order 0; ULP bound 6/6"),
    "lgamma": ("§5", "log|Gamma(x)|; +0 at 1 and 2, +inf at poles and infinities"),
    "floor": ("§5", "round toward -inf"),
    "ceil": ("§5", "round toward +inf"),
    "trunc": ("§5", "round toward zero"),
    "rint": ("§5", "round to nearest even"),
    "isnan": ("§5", "true where x is NaN; yields bool"),
    "isinf": ("§5", "true where x is an infinity; yields bool"),
}
_BOOL_RESULT = ("isnan", "isinf")
# Computed by the C math library's function of the same name (libm, libdevice); exp2 and
# tanh, registered below with their approximate modes, are too.
_LIBM = ("exp", "log", "log2", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
         "erf", "erfc", "lgamma")

register(__name__, *(
    OpDef(name, section, summary, operands=("source",), same_type=name not in _BOOL_RESULT, dtypes="float",
          libm=name in _LIBM, fresh_nan=True,
          example=f"%r = {name} %x : tensor<f32, [%N]>", **POINTWISE)
    for name, (section, summary) in _UNARY.items()
))
register(__name__,
    OpDef("exp2", "§5, §5.1", "2^x; approximate mode within 2 ULP",
          operands=("source",), attrs={"approximate": APPROXIMATE, "flush_to_zero": FLUSH_TO_ZERO},
          same_type=True, dtypes="float", libm=True, fresh_nan=True, example="%r = exp2 %x {approximate = true} : f32", **POINTWISE),
    OpDef("tanh", "§5, §5.1", "hyperbolic tangent; approximate mode within 2^-11 relative",
          operands=("source",), attrs={"approximate": APPROXIMATE},
          same_type=True, dtypes="float", libm=True, fresh_nan=True, example="%r = tanh %x {approximate = true} : f32", **POINTWISE),
    OpDef("fdiv", "§5.1", "float division with explicit approximate / flush_to_zero modes",
          operands=("lhs", "rhs"), attrs={"approximate": APPROXIMATE, "flush_to_zero": FLUSH_TO_ZERO},
          same_type=True, dtypes="float", fresh_nan=True, example="%r = fdiv %a, %b {approximate = true, flush_to_zero = false} : f32",
          **POINTWISE),
)
