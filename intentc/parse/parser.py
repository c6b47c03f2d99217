"""Text → KIR nodes: Lark LALR with the contextual lexer, `strict=True`, nodes built in the parse.

Syntax errors become diagnostics. When a module has one, each top-level item is parsed on
its own as well, so one run reports the first error of every broken kernel.
"""
from __future__ import annotations

import re
import threading
from importlib import resources

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.nodes import Module
from .builder import Builder

SPLIT_MARKER = re.compile(r"^// -----\s*$", re.MULTILINE)
_ITEM_START = re.compile(r"^(?:kernel|helper|enum)\b", re.MULTILINE)

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


def _parser() -> tuple[Lark, Builder]:
    cached = getattr(_local, "parser", None)
    if cached is None:
        builder = Builder()
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
    lark, builder = _parser()
    builder.reset(source, file)
    try:
        module = lark.parse(source)
    except UnexpectedInput as error:
        raise DiagnosticError(_recover(source, file, error), source) from None
    if builder.diagnostics:
        raise DiagnosticError(sorted(builder.diagnostics, key=_position), source)
    return module


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
    bounds = list(zip(starts, starts[1:] + [len(source)]))
    if bounds and bounds[0][0] > 0:
        bounds[0] = (0, bounds[0][1])
    for begin, end in bounds:
        padding = "\n" * source.count("\n", 0, begin)
        builder.reset(source, file)
        try:
            lark.parse(padding + source[begin:end])
        except UnexpectedInput as error:
            diagnostic = _syntax_diagnostic(error, file, lark, source)
            found[_position(diagnostic)] = diagnostic
        for diagnostic in builder.diagnostics:
            found.setdefault(_position(diagnostic), diagnostic)
    if not found:
        diagnostic = _syntax_diagnostic(first, file, lark, source)
        found[_position(diagnostic)] = diagnostic
    return sorted(found.values(), key=_position)


def _syntax_diagnostic(error: UnexpectedInput, file: str, lark: Lark, source: str) -> Diagnostic:
    if isinstance(error, UnexpectedCharacters):
        char = error.char if error.char not in "\n\r" else "end of line"
        return Diagnostic("E0002", f"unexpected character `{char}`", error.line, error.column, file,
                          _expected_hint(error.allowed, lark))
    token = getattr(error, "token", None)
    if isinstance(error, UnexpectedEOF) or token is None or token.type == "$END":
        line, col = _end_position(source)
        return Diagnostic("E0003", "unexpected end of input", line, col, file,
                          _expected_hint(getattr(error, "expected", ()), lark) or "a `}` may be missing")
    assert isinstance(error, UnexpectedToken)
    return Diagnostic("E0001", f"unexpected {_describe_token(token)}", token.line, token.column, file,
                      _expected_hint(error.expected, lark))


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
        words = words[:8] + ["..."]
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
