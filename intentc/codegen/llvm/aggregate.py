"""Tuples and records (spec §1): Python tuples and `RecordVal`s of lowered components."""
from __future__ import annotations

from .lowering import LOWERINGS
from .values import RecordVal


@LOWERINGS.register("tuple")
def _tuple_op(em, op):
    return tuple(em.env[n] for n in op.operands)


@LOWERINGS.register("tuple_get")
def _tuple_get_op(em, op):
    return em.env[op.operands[0]][op.attributes["index"]]


@LOWERINGS.register("record")
def _record_op(em, op):
    names = [f.name for f in op.result_types[0].fields]
    return RecordVal(dict(zip(names, (em.env[n] for n in op.operands))))


@LOWERINGS.register("record_get")
def _record_get_op(em, op):
    return em.env[op.operands[0]].fields[op.attributes["field"].name]
