"""Reduce, scan, arg_reduce and region fold/scan (spec §3, §6)."""
import math

from ..dtypes import FORMATS, int_range, is_float, sum_accumulator
from ..optable import ACC, AttrSpec, OpDef, register

# An extremum and its position do not exist over no members (docs/kir.md §6): E511, R0405.
EMPTY_ARG_REDUCE_MESSAGE = "`arg_reduce` over an empty axis has no extremum and no position"

AXES = AttrSpec("ints", required=True, doc="reduced source axes")
AXIS = AttrSpec("int", required=True, doc="scanned / folded source axis")
EXCLUSIVE = AttrSpec("bool", doc="exclusive prefix; default false")
REVERSE = AttrSpec("bool", doc="scan from the last element; default false")

register(__name__,
    OpDef("reduce", "§3, §6", "builtin reduction with the canonical identity of its kind",
          operands=("source",),
          attrs={"kind": AttrSpec("keyword", required=True, choices=("sum", "prod", "max", "min", "any", "all")),
                 "axes": AXES, "acc": ACC}, fresh_nan=True,
          example="%s = reduce %x {axes = [0], kind = sum} : f32"),
    OpDef("scan", "§3, §6", "builtin inclusive/exclusive, forward/reverse prefix",
          operands=("source",),
          attrs={"kind": AttrSpec("keyword", required=True, choices=("sum", "prod", "max", "min")),
                 "axis": AXIS, "exclusive": EXCLUSIVE, "reverse": REVERSE, "acc": ACC},
          cta_registers=4, fresh_nan=True, example="%c = scan %x {axis = 0, kind = sum} : tensor<f32, [%N]>"),
    OpDef("generic_reduce", "§6", "parallel reduction with an author-given combine and identities",
          operands=("sources*",), groups={"init": "+"}, attrs={"axes": AXES},
          regions=("combine",), results=None, tuple_partials=True,
          example="%s = generic_reduce %x init(%zero) {axes = [0]} : f32 {\n^combine(%a: f32, %b: f32):\n  %c = add %a, %b : f32\n  yield %c\n}"),
    OpDef("generic_scan", "§6", "prefix with an associative author-given combine",
          operands=("sources*",), groups={"init": "+"},
          attrs={"axis": AXIS, "exclusive": EXCLUSIVE, "reverse": REVERSE},
          regions=("combine",), results=None),
    OpDef("arg_reduce", "§6", "value and lowest logical index of the max/min; NaN propagates",
          operands=("source",),
          attrs={"kind": AttrSpec("keyword", required=True, choices=("max", "min")), "axis": AXIS},
          results=2, tuple_partials=True, example="%v, %i = arg_reduce %x {axis = 0, kind = max} : f32, index"),
    OpDef("region_fold", "§6", "order-preserving segmented fold: summarize slices, combine summaries",
          operands=("sources*",), groups={"init": "+"},
          attrs={"axis": AXIS, "segment": AttrSpec("int", doc="preferred slice length for lowering, set by "
                                                          "online-reduction; never part of the meaning (§6)")},
          regions=("summarize", "combine"), results=None),
    OpDef("region_scan", "§6", "order-preserving segmented scan: summarize, combine, emit per element",
          operands=("sources*",), groups={"init": "+"}, attrs={"axis": AXIS},
          regions=("summarize", "combine", "emit"), results=None),
)

# §6: the pointwise op that combines two partial results of each builtin reduction kind.
COMBINE = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum", "any": "or", "all": "and"}


def identity(kind: str, dtype: str) -> bool | int | float:
    """The canonical identity of a builtin reduction kind in `dtype` (§6): 0, 1, false/true,
    and for max/min the lowest/highest value (±inf, or ±max finite where there is no inf)."""
    if kind in ("any", "all"):
        return kind == "all"
    if kind in ("sum", "prod"):
        return 0 if kind == "sum" else 1
    if is_float(dtype):
        fmt = FORMATS[dtype]
        extreme = math.inf if fmt.has_inf else fmt.max_finite
        return -extreme if kind == "max" else extreme
    low, high = int_range(dtype)
    return low if kind == "max" else high


def accumulator(kind: str, source_dtype: str, acc_attr) -> str:
    """The dtype a builtin reduction or scan accumulates in: its `acc`, else the §3 widening
    for sum, else the source dtype."""
    if acc_attr is not None:
        return acc_attr.dtype
    return sum_accumulator(source_dtype) if kind == "sum" else source_dtype
