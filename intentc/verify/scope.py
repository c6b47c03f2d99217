"""Types as written: extents in scope (§2), tuple/record components (§1), declared enums,
and the kernel ABI (§1, §2, §9). Also module-level names: items and enum members."""
from __future__ import annotations

from collections.abc import Sequence

from ..ir.nodes import EnumDecl, Module, Param
from ..ir.types import (
    BufferType, ConstexprType, EnumType, RecordType, TensorType, TupleType, Type, ViewType,
)
from .context import Context, Value
from .typesys import fmt

_INDEX = TensorType(dtype="index")


def check_type(ctx: Context, type_: Type, node: object) -> None:
    """Well-formedness of a written type in the current scope."""
    if type(type_) is TensorType:
        if type_.shape:
            _check_shape(ctx, type_.shape, node)
    elif isinstance(type_, (ViewType, BufferType)):
        _check_shape(ctx, type_.shape, node)
    elif isinstance(type_, TupleType):
        for element in type_.elements:
            _check_component(ctx, element, node)
    elif isinstance(type_, RecordType):
        _check_record(ctx, type_, node)
    elif isinstance(type_, EnumType):
        if type_.name not in ctx.enums:
            ctx.error("E0053", node, f"`@{type_.name}` is not a declared enum",
                      f"declare it: `enum @{type_.name} {{ a = 0 }}`")
    elif isinstance(type_, ConstexprType):
        check_type(ctx, type_.inner, node)


def _check_shape(ctx, shape, node) -> None:
    for extent in shape:
        if isinstance(extent, int):
            if extent < 0:
                ctx.error("E102", node, f"static extent {extent} is negative",
                          "static extents are integers >= 0; a zero extent makes an empty tensor")
        elif not _is_extent_value(ctx.values.get(extent)):
            ctx.error("E0052", node, f"extent `%{extent}` is not an `index` value in scope",
                      "name an extent declared by a view parameter, a `dim` result or another index scalar")


def _is_extent_value(value: Value | None) -> bool:
    return value is not None and isinstance(value.type, TensorType) and value.type.dtype == "index" \
        and not value.type.shape


def _check_component(ctx, type_, node) -> None:
    if isinstance(type_, (TensorType, TupleType, RecordType)):
        check_type(ctx, type_, node)
    else:
        ctx.error("E105", node, f"`{fmt(type_)}` cannot be a tuple or record component",
                  "components are tensors, tuples or records; keep views, buffers and enums separate")


def _check_record(ctx, type_: RecordType, node) -> None:
    names = [f.name for f in type_.fields]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        ctx.error("E106", node, f"record field `{duplicates[0]}` appears twice",
                  "record field names are ordered and unique; rename one")
    for record_field in type_.fields:
        _check_component(ctx, record_field.type, node)


def value_type(type_: Type) -> Type:
    """The type an SSA value of a parameter has: a constexpr is its inner type."""
    return type_.inner if isinstance(type_, ConstexprType) else type_


def declare_params(ctx: Context, params: Sequence[Param], abi: bool) -> None:
    """Define parameters and the extents their shapes name, then check each type."""
    names = {p.name for p in params}
    seen: set[str] = set()
    for param in params:
        if param.name in seen:
            ctx.error("E0054", param, f"parameter `%{param.name}` declared twice", "rename one parameter")
        seen.add(param.name)
        for extent in _extents_of(param.type):
            if extent not in names and extent not in ctx.values:
                ctx.define(extent, Value(_INDEX), param)
        if param.name not in ctx.values:
            ctx.define(param.name, Value(value_type(param.type)), param)
    for param in params:
        check_type(ctx, param.type, param)
        (_check_abi if abi else _check_helper_param)(ctx, param)


def _extents_of(type_):
    if isinstance(type_, (TensorType, ViewType, BufferType)):
        return [e for e in type_.shape if isinstance(e, str)]
    return []


def _check_abi(ctx, param) -> None:
    type_ = param.type
    if isinstance(type_, BufferType):
        ctx.error("E720", param, f"kernel parameter `%{param.name}` is a buffer",
                  "buffers are kernel-local; pass external data as a view<...>")
    elif isinstance(type_, EnumType):
        ctx.error("E110", param, f"enum parameter `%{param.name}` is not constexpr",
                  f"write `%{param.name}: constexpr<{fmt(type_)}>`: enums never enter the runtime ABI")
    elif isinstance(type_, (TupleType, RecordType)) or \
            (isinstance(type_, TensorType) and type_.shape) or \
            (isinstance(type_, ConstexprType) and not _constexpr_inner_ok(type_.inner)):
        ctx.error("E101", param, f"`{fmt(type_)}` is not a kernel ABI type",
                  "kernel parameters are views, scalar dtypes and constexpr scalars or enums; "
                  "pass tensors as views and build tuples/records inside the kernel")


def _constexpr_inner_ok(inner) -> bool:
    return isinstance(inner, EnumType) or (isinstance(inner, TensorType) and not inner.shape)


def _check_helper_param(ctx, param) -> None:
    if isinstance(param.type, BufferType):
        ctx.error("E720", param, f"helper parameter `%{param.name}` is a buffer",
                  "buffers never leave the kernel that creates them; pass the values read from it")


def check_module_names(ctx: Context, module: Module) -> None:
    seen: set[str] = set()
    for item in module.items:
        if item.name in seen:
            ctx.error("E0054", item, f"`@{item.name}` is declared twice", "give every item its own name")
        seen.add(item.name)
        if isinstance(item, EnumDecl):
            _check_enum(ctx, item)


def _check_enum(ctx, enum: EnumDecl) -> None:
    names = set()
    for member in enum.members:
        if member.name in names:
            ctx.error("E113", member, f"enum `@{enum.name}` repeats the member name `{member.name}`",
                      "every member has a unique name")
        names.add(member.name)
