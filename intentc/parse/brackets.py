"""Bracket structure of KIR text, read before the grammar sees it.

Two uses: the nesting limit (every later stage walks nested regions, attribute lists and
types recursively, so the parser refuses text nested deeper than MAX_NESTING with a
diagnostic instead of letting a stage run out of stack), and naming the bracket that a
syntax error leaves open ("`{` opened at 3:12 is not closed").
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MAX_NESTING = 64
CLOSERS = {"{": "}", "[": "]", "(": ")", "<": ">"}
# Comments and strings hold no brackets; `->` (a helper's result arrow) is not a closer.
_TOKENS = re.compile(r'//[^\n]*|"(?:[^"\\\n]|\\.)*"|->|[{}\[\]()<>]')


@dataclass(frozen=True)
class Bracket:
    char: str
    offset: int


@dataclass(frozen=True)
class Structure:
    source: str
    open_at_end: tuple[Bracket, ...]  # openers never closed, outermost first
    closed_braces: list[tuple[int, int]]  # (opening, closing) offsets of matched braces

    def unclosed(self) -> Bracket | None:
        """The bracket a missing closer most likely belongs to: the last `{` closed by a `}`
        on a line indented differently (that `}` was meant for an outer brace), else the
        innermost bracket left open."""
        if not self.open_at_end:
            return None
        for opening, closing in reversed(self.closed_braces):
            closer_indent = _line_indent(self.source, closing)
            if closer_indent is not None and closer_indent != _line_indent(self.source, opening, anywhere=True):
                return Bracket("{", opening)
        return self.open_at_end[-1]


def too_deep(source: str, max_nesting: int = MAX_NESTING) -> Bracket | None:
    """The first opener past `max_nesting`, or None. Every parse asks, so this only counts."""
    depth = 0
    for match in _TOKENS.finditer(source):
        char = match.group()
        if char in CLOSERS:
            depth += 1
            if depth > max_nesting:
                return Bracket(char, match.start())
        elif len(char) == 1 and depth:
            depth -= 1
    return None


def scan(source: str) -> Structure:
    """The brackets left open and the braces closed: what a syntax error message names."""
    stack: list[Bracket] = []
    closed_braces = []
    for match in _TOKENS.finditer(source):
        char = match.group()
        if char in CLOSERS:
            stack.append(Bracket(char, match.start()))
        elif len(char) == 1 and stack:
            opener = stack.pop()
            if char == "}" == CLOSERS[opener.char]:
                closed_braces.append((opener.offset, match.start()))
    return Structure(source, tuple(stack), closed_braces)


def _line_indent(source: str, offset: int, anywhere: bool = False) -> int | None:
    """The indentation of the line holding `offset`; None when text precedes it there
    (unless `anywhere`): only a brace that starts its line says what it closes."""
    start = source.rfind("\n", 0, offset) + 1
    lead = source[start:offset]
    stripped = lead.lstrip(" \t")
    if stripped and not anywhere:
        return None
    return len(lead) - len(stripped)


def line_col(source: str, offset: int) -> tuple[int, int]:
    line = source.count("\n", 0, offset) + 1
    return line, offset - (source.rfind("\n", 0, offset) + 1) + 1


def describe(source: str, bracket: Bracket) -> str:
    line, col = line_col(source, bracket.offset)
    return f"`{bracket.char}` opened at {line}:{col} is not closed"
