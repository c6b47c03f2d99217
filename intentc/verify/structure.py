"""Generic checks of every op against its op-table entry: operands, groups, attributes,
regions and result counts. Nothing here knows a particular op; the table drives it all."""
from __future__ import annotations

from pydantic import BaseModel

from ..ir.nodes import Keyword, Op, SymbolRef
from ..ir.optable import AttrSpec, OpDef
from .context import Context

# Attributes that people reach for but the language deliberately does not have: each gets
# its own code and a hint instead of a plain "unknown attribute".
MISPLACED_ATTRS = {
    ("cast", "saturate"): ("E406", "saturating conversion is the separate op `saturating_cast`, not a mode of `cast`",
                           "write `saturating_cast %x : T` instead of `cast` with a flag"),
    ("cast", "saturating"): ("E406", "saturating conversion is the separate op `saturating_cast`, not a mode of `cast`",
                             "write `saturating_cast %x : T` instead of `cast` with a flag"),
    ("atomic_cas", "failure_order"): ("E802", "the CAS failure order is derived from `order`, never given",
                                      "drop `failure_order`: relaxed->relaxed, acquire->acquire, "
                                      "release->relaxed, acq_rel->acquire"),
}
# Ops whose result count has its own rule and code.
RESULT_COUNT_CODES = {
    "assume_in_bounds": ("E910", "`assume_in_bounds` is a statement and has no result",
                         "call it without `%r =` and keep using the original index"),
}

_ARITY_WORDS = {"1": "exactly one value", "?": "at most one value", "*": "any number of values",
                "+": "at least one value"}


def check_structure(ctx: Context, op: Op, opdef: OpDef) -> bool:
    """Report every mismatch with the table; True when the op has the table's shape."""
    ok = _operands(ctx, op, opdef)
    if op.groups or opdef.groups:
        ok = _groups(ctx, op, opdef) and ok
    if op.attributes or opdef.attrs:
        ok = _attributes(ctx, op, opdef) and ok
    if op.regions or opdef.regions:
        ok = _regions(ctx, op, opdef) and ok
    return _results(ctx, op, opdef) and ok


def _operands(ctx, op: Op, opdef: OpDef) -> bool:
    fixed = len(opdef.fixed_operands)
    count = len(op.operands)
    if count == fixed or (opdef.variadic and count > fixed):
        return True
    wanted = f"at least {fixed}" if opdef.variadic else str(fixed)
    names = ", ".join("%" + n.rstrip("*") for n in opdef.operands) or "none"
    ctx.error("E0031", op, f"`{op.name}` takes {wanted} operand(s), got {count}",
              f"the operands of `{op.name}` are: {names}", opdef.section)
    return False


def _groups(ctx, op: Op, opdef: OpDef) -> bool:
    ok, seen = True, set()
    for group in op.groups:
        if group.key not in opdef.groups or group.key in seen:
            allowed = ", ".join(f"{k}(...)" for k in opdef.groups) or "none"
            what = "repeated" if group.key in seen else "unknown"
            ctx.error("E0032", op, f"{what} operand group `{group.key}(...)` on `{op.name}`",
                      f"groups of `{op.name}`: {allowed}; give each at most once", opdef.section)
            ok = False
        seen.add(group.key)
    for key, arity in opdef.groups.items():
        values = op.group(key)
        count = -1 if values is None else len(values)
        if not _arity_ok(arity, count):
            ctx.error("E0033", op, f"`{key}(...)` of `{op.name}` takes {_ARITY_WORDS[arity]}, got "
                      f"{'none' if count < 0 else count}",
                      f"write `{key}(%v)` as the op table says", opdef.section)
            ok = False
    return ok


def _arity_ok(arity: str, count: int) -> bool:
    if arity == "1":
        return count == 1
    if arity == "?":
        return count in (-1, 1)
    if arity == "+":
        return count >= 1
    return True


def _attributes(ctx, op: Op, opdef: OpDef) -> bool:
    ok = True
    for name, value in op.attributes.items():
        spec = opdef.attrs.get(name)
        if spec is None:
            ok = False
            _unknown_attribute(ctx, op, opdef, name)
        elif not _kind_ok(spec, value):
            ok = False
            ctx.error("E0036", op, f"attribute `{name}` of `{op.name}` must be {_kind_words(spec)}",
                      f"write `{name} = {_kind_example(spec)}`", opdef.section)
        elif spec.choices and value.name not in spec.choices:
            ok = False
            ctx.error("E0037", op, f"`{name} = {value.name}` is not allowed on `{op.name}`",
                      f"choose one of: {', '.join(spec.choices)}", opdef.section)
    for name, spec in opdef.attrs.items():
        if spec.required and name not in op.attributes:
            ok = False
            ctx.error("E0034", op, f"`{op.name}` requires the attribute `{name}`",
                      f"add `{name} = {_kind_example(spec)}` ({spec.doc or spec.kind})", opdef.section)
    return ok


def _unknown_attribute(ctx, op: Op, opdef: OpDef, name: str) -> None:
    special = MISPLACED_ATTRS.get((op.name, name))
    if special:
        code, message, hint = special
        ctx.error(code, op, message, hint)
        return
    known = ", ".join(opdef.attrs) or "none"
    ctx.error("E0035", op, f"`{op.name}` has no attribute `{name}`",
              f"attributes of `{op.name}`: {known}", opdef.section)


def _kind_ok(spec: AttrSpec, value) -> bool:
    kind = spec.kind
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (bool, int, float, SymbolRef))
    if kind == "keyword":
        return isinstance(value, Keyword)
    if kind == "ints":
        return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if kind == "type":
        return isinstance(value, BaseModel) and not isinstance(value, (Keyword, SymbolRef))
    if kind == "symbol":
        return isinstance(value, SymbolRef)
    return isinstance(value, str)


def _kind_words(spec: AttrSpec) -> str:
    return {"bool": "a constexpr bool (`true` or `false`)", "int": "an integer",
            "number": "a number, bool or enum member", "keyword": "a keyword",
            "ints": "a list of integers", "type": "a type", "symbol": "a symbol (`@name`)",
            "string": "a string"}[spec.kind]


def _kind_example(spec: AttrSpec) -> str:
    if spec.choices:
        return spec.choices[0]
    return {"bool": "false", "int": "0", "number": "0", "keyword": "name", "ints": "[0]",
            "type": "f32", "symbol": "@name", "string": '""'}[spec.kind]


def _regions(ctx, op: Op, opdef: OpDef) -> bool:
    low, high = opdef.region_range
    count = len(op.regions)
    if low <= count <= high:
        return True
    wanted = str(low) if low == high else f"{low} to {high}"
    names = ", ".join(opdef.regions) or "none"
    ctx.error("E0038", op, f"`{op.name}` takes {wanted} region(s), got {count}",
              f"regions of `{op.name}`: {names}", opdef.section)
    return False


def _results(ctx, op: Op, opdef: OpDef) -> bool:
    names, types = len(op.results), len(op.result_types)
    expected = opdef.results
    if expected is not None and (names, types) != (expected, expected):
        special = RESULT_COUNT_CODES.get(op.name)
        if special and expected == 0:
            ctx.error(special[0], op, special[1], special[2])
        else:
            ctx.error("E0039", op, f"`{op.name}` has {expected} result(s); {names} name(s) and "
                      f"{types} type(s) are written", f"write {expected} result name(s) and type(s)",
                      opdef.section)
        return False
    if expected is None and names != types:
        ctx.error("E0039", op, f"{names} result name(s) but {types} result type(s) on `{op.name}`",
                  "write one type per result", opdef.section)
        return False
    return True
