"""Atomic memory operations (spec §11)."""
from ..optable import ACCESS_GROUPS, ADDRESS_WIDTH, ORDER, AttrSpec, OpDef, register

register(__name__,
    OpDef("atomic_load", "§11", "atomic load; order relaxed or acquire",
          operands=("source",), groups=ACCESS_GROUPS, attrs={"order": ORDER, "address_width": ADDRESS_WIDTH}, effects=("atomic",),
          accesses=("read",),
          example="%v = atomic_load %flag index(%z) {order = acquire} : i32"),
    OpDef("atomic_store", "§11", "atomic store; order relaxed or release",
          operands=("dest", "value"), groups=ACCESS_GROUPS, attrs={"order": ORDER, "address_width": ADDRESS_WIDTH}, results=0,
          effects=("atomic",), accesses=("write",), example="atomic_store %flag, %one index(%z) {order = release}"),
    OpDef("atomic_rmw", "§11", "indivisible read-modify-write returning the old value",
          operands=("dest", "value"), groups=ACCESS_GROUPS,
          attrs={"kind": AttrSpec("keyword", required=True,
                                  choices=("exchange", "add", "max", "min", "and", "or", "xor")),
                 "order": ORDER, "address_width": ADDRESS_WIDTH}, effects=("atomic",), accesses=("read", "write"),
          example="%old = atomic_rmw %counter, %one index(%z) {kind = add, order = relaxed} : i32"),
    OpDef("atomic_cas", "§11", "compare-exchange returning {old_value, success}; failure order derived",
          operands=("dest", "expected", "desired"), groups=ACCESS_GROUPS, attrs={"order": ORDER, "address_width": ADDRESS_WIDTH},
          effects=("atomic",), accesses=("read", "write"),
          example="%r = atomic_cas %x, %e, %d index(%z) {order = acq_rel} : record<old_value: i32, success: bool>"),
)
