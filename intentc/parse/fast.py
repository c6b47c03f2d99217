"""A hand-written parser of well-formed KIR text: the nodes Lark's parse builds, several times
faster (every compile parses its whole file first; Lark's LALR loop and contextual lexer cost
about 5 µs a token, this about 1).

It reads only what it is sure of: the grammar of `grammar/kir.lark` by recursive descent,
over the same terminals (one pattern of Lark's in Lark's order of trial: a token it accepts
where the grammar allows it is the token Lark's contextual lexer finds there). At anything
else — a syntax error, an unknown op or dtype, a literal out of range, a malformed type or
string, a repeated attribute — it gives up (`Unsure`) and `parser.parse` runs Lark, whose
diagnostics stay the only ones. Nodes are built by the same `Builder` methods as Lark's
callbacks, which also take the comments at the same moments: a node is built once the token
after it is read (Lark reduces a rule on its lookahead token), and a comment is read with the
token that follows it (`tests/parse/test_fast_parse.py` compares both parsers, trivia too).
"""
from __future__ import annotations

import json
import re
from bisect import bisect_right

from lark import Token

from ..ir.nodes import Module
from ..ir.optable import all_ops
from .builder import (
    _SCALARS, _SHAPED_CACHE, Builder, attr_word, group_node, group_of, member_node, param_node, results_of,
    symbol_ref,
)
from .literals import float_value, int_value

# Lark's terminals (grammar/kir.lark); where two can match at one place (a word, a `%`, a
# number), in the order Lark's lexer tries them: priority, then longest pattern. Words are
# NAME: a keyword is a NAME where the grammar wants one.
_VALUE = r"%[A-Za-z0-9_.$]+"
_TOKEN = re.compile(rf"""[ \t\r\n]*(?:
  (?=[A-Za-z_])(?:
    (?P<GROUP>[A-Za-z_][A-Za-z0-9_]*\(\s*(?:{_VALUE}(?:\s*,\s*{_VALUE})*)?\s*\))
  | (?P<GROUP_OPEN>[A-Za-z_][A-Za-z0-9_]*\()
  | (?P<SHAPED_TYPE>(?:tensor|view|buffer)<[^<>]*>)
  | (?P<NAME>[A-Za-z_][A-Za-z0-9_.]*))
| (?=%)(?:
    (?P<RESULTS>{_VALUE}(?:\s*,\s*{_VALUE})*\s*=(?!=))
  | (?P<VALUE>{_VALUE}))
| (?P<PUNCT>[{{}}()\[\]<>,:=]|->)
| (?P<FLOAT>-?(?:[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+))
| (?P<INT>-?(?:0x[0-9a-fA-F]+|[0-9]+))
| (?P<SYMBOL>@[A-Za-z_][A-Za-z0-9_.$]*)
| (?P<LABEL>\^[A-Za-z0-9_.$]+)
| (?P<STRING>"(?:[^"\\\n]|\\.)*")
| (?P<COMMENT>//[^\n]*)
| (?P<NEG_INF>-inf)
| (?P<OTHER>[^ \t\r\n])
)""", re.VERBOSE)
# Words that start a type where the grammar wants one (elsewhere they are names)
_TYPE_KEYWORDS = ("tuple", "record", "enum", "constexpr")


class Unsure(Exception):
    """The text is not plainly well-formed: Lark parses it (and reports what is wrong)."""


def parse_well_formed(source: str, builder: Builder) -> Module:
    """The module of `source`, built through `builder` (reset for this source); raises Unsure."""
    module = _Reader(source, builder).module()
    if builder.diagnostics:
        raise Unsure
    return module


class _Reader:
    def __init__(self, source: str, builder: Builder):
        self.builder = builder
        self.source = source
        kinds: list[str] = []
        texts: list[str] = []
        starts: list[int] = []
        self.comments: list[tuple[int, int, str]] = []     # (index of the token after it, start, text)
        for match in _TOKEN.finditer(source):
            kind = match.lastgroup
            assert kind is not None
            text = match.group(kind)
            if kind == "COMMENT":
                self.comments.append((len(kinds), match.start(kind), text))
                continue
            if kind == "OTHER":
                raise Unsure
            kinds.append(text if kind == "PUNCT" else kind)
            texts.append(text)
            starts.append(match.start(kind))
        kinds.append("$END")
        texts.append("")
        starts.append(len(source))
        self.kinds, self.texts, self.starts = kinds, texts, starts
        self.at = 0
        self.comments_read = 0
        # the index of the token after the next comment not yet handed to the builder
        self.next_comment = self.comments[0][0] if self.comments else len(kinds)
        self.line_starts = [0, *(m.end() for m in re.finditer("\n", source))]

    # ---- tokens ----------------------------------------------------------------------
    def expect(self, kind: str) -> str:
        if self.kinds[self.at] != kind:
            raise Unsure
        self.at += 1
        return self.texts[self.at - 1]

    def accept(self, kind: str) -> bool:
        if self.kinds[self.at] == kind:
            self.at += 1
            return True
        return False

    def listed(self, item, closer: str) -> list:
        """`item ("," item)*` before the `closer` token (left for the caller), or nothing when
        the closer comes first."""
        if self.kinds[self.at] == closer:
            return []
        items = [item()]
        while self.accept(","):
            items.append(item())
        return items

    def position(self, index: int) -> tuple[int, int]:
        """The line and column of token `index` (1-based, as Lark counts them)."""
        return self._position_of(self.starts[index])

    def _position_of(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def lookahead_read(self) -> None:
        """Hand the builder the comments before the next token: what Lark's lexer has read
        when it reduces the rule that ends here."""
        if self.next_comment > self.at:
            return
        comments = self.comments
        while self.comments_read < len(comments) and comments[self.comments_read][0] <= self.at:
            _, start, text = comments[self.comments_read]
            self.builder.comments.add(Token("COMMENT", text, start, *self._position_of(start)))
            self.comments_read += 1
        self.next_comment = comments[self.comments_read][0] if self.comments_read < len(comments) else len(self.kinds)

    # ---- items -----------------------------------------------------------------------
    def module(self) -> Module:
        items = []
        while self.kinds[self.at] != "$END":
            word = self.expect("NAME")
            if word == "kernel":
                items.append(self.kernel())
            elif word == "helper":
                items.append(self.helper())
            elif word == "enum":
                items.append(self.enum_decl())
            else:
                raise Unsure
        self.lookahead_read()
        return self.builder.module_node(items)

    def kernel(self):
        name_at = self.at
        name = self.expect("SYMBOL")
        params = self.params()
        self.expect("{")
        ops, end_line = self.block()
        return self.builder.kernel_node(name[1:], *self.position(name_at), params, ops, end_line)

    def helper(self):
        name_at = self.at
        name = self.expect("SYMBOL")
        params = self.params()
        self.expect("->")
        self.expect("(")
        result_types = () if self.kinds[self.at] == ")" else self.type_list()
        self.expect(")")
        self.expect("{")
        ops, end_line = self.block()
        return self.builder.helper_node(name[1:], *self.position(name_at), params, result_types, ops, end_line)

    def enum_decl(self):
        name_at = self.at
        name = self.expect("SYMBOL")
        self.expect("{")
        members = [self.enum_member()]
        while self.accept(","):
            members.append(self.enum_member())
        self.expect("}")
        self.lookahead_read()
        return self.builder.enum_node(name[1:], *self.position(name_at), members)

    def enum_member(self):
        at = self.at
        name = self.expect("NAME")
        if self.accept("=") and int_value(self.expect("INT")) is None:
            raise Unsure
        return member_node(name, *self.position(at))

    def params(self) -> tuple:
        """`( params )`: a kernel's, a helper's or a region's."""
        self.expect("(")
        params = self.listed(self.param, ")")
        self.expect(")")
        return tuple(params)

    def param(self):
        at = self.at
        name = self.expect("VALUE")
        self.expect(":")
        return param_node(name[1:], *self.position(at), self.type_())

    def block(self) -> tuple[list, int]:
        """Ops up to the `}` that closes their block, and that brace's line."""
        ops = []
        kinds = self.kinds
        while kinds[self.at] != "}":
            ops.append(self.op())
        end = self.at
        self.at += 1
        self.lookahead_read()
        return ops, self.position(end)[0]

    # ---- ops -------------------------------------------------------------------------
    def op(self):
        kinds, texts = self.kinds, self.texts
        first = self.at
        results: tuple[str, ...] = ()
        if kinds[first] == "RESULTS":
            results = results_of(texts[first])
            self.at += 1
        name, registered = self.op_name()
        operands: tuple[str, ...] = ()
        if kinds[self.at] == "VALUE":
            operands = self.values()
        groups = []
        while kinds[self.at] in ("GROUP", "GROUP_OPEN"):
            groups.append(self.group())
        attributes: dict = {}
        if kinds[self.at] == "{" and kinds[self.at + 1] == "NAME":
            attributes = self.attr_dict()
        result_types: tuple = ()
        if self.accept(":"):
            result_types = self.type_list()
        regions = []
        while kinds[self.at] == "{":
            regions.append(self.region())
        self.lookahead_read()
        return self.builder.op_node(*self.position(first), results, name, registered, operands, tuple(groups),
                                    attributes, result_types, tuple(regions))

    def op_name(self) -> tuple[str, bool]:
        kind, text = self.kinds[self.at], self.texts[self.at]
        self.at += 1
        if kind == "NAME" and text in all_ops():
            return text, True
        if kind == "STRING":
            return _string(text), False
        raise Unsure

    def values(self) -> tuple[str, ...]:
        values = [self.expect("VALUE")[1:]]
        while self.accept(","):
            values.append(self.expect("VALUE")[1:])
        return tuple(values)

    def group(self):
        kind, text = self.kinds[self.at], self.texts[self.at]
        self.at += 1
        if kind == "GROUP":
            return group_of(text)
        values = () if self.kinds[self.at] == ")" else self.values()
        self.expect(")")
        return group_node(text[:-1], values)

    def attr_dict(self) -> dict:
        self.expect("{")
        attributes: dict = {}
        while True:
            key = self.expect("NAME")
            self.expect("=")
            if key in attributes:
                raise Unsure
            attributes[key] = self.attr_value()
            if not self.accept(","):
                break
        self.expect("}")
        return attributes

    def attr_value(self):
        kind, text = self.kinds[self.at], self.texts[self.at]
        if kind == "NAME" and text not in _TYPE_KEYWORDS:
            self.at += 1
            return _SCALARS.get(text) or attr_word(text)
        if kind == "INT" or kind == "FLOAT":
            self.at += 1
            value = (int_value if kind == "INT" else float_value)(text)
            if value is None:
                raise Unsure
            return value
        if kind == "NEG_INF":
            self.at += 1
            return float("-inf")
        if kind == "STRING":
            self.at += 1
            return _string(text)
        if kind == "SYMBOL":
            self.at += 1
            return symbol_ref(text)
        if kind == "[":
            self.at += 1
            items = self.listed(self.attr_value, "]")
            self.expect("]")
            return items
        return self.type_()

    def region(self):
        self.expect("{")
        label_at = self.at
        label = self.expect("LABEL")
        args = self.params() if self.kinds[self.at] == "(" else ()
        self.expect(":")
        ops, end_line = self.block()
        return self.builder.region_node(label[1:], *self.position(label_at), args, ops, end_line)

    # ---- types -----------------------------------------------------------------------
    def type_list(self) -> tuple:
        types = [self.type_()]
        while self.accept(","):
            types.append(self.type_())
        return tuple(types)

    def type_(self):
        at = self.at
        kind, text = self.kinds[at], self.texts[at]
        self.at += 1
        if kind == "SHAPED_TYPE":
            cached = _SHAPED_CACHE.get(text)
            return cached if cached is not None else self.builder.shaped_type([self.token(at)])
        if kind != "NAME":
            raise Unsure
        if text in _SCALARS:
            return _SCALARS[text]
        if text not in _TYPE_KEYWORDS:
            raise Unsure
        self.expect("<")
        built = self._keyword_type(text)
        self.expect(">")
        return built

    def _keyword_type(self, keyword: str):
        """What follows `tuple<`, `record<`, `enum<` or `constexpr<`, up to its `>`."""
        builder = self.builder
        if keyword == "tuple":
            return builder.tuple_type([self.type_list()] if self.kinds[self.at] != ">" else [])
        if keyword == "record":
            return builder.record_type(self.listed(self._record_field, ">"))
        if keyword == "enum":
            return builder.enum_type([Token("SYMBOL", self.expect("SYMBOL"))])
        return builder.constexpr_type([self.type_()])

    def _record_field(self):
        name = self.expect("NAME")
        self.expect(":")
        return self.builder.record_field([Token("NAME", name), self.type_()])

    def token(self, index: int) -> Token:
        return Token(self.kinds[index], self.texts[index], self.starts[index], *self.position(index))


def _string(text: str) -> str:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise Unsure from None

