"""Shape ops (spec §2; broadcast, reshape and join are defined in docs/kir.md)."""
from ..optable import AttrSpec, OpDef, register

register(__name__,
    OpDef("full", "§2", "a tensor of the result shape with every element equal to value",
          attrs={"value": AttrSpec("number", required=True)}, cta_per_coordinate=True,
          example="%z = full {value = 0.0} : tensor<f32, [%N]>"),
    OpDef("iota", "§2", "logical coordinates along one axis of the result shape",
          attrs={"axis": AttrSpec("int", doc="axis whose coordinate is produced; default 0")}, cta_per_coordinate=True,
          example="%i = iota : tensor<index, [%N]>"),
    OpDef("dim", "§2", "the extent of one axis of a tensor, view or buffer, with its identity",
          operands=("source",), attrs={"axis": AttrSpec("int", required=True)}, cta_per_coordinate=True,
          example="%n = dim %x {axis = 1} : index"),
    OpDef("broadcast", "§2 (docs)", "numpy-style broadcast to the result shape",
          operands=("source",), attrs={"dims": AttrSpec("ints", doc="result axis of each source axis; default right-aligned")},
          cta_per_coordinate=True, rearranges=True, identity_at_same_type=True,
          example="%b = broadcast %m : tensor<f32, [%N]>"),
    OpDef("reshape", "§2 (docs)", "same elements in row-major order, new shape",
          operands=("source",), rearranges=True, identity_at_same_type=True,
          example="%r = reshape %x : tensor<f32, [4, 8]>"),
    OpDef("join", "§2 (docs)", "stack two same-typed tensors along a new minor axis of extent 2",
          operands=("lhs", "rhs"), example="%j = join %a, %b : tensor<f32, [%N, 2]>"),
)
