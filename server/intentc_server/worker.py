"""What runs inside a compile worker process: a loop that answers jobs sent over a pipe.

Jobs: `prepare` (parse and verify the raw text; its canonical, comment-free form for the key)
and `compile` (the driver on that form). Replies are tuples:
`("ok", ...)`, `("diagnostics", [dict, ...])`, `("limit", message)` or `("error", traceback)`.
"""
from __future__ import annotations

import importlib
import os
import re
import traceback

INPUT_FILE = "<input>"
# Brackets, and the comments and string literals whose brackets do not nest anything (the
# lexer's spellings, grammar/kir.lark): only the brackets count.
_BRACKETS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[{}()\[\]]')


def serve(connection, plugins: tuple[str, ...]) -> None:
    for plugin in plugins:
        importlib.import_module(plugin)
    warm_up()
    connection.send(("ready", os.getpid()))
    while True:
        try:
            name, arguments = connection.recv()
        except (EOFError, OSError):
            return
        connection.send(run_job(name, arguments))


def run_job(name: str, arguments: tuple) -> tuple:
    try:
        return JOBS[name](*arguments)
    except RecursionError:
        return ("limit", "the input nests too deeply to compile")
    except Exception:
        return ("error", traceback.format_exc())


def prepare(source: str, max_nesting: int) -> tuple:
    from intentc.cache.key import key_text
    from intentc.diagnostics import DiagnosticError
    from intentc.parse import parse
    from intentc.printer import print_module
    from intentc.verify import verify

    depth = nesting_depth(source)
    if depth > max_nesting:
        return ("limit", f"brackets nest {depth} deep; the limit is {max_nesting}")
    try:
        module = parse(source, INPUT_FILE)
    except DiagnosticError as error:
        return _diagnostics(error.diagnostics)
    problems = verify(module, INPUT_FILE)
    if problems:
        return _diagnostics(problems)
    return ("ok", key_text(print_module(module)))


def compile_(text: str, kernel: str, target: str, arch: str | None, options: dict, specialization: dict) -> tuple:
    from intentc.diagnostics import DiagnosticError
    from intentc.driver import compile_kernel
    from intentc.options import CompileOptions, Specialization

    try:
        result = compile_kernel(text, kernel, target, arch, CompileOptions(**options),
                                Specialization(**specialization), INPUT_FILE)
    except DiagnosticError as error:
        return _diagnostics(error.diagnostics)
    return ("ok", result.artifacts, result.timings)


def nesting_depth(text: str) -> int:
    """How deep the brackets of the text nest (those in comments and strings do not count)."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(text):
        bracket = match.group()
        if bracket in "{([":
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in "})]":
            depth = max(0, depth - 1)
    return deepest


def _diagnostics(diagnostics) -> tuple:
    return ("diagnostics", [d.to_dict() for d in diagnostics])


def warm_up() -> None:
    """Import the compiler and build the parser once, before the first request waits for it."""
    prepare("kernel @warm_up() {\n}\n", 64)


JOBS = {"prepare": prepare, "compile": compile_}
