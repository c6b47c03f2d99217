"""Indexed access, logical buffers and collision semantics (spec §8, §9, §10, §13)."""
from ..optable import ACCESS_GROUPS, ADDRESS_WIDTH, AttrSpec, OpDef, register

register(__name__,
    OpDef("read", "§10", "gather through a typed index relation; invalid lanes yield fill",
          operands=("source",), groups={**ACCESS_GROUPS, "fill": "?"}, attrs={"address_width": ADDRESS_WIDTH},
          effects=("read",), accesses=("read",), cta_registers=1,
          example="%row = read %x index(%i, %cols) mask(%m) fill(%z) : tensor<f32, [%N]>"),
    OpDef("write", "§10", "store through a typed index relation; invalid lanes have no effect",
          operands=("dest", "value"), groups=ACCESS_GROUPS, attrs={"address_width": ADDRESS_WIDTH}, results=0,
          effects=("write",), accesses=("write",),
          example="write %y, %p index(%i, %cols)"),
    OpDef("unique_store", "§10", "arbitrary-index store whose active mapping must be injective",
          operands=("dest", "value"), groups=ACCESS_GROUPS, attrs={"address_width": ADDRESS_WIDTH}, results=0,
          effects=("unique_store",), accesses=("write",),
          example="unique_store %y, %v index(%perm)"),
    OpDef("scatter_reduce", "§10", "store combining colliding values with a pure combine",
          operands=("dest", "value"), groups=ACCESS_GROUPS,
          attrs={"kind": AttrSpec("keyword", choices=("add", "max", "min", "and", "or", "xor"),
                                  doc="builtin combine; omit it and give a combine region instead"),
                 "address_width": ADDRESS_WIDTH},
          regions=("combine",), min_regions=0, results=0, effects=("scatter_reduce",), accesses=("write",),
          example="scatter_reduce %out, %v index(%bin) {kind = add}"),
    OpDef("buffer", "§9", "a kernel-local logical buffer, uninitialized or from a full initial value",
          groups={"init": "?"}, effects=("alloc",),
          example="%b = buffer init(%zeros) : buffer<f32, [%N]>"),
    OpDef("assume_in_bounds", "§13", "states that an index relation lies within an axis of a resource",
          operands=("index", "resource"), attrs={"axis": AttrSpec("int", required=True)}, results=0,
          effects=("assume",), example="assume_in_bounds %i, %x {axis = 0}"),
)

# §10, §11: the pointwise op each builtin `kind` of scatter_reduce and atomic_rmw applies to
# the old and the new value (atomic_rmw's `exchange` keeps the new one and has no op).
UPDATE_COMBINE = {"add": "add", "max": "maximum", "min": "minimum", "and": "and", "or": "or", "xor": "xor"}
