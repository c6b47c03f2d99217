"""Tuples and records (spec §1): plain Python tuples and `RecordValue`s of their components."""
from __future__ import annotations

from ..ir.types import RecordType
from .machine import IMPLS
from .values import RecordValue


@IMPLS.register("tuple")
def _tuple_op(machine, op):
    return tuple(machine.operands(op))


@IMPLS.register("tuple_get")
def _tuple_get_op(machine, op):
    (t,) = machine.operands(op)
    return t[op.attributes["index"]]


@IMPLS.register("record")
def _record_op(machine, op):
    type_ = op.result_types[0]
    names = [f.name for f in type_.fields] if isinstance(type_, RecordType) else []
    return RecordValue(tuple(zip(names, machine.operands(op))))


@IMPLS.register("record_get")
def _record_get_op(machine, op):
    (r,) = machine.operands(op)
    return r.get(op.attributes["field"].name)
