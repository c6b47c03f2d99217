"""Tuple and record construction and access (spec §1); element-wise component by component."""
from ..optable import AttrSpec, OpDef, register

register(__name__,
    OpDef("tuple", "§1", "build a tuple from its components", operands=("elements*",), elementwise=True,
          example="%t = tuple %a, %b : tuple<f32, i32>"),
    OpDef("tuple_get", "§1", "one component of a tuple", operands=("source",), elementwise=True,
          attrs={"index": AttrSpec("int", required=True)}, example="%a = tuple_get %t {index = 0} : f32"),
    OpDef("record", "§1", "build a record; operands in field order", operands=("fields*",), elementwise=True,
          example="%r = record %m, %s : record<max: f32, sum: f32>"),
    OpDef("record_get", "§1", "one field of a record", operands=("source",), elementwise=True,
          attrs={"field": AttrSpec("keyword", required=True)},
          example="%m = record_get %r {field = max} : f32"),
)
