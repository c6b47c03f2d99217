"""Every verifier diagnostic code: the spec section it enforces and a one-line title.

Scheme (documented in docs/diagnostics.md):
  E00xx  syntax (parser), structure against the op table (E003x), SSA scope (E005x)
  E1xx   §1–§2 types, shapes, extents, enums, tuples and records
  E2xx   §3 literals, promotion, accumulators and contractions
  E3xx   §4 integer arithmetic
  E4xx   §5 floating point, approximate math, cast and bitcast
  E5xx   §6 reduce and scan, purity and captures of regions
  E6xx   §7 scaled, sparse, histogram (and the quantization schema of docs/kir.md)
  E7xx   §8–§10 views, buffers, indexed access, collisions and control flow
  E8xx   §11 atomics
  E9xx   §12–§13 RNG and input constraints
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    section: str
    title: str


CODES: dict[str, Code] = {
    # structure against the op table
    "E0030": Code("docs §1", "op not in the op table"),
    "E0031": Code("op table", "wrong number of operands"),
    "E0032": Code("op table", "unknown or repeated operand group"),
    "E0033": Code("op table", "wrong number of values in an operand group"),
    "E0034": Code("op table", "required attribute missing"),
    "E0035": Code("op table", "unknown attribute"),
    "E0036": Code("op table", "attribute value of the wrong kind"),
    "E0037": Code("op table", "keyword attribute not among the allowed choices"),
    "E0038": Code("op table", "wrong number of regions"),
    "E0039": Code("op table", "wrong number of results"),
    # SSA scope
    "E0050": Code("docs §1", "value not defined or not visible here"),
    "E0051": Code("docs §1", "value defined twice"),
    "E0052": Code("§2", "dynamic extent is not an index value in scope"),
    "E0053": Code("docs §1", "unknown symbol"),
    "E0054": Code("docs §1", "item or parameter name declared twice"),
    "E0055": Code("docs §3", "yield missing or misplaced"),
    # §1–§2
    "E101": Code("§1", "type not allowed in the kernel ABI"),
    "E102": Code("§2", "negative static extent"),
    "E103": Code("§2", "extents not known to be equal"),
    "E104": Code("§1", "operand of the wrong kind"),
    "E105": Code("§1", "tuple/record component is not a value type"),
    "E106": Code("§1", "record field names not unique"),
    "E107": Code("§2", "axis out of range or repeated"),
    "E108": Code("§1", "tuple/record construction or access mismatch"),
    "E109": Code("§2", "full: fill not representable or result not a tensor"),
    "E110": Code("§2", "enum outside constexpr"),
    "E111": Code("§2", "enum compared with another type"),
    "E112": Code("§2", "enum used in arithmetic, cast, bitcast or another runtime op"),
    "E113": Code("§2", "enum member or declaration invalid"),
    "E120": Code("§2", "iota result not an integer tensor"),
    "E121": Code("§2", "dim source or result invalid"),
    "E122": Code("§2", "broadcast not compatible"),
    "E123": Code("§2", "reshape changes the element count"),
    "E124": Code("§2", "join operands or result mismatch"),
    # §3
    "E201": Code("§3", "pointwise operands of different dtypes"),
    "E202": Code("§3", "literal not representable in its dtype"),
    "E203": Code("§3", "pointwise result type does not match"),
    "E204": Code("§3", "select condition not bool"),
    "E205": Code("§3", "reduction/scan result dtype does not follow the accumulator rule"),
    "E206": Code("§3", "accumulator is not a scalar numeric dtype"),
    "E207": Code("§3", "contraction result type does not match"),
    "E208": Code("§6", "identity or component dtype mismatch"),
    "E210": Code("§3", "contraction axes invalid"),
    "E211": Code("§3", "contracted or batch extents differ"),
    "E212": Code("§5.3", "contraction init type differs from the result"),
    "E213": Code("§3", "contraction operand rank or dtype invalid"),
    "E214": Code("§3", "arithmetic on a non-numeric dtype"),
    # §4
    "E301": Code("§4", "`div` on integers"),
    "E302": Code("§4", "remainder op on the wrong dtype class"),
    "E303": Code("§4", "bitwise or shift op on a non-integer dtype"),
    "E304": Code("§4", "constant shift amount outside [0, width)"),
    "E305": Code("§4", "constant division by zero"),
    "E306": Code("§4", "constant signed_min // -1"),
    # §5
    "E401": Code("§5", "float op on a non-float dtype"),
    "E402": Code("§5.1", "approximate mode on a non-f32 operand"),
    "E403": Code("§5.1", "flush_to_zero without approximate"),
    "E404": Code("§5.2", "illegal cast"),
    "E405": Code("§5.2", "bitcast changes the bit width or shape"),
    "E406": Code("§5.2", "saturation is not a cast mode"),
    "E407": Code("§2, §5.2", "bitcast of `index`"),
    # §6
    "E501": Code("§6", "reduction kind not defined for the dtype"),
    "E502": Code("§6", "reduction/scan result shape does not match"),
    "E503": Code("§6", "sources and identities differ in number"),
    "E504": Code("§6", "source shapes or source axes inconsistent"),
    "E505": Code("§6", "region signature does not match"),
    "E506": Code("§6", "region yields the wrong types"),
    "E507": Code("§6", "effect inside a pure region"),
    "E508": Code("§6", "pure region captures a view or buffer"),
    "E509": Code("§6", "region summarizer observes the segment extent"),
    "E510": Code("§6", "generic/region results do not match"),
    "E511": Code("§6 (docs)", "arg_reduce over a static empty axis"),
    # §7
    "E601": Code("§7", "scaled_contract operand rank or dtype invalid"),
    "E602": Code("§7", "group_size invalid"),
    "E603": Code("§7", "scaled_contract extents inconsistent"),
    "E610": Code("§7", "sparse_contract operand shapes invalid"),
    "E611": Code("§7", "sparse compression axis not divisible"),
    "E612": Code("§7", "sparse metadata type invalid"),
    "E620": Code("§7", "histogram values not integer"),
    "E621": Code("§7", "histogram validity not a broadcastable bool"),
    "E622": Code("§7", "histogram bins invalid"),
    "E623": Code("§7", "histogram count dtype not integer"),
    "E630": Code("§7", "decoder or quantization schema mismatch"),
    # §8–§10
    "E701": Code("§8", "write to an `in` view"),
    "E702": Code("§8", "read of an `out` view"),
    "E703": Code("§10", "index count differs from the resource rank"),
    "E704": Code("§10", "index not an integer"),
    "E705": Code("§10", "index, mask, value or fill not broadcastable to the access shape"),
    "E706": Code("§10", "mask not bool"),
    "E707": Code("§10", "fill missing, misplaced or of the wrong dtype"),
    "E708": Code("§10", "access dtype differs from the element dtype"),
    "E709": Code("§10", "resource operand is not a view or buffer"),
    "E720": Code("§9", "buffer escapes the kernel"),
    "E721": Code("§9", "buffer type or initial value invalid"),
    "E730": Code("§10", "unique_store injectivity not provable"),
    "E731": Code("§10", "conflicting writes in parallel iterations"),
    "E733": Code("§10", "provable affine collision between parallel iterations"),
    "E732": Code("§10", "scatter_reduce combine invalid"),
    "E740": Code("§10", "parallel domain or body invalid"),
    "E741": Code("§10", "loop bounds or carried types invalid"),
    "E742": Code("§10", "if condition or branch types invalid"),
    "E743": Code("docs §3", "call does not match the helper"),
    "E744": Code("docs §3", "helper body does not yield its result types"),
    # §11
    "E801": Code("§11", "memory order not allowed for this op"),
    "E802": Code("§11", "CAS failure order given explicitly"),
    "E803": Code("§11", "RMW kind not defined for the dtype"),
    "E804": Code("§11", "atomic value or result type mismatch"),
    "E805": Code("§11 (docs)", "atomic on an element dtype atomics do not take"),
    # §12–§13
    "E901": Code("§12", "RNG seed not a u64 scalar"),
    "E902": Code("§12", "RNG counter not u64 or index"),
    "E903": Code("§12", "RNG result type invalid"),
    "E910": Code("§13", "assume_in_bounds has a result"),
    "E911": Code("§13", "assume_in_bounds names no real axis or index"),
    "E912": Code("§13", "no other assume exists"),
}
