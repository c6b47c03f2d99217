"""Structured control flow and helpers (spec §10; domains and `parallel` are defined in docs/kir.md)."""
from ..optable import AttrSpec, OpDef, register

register(__name__,
    OpDef("parallel", "§10 (docs)", "unordered iterations over a domain; one index block argument per extent",
          operands=("extents*",), regions=("body",), results=0,
          example="parallel %M {\n^row(%i: index):\n  ...\n}"),
    OpDef("loop", "§10", "ordered counted loop with carried values",
          operands=("lower", "upper", "step"), groups={"iter": "*"}, regions=("body",), results=None,
          region_per_coordinate=True,
          example="%acc = loop %c0, %n, %c1 iter(%zero) : f32 {\n^body(%k: index, %a: f32):\n  ...\n  yield %next\n}"),
    OpDef("if", "§10", "ordered two-way choice; yields values from the taken branch",
          operands=("cond",), regions=("then", "else"), min_regions=1, results=None, region_per_coordinate=True),
    OpDef("yield", "§6, §10", "ends a region, passing its values to the enclosing op",
          operands=("values*",), results=0, terminator=True, enum_operands=True, example="yield %a, %b"),
    OpDef("call", "docs", "call a module-level helper",
          operands=("args*",), attrs={"callee": AttrSpec("symbol", required=True)}, results=None, enum_operands=True,
          example="%r = call %a, %b {callee = @gelu} : f32"),
)
