"""Building the segmented online form of a matched normalized summary (§5.6, §6).

The summary is `record<valid: bool, max: F, sum: F, acc: A>`. A slice's summarizer takes
its own maximum; a slice with no finite maximum (all scores -inf) is *invalid* and its
reference maximum is normalized to 0, so no `-inf - -inf` is ever formed. The combine
keeps the larger valid maximum and rescales each side's mass and moment by
`exp(side_max - merged_max)`, using 0 for an invalid side. The identity `{false, 0, 0, 0}`
is therefore neutral on both sides, as §6 requires.

After the fold, the original names are rebound: the mass and moment to the record fields,
and the maximum to `select(valid, max, -inf)` so an empty or all-inactive domain still
gives the maximum's identity.
"""
from __future__ import annotations

from ...ir.nodes import Keyword, Op
from ...ir.types import RecordField, RecordType, TensorType
from ..emit import Emitter
from ..ir_walk import Namer


def build_online_fold(block: list[Op], summary, namer: Namer, segment: int, types: dict) -> list[Op]:
    """The ops replacing the pattern: constants, the region_fold, and the rebinding of names."""
    maximum, mass, moment = block[summary.maximum], block[summary.mass], block[summary.moment]
    scores, values = maximum.operands[0], moment.operands[1]
    dtype = maximum.result_types[0].dtype
    scalar, acc_type = TensorType(dtype=dtype), moment.result_types[0]
    summary_type = RecordType(fields=(RecordField(name="valid", type=TensorType(dtype="bool")),
                                      RecordField(name="max", type=scalar), RecordField(name="sum", type=scalar),
                                      RecordField(name="acc", type=acc_type)))
    outer = Emitter(namer, "online")
    false = outer.constant(False, "bool", "false")
    zero = outer.constant(0.0, dtype, "zero")
    ninf = outer.constant(float("-inf"), dtype, "ninf")
    zero_acc = outer.op("full", type_=acc_type, hint="zero_acc", attrs={"value": 0.0}) if acc_type.shape else zero
    identity = outer.op("record", [false, zero, zero, zero_acc], summary_type, hint="identity")
    summarize = _summarize(namer, moment, scores_type=scalar, values_type=types[values],
                           summary_type=summary_type, zero=zero, ninf=ninf)
    combine = _combine(namer, summary_type, zero)
    folded = outer.op("region_fold", [scores, values], summary_type, hint="summary",
                      attrs={"axis": 0, "segment": segment}, groups={"init": [identity]},
                      regions=(summarize, combine))
    valid = outer.record_get(folded, "valid", TensorType(dtype="bool"))
    merged_max = outer.record_get(folded, "max", scalar)
    outer.op("record_get", [folded], scalar, attrs={"field": Keyword(name="sum")}, result=mass.results[0])
    outer.op("record_get", [folded], acc_type, attrs={"field": Keyword(name="acc")}, result=moment.results[0])
    outer.op("select", [valid, merged_max, ninf], scalar, result=maximum.results[0])
    return outer.ops


def _summarize(namer: Namer, moment: Op, scores_type, values_type, summary_type, zero: str, ninf: str):
    e = Emitter(namer, "seg")
    length, positions = e.fresh("len"), e.fresh("pos")
    scores, values = e.fresh("scores"), e.fresh("values")
    dtype = scores_type.dtype
    sliced = TensorType(dtype=dtype, shape=(length,))
    maximum = e.op("reduce", [scores], scores_type, hint="max", attrs={"axes": [0], "kind": Keyword(name="max")})
    valid = e.op("ne", [maximum, ninf], TensorType(dtype="bool"), hint="valid")
    reference = e.op("select", [valid, maximum, zero], scores_type, hint="ref")
    reference_b = e.op("broadcast", [reference], sliced, hint="ref_b")
    shifted = e.op("sub", [scores, reference_b], sliced, hint="shifted")
    weights = e.op("exp", [shifted], sliced, hint="w")
    mass = e.op("reduce", [weights], scores_type, hint="mass", attrs={"axes": [0], "kind": Keyword(name="sum")})
    acc = e.op(moment.name, [weights, values], moment.result_types[0], hint="moment", attrs=dict(moment.attributes))
    part = e.op("record", [valid, reference, mass, acc], summary_type, hint="part")
    e.yield_(part)
    values_sliced = values_type.model_copy(update={"shape": (length, *values_type.shape[1:])})
    return e.region("summarize", [(length, TensorType(dtype="index")), (positions, TensorType(dtype="index", shape=(length,))),
                                  (scores, sliced), (values, values_sliced)])


def _combine(namer: Namer, summary_type: RecordType, zero: str):
    e = Emitter(namer, "merge")
    left, right = e.fresh("l"), e.fresh("r")
    fields = {f.name: f.type for f in summary_type.fields}
    lv, lm, ls, la = (e.record_get(left, f, fields[f]) for f in ("valid", "max", "sum", "acc"))
    rv, rm, rs, ra = (e.record_get(right, f, fields[f]) for f in ("valid", "max", "sum", "acc"))
    scalar, acc_type = fields["max"], fields["acc"]
    both = e.op("and", [lv, rv], TensorType(dtype="bool"), hint="both")
    larger = e.op("maximum", [lm, rm], scalar, hint="larger")
    one_side = e.op("select", [lv, lm, rm], scalar, hint="one_side")
    merged_max = e.op("select", [both, larger, one_side], scalar, hint="max")
    scale_l = _rescale(e, lv, lm, merged_max, scalar, zero)
    scale_r = _rescale(e, rv, rm, merged_max, scalar, zero)
    mass = e.op("add", [e.op("mul", [ls, scale_l], scalar), e.op("mul", [rs, scale_r], scalar)], scalar, hint="sum")
    acc = e.op("add", [_scaled(e, la, scale_l, acc_type), _scaled(e, ra, scale_r, acc_type)], acc_type, hint="acc")
    valid = e.op("or", [lv, rv], TensorType(dtype="bool"), hint="valid")
    merged = e.op("record", [valid, merged_max, mass, acc], summary_type, hint="merged")
    e.yield_(merged)
    return e.region("combine", [(left, summary_type), (right, summary_type)])


def _rescale(e: Emitter, valid: str, side_max: str, merged_max: str, scalar, zero: str) -> str:
    """exp(side_max - merged_max) for a valid side, 0 for an invalid one; never exp(NaN)."""
    difference = e.op("sub", [side_max, merged_max], scalar, hint="diff")
    safe = e.op("select", [valid, difference, zero], scalar, hint="diff_safe")
    raw = e.op("exp", [safe], scalar, hint="scale_raw")
    return e.op("select", [valid, raw, zero], scalar, hint="scale")


def _scaled(e: Emitter, value: str, scale: str, acc_type) -> str:
    factor = e.op("broadcast", [scale], acc_type, hint="scale_b") if acc_type.shape else scale
    return e.op("mul", [value, factor], acc_type, hint="scaled")
