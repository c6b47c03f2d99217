"""Text → KIR nodes: Lark LALR with the contextual lexer, `strict=True`, nodes built in the parse.

Well-formed text is read by a hand-written parser of the same grammar first (`fast.py`, the
same nodes several times faster); anything it is unsure of goes to Lark, whose diagnostics
are the only ones. Syntax errors become diagnostics. When a module has one, each top-level
item is parsed on its own as well, so one run reports the first error of every broken kernel.
"""
from __future__ import annotations

import re
import threading
from importlib import resources

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.nodes import Module
from .brackets import CLOSERS, MAX_NESTING, describe, line_col, scan, too_deep
from .builder import Builder
from .fast import Unsure, parse_well_formed

SPLIT_MARKER = re.compile(r"^// -----\s*$", re.MULTILINE)
_ITEM_START = re.compile(r"^(?:kernel|helper|enum)\b", re.MULTILINE)
_STRUCTURED_ELEMENT = re.compile(r"(tensor|view|buffer)<\s*(tuple|record|enum)\b")

_TERMINAL_WORDS = {
    "VALUE": "a value (`%name`)", "RESULTS": "results (`%r =`)", "SYMBOL": "a symbol (`@name`)",
    "LABEL": "a block label (`^name`)", "GROUP_OPEN": "an operand group (`index(...)`)",
    "GROUP": "an operand group (`index(...)`)", "SHAPED_TYPE": "a type (`tensor<...>`)",
    "NAME": "a name", "INT": "an integer", "FLOAT": "a float", "NEG_INF": "`-inf`",
    "STRING": "a string", "RBRACE": "`}`", "$END": "end of input",
}
_local = threading.local()


def _grammar_text() -> str:
    return resources.files("intentc.grammar").joinpath("kir.lark").read_text()


def _builder() -> Builder:
    builder = getattr(_local, "builder", None)
    if builder is None:
        builder = _local.builder = Builder()
    return builder


def _parser() -> tuple[Lark, Builder]:
    cached = getattr(_local, "parser", None)
    if cached is None:
        builder = _builder()
        lark = Lark(
            _grammar_text(), parser="lalr", lexer="contextual", strict=True,
            transformer=builder, lexer_callbacks={"COMMENT": lambda tok: builder.comments.add(tok)},
            cache=True, **_accelerator(),
        )
        cached = _local.parser = (lark, builder)
    return cached


def _accelerator() -> dict:
    """Use lark-cython's compiled lexer and parser loop when it is installed (about 1.5x)."""
    try:
        import lark_cython
    except ImportError:
        return {}
    return {"_plugins": lark_cython.plugins}


def parse(source: str, file: str = "<input>") -> Module:
    """Parse KIR text into a Module, or raise DiagnosticError with every problem found."""
    _check_nesting(source, file)
    builder = _builder()
    builder.reset(source, file)
    try:
        return parse_well_formed(source, builder)
    except (Unsure, RecursionError):    # Lark's LALR stack needs no Python stack for nesting
        pass
    return _lark_parse(source, file)


def parse_with_lark(source: str, file: str = "<input>") -> Module:
    """`parse` by Lark alone: what the hand-written parser must agree with, trivia included
    (`tests/parse/test_fast_parse.py`, and `tools/fuzz.py` on every input it fuzzes)."""
    _check_nesting(source, file)
    return _lark_parse(source, file)


def _lark_parse(source: str, file: str) -> Module:
    lark, builder = _parser()
    builder.reset(source, file)
    try:
        module = lark.parse(source)
    except UnexpectedInput as error:
        raise DiagnosticError(_recover(source, file, error), source) from None
    if builder.diagnostics:
        raise DiagnosticError(sorted(builder.diagnostics, key=_position), source)
    return module


def _check_nesting(source: str, file: str) -> None:
    opener = too_deep(source)
    if opener is not None:
        line, col = line_col(source, opener.offset)
        raise DiagnosticError([Diagnostic(
            "E0018", f"brackets nest more than {MAX_NESTING} deep", line, col, file,
            f"KIR allows at most {MAX_NESTING} nested brackets (regions, attribute lists, types); "
            "move deep logic into a helper")], source)


def split_input(source: str) -> list[tuple[int, str]]:
    """Split at `// -----` lines into (first line, chunk) pairs, keeping line numbers true."""
    chunks, line = [], 1
    for piece in SPLIT_MARKER.split(source):
        chunks.append((line, "\n" * (line - 1) + piece))
        line += piece.count("\n")
    return chunks


def _recover(source: str, file: str, first: UnexpectedInput) -> list[Diagnostic]:
    """Parse each top-level item alone to report the first error of every broken one."""
    lark, builder = _parser()
    found: dict[tuple[int, int], Diagnostic] = {}
    starts = [m.start() for m in _ITEM_START.finditer(source)] or [0]
    bounds = list(zip(starts, [*starts[1:], len(source)]))
    if bounds and bounds[0][0] > 0:
        bounds[0] = (0, bounds[0][1])
    for begin, end in bounds:
        item = "\n" * source.count("\n", 0, begin) + source[begin:end]
        builder.reset(source, file)
        try:
            lark.parse(item)
        except UnexpectedInput as error:
            diagnostic = _syntax_diagnostic(error, file, lark, item)
            found[_position(diagnostic)] = diagnostic
        for diagnostic in builder.diagnostics:
            found.setdefault(_position(diagnostic), diagnostic)
    if not found:
        diagnostic = _syntax_diagnostic(first, file, lark, source)
        found[_position(diagnostic)] = diagnostic
    return sorted(found.values(), key=_position)


def _syntax_diagnostic(error: UnexpectedInput, file: str, lark: Lark, text: str) -> Diagnostic:
    """The diagnostic of a syntax error in `text` (the whole source, or one item of it)."""
    if isinstance(error, UnexpectedCharacters):
        char = error.char if error.char not in "\n\r" else "end of line"
        if char != "end of line" and not char.isprintable():    # a line separator, a control character
            char = f"U+{ord(char):04X}"
        return Diagnostic("E0002", f"unexpected character `{char}`", error.line, error.column, file,
                          _expected_hint(error.allowed, lark))
    token = getattr(error, "token", None)
    if isinstance(error, UnexpectedEOF) or token is None or token.type == "$END":
        structure = scan(text)
        line, col = _end_position(text)
        unclosed = f": {describe(text, structure.unclosed())}" if structure.open_at_end else ""
        return Diagnostic("E0003", f"unexpected end of input{unclosed}", line, col, file,
                          _expected_hint(getattr(error, "expected", ()), lark) or "a `}` may be missing")
    assert isinstance(error, UnexpectedToken)
    element = _structured_element(text, token.start_pos)
    if element is not None:
        return _structured_element_diagnostic(element, text, file)
    hint = _expected_hint(error.expected, lark)
    return Diagnostic("E0001", f"unexpected {_describe_token(token)}{_open_bracket_note(text, token, hint)}",
                      token.line, token.column, file, hint)


def _open_bracket_note(text: str, token: Token, hint: str) -> str:
    """Name the innermost open bracket when its closer is what the parser wanted, or when a
    closer of another kind stands where it should be closed."""
    open_here = scan(text[:token.start_pos]).open_at_end
    if not open_here:
        return ""
    closer = CLOSERS[open_here[-1].char]
    wanted = f"`{closer}`" in hint or (token.value in CLOSERS.values() and token.value != closer)
    return f" ({describe(text, open_here[-1])})" if wanted else ""


def _structured_element(text: str, offset: int) -> re.Match | None:
    """`tensor<record<...` and the like: the error at the inner `<` is really the rule that a
    tensor, buffer or view element is a scalar dtype."""
    for match in _STRUCTURED_ELEMENT.finditer(text, max(0, offset - 8), offset + 16):
        if match.start() <= offset < match.end():
            return match
    return None


def _structured_element_diagnostic(match: re.Match, text: str, file: str) -> Diagnostic:
    shaped, element = match.group(1), match.group(2)
    line, col = line_col(text, match.start(2))
    why = ("an enum is constexpr-only and never a runtime element (spec §1)" if element == "enum" else
           f"a {element} is an SSA value, never the element of a tensor, buffer or view (spec §1)")
    return Diagnostic("E0019", f"`{shaped}` elements are scalar dtypes, not `{element}`: {why}", line, col, file,
                      f"give the {shaped} a scalar dtype; keep a {element} in SSA values, or one {shaped} "
                      f"per component" if element != "enum" else "pass the enum as a constexpr parameter")


def _end_position(source: str) -> tuple[int, int]:
    lines = source.rstrip("\n").split("\n")
    return len(lines), len(lines[-1]) + 1


def _describe_token(token: Token) -> str:
    if token.type in ("VALUE", "NAME", "SYMBOL", "LABEL", "INT", "FLOAT", "RESULTS", "GROUP_OPEN"):
        return f"{_TERMINAL_WORDS[token.type].split(' (')[0]} `{token.value}`"
    return f"`{token.value}`"


def _expected_hint(names, lark: Lark) -> str:
    words = sorted({_terminal_word(name, lark) for name in names or ()})
    if not words:
        return ""
    if len(words) > 8:
        words = [*words[:8], "..."]
    return "expected " + ", ".join(words)


def _terminal_word(name: str, lark: Lark) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    try:
        pattern = lark.get_terminal(name).pattern
    except KeyError:
        return name
    return f"`{pattern.value}`" if pattern.type == "str" else name


def _position(diagnostic: Diagnostic) -> tuple[int, int]:
    return diagnostic.line, diagnostic.col
