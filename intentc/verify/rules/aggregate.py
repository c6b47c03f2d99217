"""Tuples and records (§1): construction and access are typed component by component."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.nodes import Op
from ...ir.types import RecordType, TensorType, TupleType
from ..typesys import fmt, same_type
from . import Args, rule
from .common import Results, expect_type

if TYPE_CHECKING:
    from ..walk import Verifier


@rule("tuple")
def tuple_(ctx: Verifier, op: Op, args: Args) -> Results:
    written = op.result_types[0]
    if not isinstance(written, TupleType):
        ctx.error("E108", op, f"`tuple` makes a tuple type, not `{fmt(written)}`",
                  "write `: tuple<T0, T1, ...>` with one component per operand")
        return None
    if not all(isinstance(t, _VALUE_TYPES) for t in written.elements):
        return None  # the written type is reported where types are checked
    if not _value_types(ctx, op, args):
        return None
    expected = TupleType(elements=tuple(v.type for v in args.operands))
    expect_type(ctx, op, expected, "E108", "one component per operand, in order")
    return None


_VALUE_TYPES = (TensorType, TupleType, RecordType)


def _value_types(ctx, op, args) -> bool:
    for value in args.operands:
        if not isinstance(value.type, _VALUE_TYPES):
            ctx.error("E105", op, f"`{fmt(value.type)}` cannot be a tuple or record component",
                      "components are tensors, tuples or records; keep views, buffers and enums separate")
            return False
    return True


@rule("tuple_get")
def tuple_get(ctx: Verifier, op: Op, args: Args) -> Results:
    source = args[0].type
    index = op.int_attr("index")
    if not isinstance(source, TupleType):
        ctx.error("E108", op, f"`tuple_get` needs a tuple, got `{fmt(source)}`", "use `record_get` on records")
        return None
    if not 0 <= index < len(source.elements):
        ctx.error("E108", op, f"`index = {index}` is out of range for a tuple of {len(source.elements)}",
                  f"components count from 0 to {len(source.elements) - 1}")
        return None
    expect_type(ctx, op, source.elements[index], "E108", f"component {index} of the tuple")
    return None


@rule("record")
def record(ctx: Verifier, op: Op, args: Args) -> Results:
    written = op.result_types[0]
    if not isinstance(written, RecordType) or len(written.fields) != len(args.operands):
        ctx.error("E108", op, f"`record` with {len(args.operands)} operand(s) cannot make `{fmt(written)}`",
                  "write `: record<name: T, ...>` with one field per operand, in order")
        return None
    if not _value_types(ctx, op, args):
        return None
    for field, value in zip(written.fields, args.operands):
        if not same_type(ctx, field.type, value.type):
            ctx.error("E108", op, f"field `{field.name}` is `{fmt(field.type)}` but its operand is "
                      f"`{fmt(value.type)}`", "operands are given in field order")
            return None
    return None


@rule("record_get")
def record_get(ctx: Verifier, op: Op, args: Args) -> Results:
    source = args[0].type
    name = op.keyword_attr("field")
    if not isinstance(source, RecordType):
        ctx.error("E108", op, f"`record_get` needs a record, got `{fmt(source)}`", "use `tuple_get` on tuples")
        return None
    field_type = source.field_type(name)
    if field_type is None:
        ctx.error("E108", op, f"the record has no field `{name}`",
                  f"fields: {', '.join(f.name for f in source.fields)}")
        return None
    expect_type(ctx, op, field_type, "E108", f"the type of field `{name}`")
    return None
