"""KIR nodes → canonical text.

One canonical form: two-space indentation, one op per line, attributes sorted by name,
scalars written as their dtype, comments above what they document. `print_module(parse(x))`
is stable, and `parse(print_module(n)) == n`.
"""
from __future__ import annotations

import json
import math

from ..ir.nodes import EnumDecl, Helper, Kernel, Keyword, Module, Op, Param, Region, SymbolRef
from ..ir.types import (
    BufferType, ConstexprType, EnumType, RecordType, TensorType, TupleType, ViewType,
)

INDENT = "  "


def print_module(module: Module) -> str:
    out: list[str] = []
    for index, item in enumerate(module.items):
        if index:
            out.append("")
        _item(item, out)
    if module.end_comments:
        if out:
            out.append("")
        _comments(module.end_comments, "", out)
    return "\n".join(out) + "\n" if out else ""


def print_op(op: Op) -> str:
    out: list[str] = []
    _op(op, "", out)
    return "\n".join(out)


def _item(item, out: list[str]) -> None:
    _comments(item.comments, "", out)
    if isinstance(item, EnumDecl):
        members = ", ".join(m.name for m in item.members)
        out.append(f"enum @{item.name} {{ {members} }}")
        return
    header = f"@{item.name}({_params(item.params)})"
    if isinstance(item, Kernel):
        out.append(f"kernel {header} {{")
    else:
        assert isinstance(item, Helper)
        out.append(f"helper {header} -> ({_types(item.result_types)}) {{")
    _block(item.body, item.end_comments, INDENT, out)
    out.append("}")


def _block(ops, end_comments, indent: str, out: list[str]) -> None:
    for op in ops:
        _op(op, indent, out)
    _comments(end_comments, indent, out)


def _comments(comments, indent: str, out: list[str]) -> None:
    out.extend(f"{indent}// {text}" if text else f"{indent}//" for text in comments)


def _op(op: Op, indent: str, out: list[str]) -> None:
    _comments(op.comments, indent, out)
    parts = [indent]
    if op.results:
        parts.append(", ".join(f"%{r}" for r in op.results) + " = ")
    parts.append(op.name if op.registered else json.dumps(op.name))
    if op.operands:
        parts.append(" " + ", ".join(f"%{v}" for v in op.operands))
    for group in op.groups:
        parts.append(f" {group.key}(" + ", ".join(f"%{v}" for v in group.values) + ")")
    if op.attributes:
        attrs = ", ".join(f"{k} = {attr_text(op.attributes[k])}" for k in sorted(op.attributes))
        parts.append(f" {{{attrs}}}")
    if op.result_types:
        parts.append(" : " + _types(op.result_types))
    if not op.regions:
        out.append("".join(parts))
        return
    parts.append(" {")
    out.append("".join(parts))
    for index, region in enumerate(op.regions):
        if index:
            out.append(f"{indent}}} {{")
        _region(region, indent, out)
    out.append(f"{indent}}}")


def _region(region: Region, indent: str, out: list[str]) -> None:
    _comments(region.comments, indent, out)
    args = f"({_params(region.args)})" if region.args else ""
    out.append(f"{indent}^{region.label}{args}:")
    _block(region.ops, region.end_comments, indent + INDENT, out)


def _params(params: tuple[Param, ...]) -> str:
    return ", ".join(f"%{p.name}: {type_text(p.type)}" for p in params)


def _types(types) -> str:
    return ", ".join(type_text(t) for t in types)


def _shape(shape) -> str:
    return "[" + ", ".join(str(e) if isinstance(e, int) else f"%{e}" for e in shape) + "]"


def type_text(type_) -> str:
    if isinstance(type_, TensorType):
        return type_.dtype if not type_.shape else f"tensor<{type_.dtype}, {_shape(type_.shape)}>"
    if isinstance(type_, ViewType):
        flags = ", noalias" if type_.noalias else ""
        return f"view<{type_.dtype}, {_shape(type_.shape)}, {type_.direction}{flags}>"
    if isinstance(type_, BufferType):
        return f"buffer<{type_.dtype}, {_shape(type_.shape)}>"
    if isinstance(type_, TupleType):
        return f"tuple<{_types(type_.elements)}>"
    if isinstance(type_, RecordType):
        return "record<" + ", ".join(f"{f.name}: {type_text(f.type)}" for f in type_.fields) + ">"
    if isinstance(type_, EnumType):
        return f"enum<@{type_.name}>"
    if isinstance(type_, ConstexprType):
        return f"constexpr<{type_text(type_.inner)}>"
    raise TypeError(f"not a KIR type: {type_!r}")


def attr_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Keyword):
        return value.name
    if isinstance(value, SymbolRef):
        return f"@{value.name}"
    if isinstance(value, list):
        return "[" + ", ".join(attr_text(v) for v in value) + "]"
    return type_text(value)


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)
