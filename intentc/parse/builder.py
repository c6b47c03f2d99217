"""Builds frozen KIR nodes inside the LALR parse (a Lark Transformer run as parser callbacks).

Semantic problems a parser can see without types (an unknown op, an unknown or excluded
dtype, a repeated attribute) are collected as diagnostics and parsing goes on, so one run
reports all of them.
"""
from __future__ import annotations

import difflib
import json
import re

from lark import Token, Transformer

from ..diagnostics import Diagnostic
from ..ir.nodes import (
    EnumDecl, EnumMember, Helper, Kernel, Keyword, Loc, Module, Op, OperandGroup, Param,
    Region, SymbolRef,
)
from ..ir.optable import all_ops
from ..ir.types import (
    DTYPES, EXCLUDED_DTYPES, BufferType, ConstexprType, EnumType, RecordField, RecordType,
    TensorType, TupleType, ViewType,
)
from .comments import CommentBinder
from .literals import OUT_OF_RANGE_HINT, float_value, int_value, out_of_range_message

_SCALARS = {name: TensorType(dtype=name) for name in DTYPES}
_DIRECTIONS = ("in", "out", "inout")
_EXTENT = re.compile(r"0x[0-9a-fA-F]+|-?[0-9]+|%[A-Za-z0-9_.$]+")
# Extents are separated by commas that the pattern requires, so a run of digits can be split
# one way only: without them, `[9999…9x]` backtracks exponentially (the fuzzer found it).
_SHAPED = re.compile(
    r"(tensor|view|buffer)<\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*\["
    rf"\s*((?:(?:{_EXTENT.pattern})(?:\s*,\s*(?:{_EXTENT.pattern}))*)?)\s*\]\s*"
    r"(?:,([A-Za-z_ ,\t\n]*))?>"
)
# Types are immutable, and the same type text recurs on most lines of a kernel.
_SHAPED_CACHE: dict[str, object] = {}
_ATTR_WORDS = {"true": True, "false": False, "inf": float("inf"), "nan": float("nan")}


class _Bare:
    """A lone NAME where a type or an attribute keyword may stand; its consumer decides."""
    __slots__ = ("token",)

    def __init__(self, token: Token):
        self.token = token


class _Part(tuple):
    """A tagged piece of an op (`operands`, `group`, `attrs`, `types`, `region`)."""


def _part(tag: str, payload) -> _Part:
    return _Part((tag, payload))


class Builder(Transformer):
    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self.reset("", "<input>")

    def reset(self, source: str, file: str) -> None:
        self.file = file
        self.diagnostics: list[Diagnostic] = []
        self.comments = CommentBinder(source)

    # ---- diagnostics -----------------------------------------------------------------
    def _error(self, token: Token, code: str, message: str, hint: str = "") -> None:
        self.diagnostics.append(Diagnostic(code, message, token.line, token.column, self.file, hint))

    # ---- items -----------------------------------------------------------------------
    # Each callback unpacks Lark's children and builds through a `*_node` method, which the
    # hand-written parser of well-formed text (`fast.py`) calls too: one construction of each
    # node, whichever parser read it.
    def start(self, items):
        return self.module_node(items)

    def module_node(self, items) -> Module:
        return Module(items=tuple(items), end_comments=self.comments.take_rest())

    def kernel(self, children):
        name, params, *ops, rbrace = children
        return self.kernel_node(name.value[1:], name.line, name.column, params, ops, rbrace.line)

    def kernel_node(self, name: str, line: int, col: int, params, ops, end_line: int) -> Kernel:
        return Kernel(name=name, params=params, body=tuple(ops), loc=_loc(line, col),
                      comments=self.comments.take(line), end_comments=self.comments.take(end_line))

    def helper(self, children):
        name, params, *rest = children
        result_types = rest.pop(0) if isinstance(rest[0], tuple) else ()
        rbrace = rest.pop()
        return self.helper_node(name.value[1:], name.line, name.column, params, result_types, rest, rbrace.line)

    def helper_node(self, name: str, line: int, col: int, params, result_types, ops, end_line: int) -> Helper:
        return Helper(name=name, params=params, result_types=result_types, body=tuple(ops), loc=_loc(line, col),
                      comments=self.comments.take(line), end_comments=self.comments.take(end_line))

    def enum_decl(self, children):
        name, *members = children
        return self.enum_node(name.value[1:], name.line, name.column, members)

    def enum_node(self, name: str, line: int, col: int, members) -> EnumDecl:
        return EnumDecl(name=name, members=tuple(members), loc=_loc(line, col), comments=self.comments.take(line))

    def enum_member(self, children):
        """A member is its name (§2: the integer behind it is no canonical fact); an `= N`
        written as the Python surface's IntEnum convenience is accepted and not kept."""
        name, *value = children
        if value:
            self._number(value[0], int_value, 0)        # still a well-formed literal (E0017)
        return member_node(name.value, name.line, name.column)

    def params(self, children):
        return tuple(children)

    def param(self, children):
        value, type_ = children
        return param_node(value.value[1:], value.line, value.column, self._require_type(type_))

    # ---- ops -------------------------------------------------------------------------
    def op(self, children):
        first = children[0]
        if first.type == "RESULTS":
            results = results_of(first.value)
            name_token = children[1]
            parts = children[2:]
        else:
            results = ()
            name_token = first
            parts = children[1:]
        fields = {"operands": (), "groups": [], "attributes": {}, "result_types": (), "regions": []}
        for tag, payload in parts:
            if tag == "group":
                fields["groups"].append(payload)
            elif tag == "region":
                fields["regions"].append(payload)
            else:
                fields[tag] = payload
        name, registered = self._op_name(name_token)
        return self.op_node(first.line, first.column, results, name, registered, fields["operands"],
                            tuple(fields["groups"]), fields["attributes"], fields["result_types"],
                            tuple(fields["regions"]))

    def op_node(self, line: int, col: int, results, name: str, registered: bool, operands, groups, attributes,
                result_types, regions) -> Op:
        # The grammar already guarantees every field's type, and ops are most of a module, so
        # they skip re-validation (JSON input is validated in full; tests check both agree).
        return _construct(Op, {
            "loc": _loc(line, col), "comments": self.comments.take(line), "name": name,
            "results": results, "operands": operands, "groups": groups, "attributes": attributes,
            "result_types": result_types, "regions": regions, "registered": registered})

    def _op_name(self, token: Token) -> tuple[str, bool]:
        if token.type == "STRING":
            return self._string(token), False
        name = token.value
        if name not in all_ops():
            close = difflib.get_close_matches(name, all_ops(), n=3)
            hint = "did you mean " + " or ".join(f"`{c}`" for c in close) + "?" if close else \
                'write an op the table does not know in the generic form `"name" ...`'
            self._error(token, "E0010", f"unknown op `{name}`", hint)
        return name, True

    def op_name(self, children):
        return children[0]

    def operands(self, children):
        return _part("operands", tuple(v.value[1:] for v in children))

    def group(self, children):
        head = children[0]
        if head.type == "GROUP":
            return _part("group", group_of(head.value))
        return _part("group", group_node(head.value[:-1], tuple(v.value[1:] for v in children[1:])))

    def attr_dict(self, children):
        attributes: dict = {}
        for token, value in children:
            if token.value in attributes:
                self._error(token, "E0014", f"attribute `{token.value}` given twice",
                            "give each attribute once")
            attributes[token.value] = value
        return _part("attributes", attributes)

    def attr(self, children):
        token, value = children
        return token, self._attr_value(value)

    def attr_list(self, children):
        return [self._attr_value(c) for c in children]

    def types(self, children):
        return _part("result_types", children[0])

    def type_list(self, children):
        return tuple(self._require_type(c) for c in children)

    def region(self, children):
        label, *rest = children
        args = rest.pop(0) if rest and isinstance(rest[0], tuple) else ()
        rbrace = rest.pop()
        return _part("region", self.region_node(label.value[1:], label.line, label.column, args, rest, rbrace.line))

    def region_node(self, label: str, line: int, col: int, args, ops, end_line: int) -> Region:
        return Region(label=label, args=args, ops=tuple(ops), loc=_loc(line, col), comments=self.comments.take(line),
                      end_comments=self.comments.take(end_line))

    def region_args(self, children):
        return children[0]

    # ---- attribute values ------------------------------------------------------------
    def _attr_value(self, value):
        if isinstance(value, _Bare):
            return attr_word(value.token.value)
        kind = getattr(value, "type", None)
        if kind is not None:
            if kind == "INT":
                return self._number(value, int_value, 0)
            if kind == "FLOAT":
                return self._number(value, float_value, 0.0)
            if kind == "NEG_INF":
                return float("-inf")
            if kind == "STRING":
                return self._string(value)
            if kind == "SYMBOL":
                return symbol_ref(value.value)
        return value

    def _number(self, token: Token, convert, stand_in):
        value = convert(token.value)
        if value is None:
            self._error(token, "E0017", out_of_range_message(token.value), OUT_OF_RANGE_HINT)
            return stand_in
        return value

    def _string(self, token: Token) -> str:
        try:
            return json.loads(token.value)
        except json.JSONDecodeError:
            self._error(token, "E0013", "malformed string literal",
                        'use JSON escapes: \\", \\\\, \\n, \\t, \\uXXXX')
            return token.value[1:-1]

    # ---- types -----------------------------------------------------------------------
    def _require_type(self, value):
        if isinstance(value, _Bare):
            return _SCALARS[self._dtype(value.token)]
        return value

    def _dtype(self, token) -> str:
        name = token.value
        if name in _SCALARS:
            return name
        if name in ("tuple", "record", "enum"):
            self._error(token, "E0019", f"`{name}` is not an element type: elements are scalar dtypes (spec §1)",
                        "tuples and records are SSA values, enums constexpr-only; give a scalar dtype")
        elif name in EXCLUDED_DTYPES:
            self._error(token, "E0012", f"`{name}` is not an element type (spec §1)",
                        "keep packed data in a u8/u16/u32 carrier and unpack it with shifts and masks; "
                        "FP4 belongs to scaled_contract")
        else:
            close = difflib.get_close_matches(name, DTYPES, n=1)
            self._error(token, "E0011", f"unknown type `{name}`",
                        f"did you mean `{close[0]}`?" if close else "see docs/kir.md, Types")
        return "f32"

    def named_type(self, children):
        token = children[0]
        return _SCALARS.get(token.value) or _Bare(token)

    def shaped_type(self, children):
        token = children[0]
        cached = _SHAPED_CACHE.get(token.value)
        if cached is not None:
            return cached
        built = self._shaped(token)
        if built is not None:
            _SHAPED_CACHE[token.value] = built
            return built
        return TensorType(dtype="f32")

    def _shaped(self, token: Token):
        """Parse `tensor<D, [e, ...]>`, `buffer<D, [...]>` or `view<D, [...], dir[, noalias]>`."""
        match = _SHAPED.fullmatch(token.value)
        if match is None:
            self._error(token, "E0016", f"malformed type `{' '.join(token.value.split())}`",
                        "write tensor<D, [e, ...]>, buffer<D, [e, ...]> or view<D, [e, ...], in|out|inout[, noalias]> "
                        "with extents that are integers or %names")
            return None
        kind, dtype_text, shape_text, flags_text = match.groups()
        flags_text = flags_text.strip() if flags_text else None
        dtype_token = Token("NAME", dtype_text, line=token.line, column=token.column + match.start(2))
        errors = len(self.diagnostics)
        dtype = self._dtype(dtype_token)
        shape = tuple(self._extent(token, e) for e in _EXTENT.findall(shape_text))
        flags = [f.strip() for f in flags_text.split(",")] if flags_text else []
        if kind == "view":
            built = self._view(token, dtype, shape, flags)
        elif flags:
            self._error(token, "E0016", f"`{kind}` types take no `{flags_text.strip()}`",
                        f"write {kind}<D, [e, ...]>")
            built = None
        else:
            built = (TensorType if kind == "tensor" else BufferType)(dtype=dtype, shape=shape)
        return built if len(self.diagnostics) == errors else None

    def _extent(self, token: Token, text: str):
        return text[1:] if text[0] == "%" else self._number(Token("INT", text, line=token.line, column=token.column),
                                                            int_value, 0)

    def _view(self, token: Token, dtype: str, shape, flags: list[str]):
        direction, *rest = flags or [""]
        if direction not in _DIRECTIONS:
            self._error(token, "E0015", f"unknown view direction `{direction}`" if direction else
                        "a view needs a direction", "a view is `in`, `out` or `inout` (spec §8)")
        for flag in rest:
            if flag != "noalias":
                self._error(token, "E0015", f"unknown view flag `{flag}`", "the only flag is `noalias`")
        return ViewType(dtype=dtype, shape=shape, direction=direction if direction in _DIRECTIONS else "in",
                        noalias=bool(rest))

    def tuple_type(self, children):
        return TupleType(elements=children[0] if children else ())

    def record_type(self, children):
        return RecordType(fields=tuple(children))

    def record_field(self, children):
        name, type_ = children
        return RecordField(name=name.value, type=self._require_type(type_))

    def enum_type(self, children):
        return EnumType(name=children[0].value[1:])

    def constexpr_type(self, children):
        return ConstexprType(inner=self._require_type(children[0]))



def attr_word(word: str):
    """A bare word standing as an attribute value that names no dtype: `true`, `false`,
    `inf` and `nan` are values, any other word a keyword."""
    return _ATTR_WORDS[word] if word in _ATTR_WORDS else Keyword(name=word)


def symbol_ref(text: str) -> SymbolRef:
    """The attribute value of a SYMBOL token (`@helper`, `@Mode.fast`)."""
    return SymbolRef(name=text[1:])


def results_of(text: str) -> tuple[str, ...]:
    """The names of a RESULTS token (`%a, %b =`)."""
    return tuple(r.strip()[1:] for r in text[:-1].split(","))


def group_of(text: str) -> OperandGroup:
    """The operand group of a GROUP token (`index(%i, %j)`)."""
    key, _, inner = text[:-1].partition("(")
    return group_node(key, tuple(v.strip()[1:] for v in inner.split(",")) if inner.strip() else ())


def group_node(key: str, values: tuple[str, ...]) -> OperandGroup:
    return OperandGroup(key=key.strip(), values=values)


def member_node(name: str, line: int, col: int) -> EnumMember:
    return EnumMember(name=name, loc=_loc(line, col))


def param_node(name: str, line: int, col: int, type_) -> Param:
    return Param(name=name, type=type_, loc=_loc(line, col))


def _loc(line: int, col: int) -> Loc:
    return _construct(Loc, {"line": line, "col": col})


_ALL_FIELDS_SET = {Op: set(Op.model_fields), Loc: set(Loc.model_fields)}


def _construct(cls, fields: dict):
    """What `model_construct` does, for a dict that already holds every field in order:
    ops and locations are most of a module, and this is several times cheaper."""
    node = cls.__new__(cls)
    object.__setattr__(node, "__dict__", fields)
    # Shared per class: pydantic copies this set before it ever changes one (model_copy).
    object.__setattr__(node, "__pydantic_fields_set__", _ALL_FIELDS_SET[cls])
    object.__setattr__(node, "__pydantic_extra__", None)
    object.__setattr__(node, "__pydantic_private__", None)
    return node
