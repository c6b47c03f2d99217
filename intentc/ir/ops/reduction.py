"""Reduce, scan, arg_reduce and region fold/scan (spec §3, §6)."""
from ..optable import ACC, AttrSpec, OpDef, register

AXES = AttrSpec("ints", required=True, doc="reduced source axes")
AXIS = AttrSpec("int", required=True, doc="scanned / folded source axis")
EXCLUSIVE = AttrSpec("bool", doc="exclusive prefix; default false")
REVERSE = AttrSpec("bool", doc="scan from the last element; default false")

register(
    OpDef("reduce", "§3, §6", "builtin reduction with the canonical identity of its kind",
          operands=("source",),
          attrs={"kind": AttrSpec("keyword", required=True, choices=("sum", "prod", "max", "min", "any", "all")),
                 "axes": AXES, "acc": ACC},
          example="%s = reduce %x {axes = [0], kind = sum} : f32"),
    OpDef("scan", "§3, §6", "builtin inclusive/exclusive, forward/reverse prefix",
          operands=("source",),
          attrs={"kind": AttrSpec("keyword", required=True, choices=("sum", "prod", "max", "min")),
                 "axis": AXIS, "exclusive": EXCLUSIVE, "reverse": REVERSE, "acc": ACC},
          example="%c = scan %x {axis = 0, kind = sum} : tensor<f32, [%N]>"),
    OpDef("generic_reduce", "§6", "parallel reduction with an author-given combine and identities",
          operands=("sources*",), groups={"init": "+"}, attrs={"axes": AXES},
          regions=("combine",), results=None,
          example="%s = generic_reduce %x init(%zero) {axes = [0]} : f32 {\n^combine(%a: f32, %b: f32):\n  %c = add %a, %b : f32\n  yield %c\n}"),
    OpDef("generic_scan", "§6", "prefix with an associative author-given combine",
          operands=("sources*",), groups={"init": "+"},
          attrs={"axis": AXIS, "exclusive": EXCLUSIVE, "reverse": REVERSE},
          regions=("combine",), results=None),
    OpDef("arg_reduce", "§6", "value and lowest logical index of the max/min; NaN propagates",
          operands=("source",),
          attrs={"kind": AttrSpec("keyword", required=True, choices=("max", "min")), "axis": AXIS},
          results=2, example="%v, %i = arg_reduce %x {axis = 0, kind = max} : f32, index"),
    OpDef("region_fold", "§6", "order-preserving segmented fold: summarize slices, combine summaries",
          operands=("sources*",), groups={"init": "+"},
          attrs={"axis": AXIS, "segment": AttrSpec("int", doc="preferred slice length for lowering, set by "
                                                          "online-reduction; never part of the meaning (§6)")},
          regions=("summarize", "combine"), results=None),
    OpDef("region_scan", "§6", "order-preserving segmented scan: summarize, combine, emit per element",
          operands=("sources*",), groups={"init": "+"}, attrs={"axis": AXIS},
          regions=("summarize", "combine", "emit"), results=None),
)
