"""Keeps `//` comments through a parse so that the formatter loses none of them.

Each comment is anchored to the line of the code it documents: the first line after it that
holds code, or its own line when code stands before it (a trailing comment). The node that
starts on that line (an op, a region label, a kernel) or the `}` that closes a block there
claims it; the printer writes comments above what claimed them.
"""
from __future__ import annotations

from collections import defaultdict


class CommentBinder:
    def __init__(self, source: str):
        self._lines = source.split("\n")
        self._pending: dict[int, list[str]] = defaultdict(list)
        self._next_code: dict[int, int] = {}

    def add(self, token) -> None:
        line = token.line
        before = self._lines[line - 1][: token.column - 1] if line <= len(self._lines) else ""
        anchor = line if before.strip() else self._next_code_line(line)
        self._pending[anchor].append(token.value[2:].strip())

    def _next_code_line(self, line: int) -> int:
        anchor = self._next_code.get(line)
        if anchor is None:
            anchor = line + 1
            while anchor <= len(self._lines):
                text = self._lines[anchor - 1].strip()
                if text and not text.startswith("//"):
                    break
                anchor += 1
            self._next_code[line] = anchor
        return anchor

    def take(self, line: int) -> tuple[str, ...]:
        if not self._pending:
            return ()
        return tuple(self._pending.pop(line, ()))

    def take_rest(self) -> tuple[str, ...]:
        rest = tuple(text for line in sorted(self._pending) for text in self._pending[line])
        self._pending.clear()
        return rest
