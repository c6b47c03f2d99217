"""The respelling fingerprint: one hash for compile requests that differ only in spelling.

Build farms resend the same request in other spellings: JSON with other whitespace or key
order, KIR re-indented or with other comments. The cache key (`key.py`) already makes them
one entry, but only after a worker has parsed the KIR. The fingerprint lets the service
answer such a repeat without a parse: it hashes the request's JSON in a canonical form with
the KIR in *spelling-free* form, and the service remembers `fingerprint → key` for every
request whose text parsed and verified.

Two requests with one fingerprint must compile to the same thing. So `spelling_free` only
removes what the lexer (grammar/kir.lark) ignores, and gives up (None: no fingerprint, the
request takes the ordinary path) wherever that is not plainly so:

- every run of whitespace (` `, tab, newline) becomes one space: the lexer ignores them
  between tokens, and the tokens that may hold whitespace (a result list `%a, %b =`, an
  operand group `f(%a, %b)`, a shaped type `tensor<f32, [%N]>`) accept any run of it;
- comments are removed, unless one sits where it could split such a token (next to `,`,
  `(`, `[`, `<`, `)`, `]`, `>` or `=`, or inside `<...>`): there the comment ends the token
  and the text may mean something else (or nothing) without it;
- a string literal (`"`) or a carriage return gives up: whitespace inside strings counts,
  and a shaped type's flags accept no carriage return.

Nothing here is trusted beyond that: the fingerprint only finds keys that the ordinary path
computed, and the entry it finds passes its seal as always.
"""
from __future__ import annotations

import hashlib
import json
import re

FINGERPRINT_TAG = b"intentc-request-fingerprint-1\n"
_WHITESPACE = re.compile(r"[ \t\n]+")
_COMMENT_RUN = re.compile(r"(?:[ \t\n]*//[^\n]*)+[ \t\n]*")
# Where a comment may end a token that could otherwise have spanned the whitespace it replaces.
_SPLITS_BEFORE = frozenset(",([<")
_SPLITS_AFTER = frozenset(",)]>=")


def request_fingerprint(body: bytes, max_source_chars: int) -> bytes | None:
    """The fingerprint of a JSON compile request, or None when it has none (not a JSON object
    with a string `source`, a duplicated member, a source over the limit, or KIR that
    `spelling_free` leaves alone)."""
    try:
        document = json.loads(body, object_pairs_hook=_object_without_duplicates)
    except ValueError:  # not UTF-8 / JSON, or a duplicated member
        return None
    source = document.get("source") if isinstance(document, dict) else None
    if not isinstance(source, str) or len(source) > max_source_chars:
        return None
    spelled = spelling_free(source)
    if spelled is None:
        return None
    try:
        canonical = json.dumps({**document, "source": spelled}, sort_keys=True, separators=(",", ":"),
                               allow_nan=False)
    except ValueError:  # a non-finite number
        return None
    return hashlib.sha256(FINGERPRINT_TAG + canonical.encode("ascii")).digest()


def spelling_free(source: str) -> str | None:
    """`source` without comments and with every whitespace run as one space, or None where
    that could change what the text means (see the module docstring)."""
    if '"' in source or "\r" in source:
        return None
    if "//" in source:
        if any(_comment_may_matter(source, run) for run in _COMMENT_RUN.finditer(source)):
            return None
        source = _COMMENT_RUN.sub(" ", source)
    return _WHITESPACE.sub(" ", source).strip(" ")


def _comment_may_matter(source: str, run: re.Match) -> bool:
    start, end = run.span()
    before = source[start - 1] if start > 0 else ""
    after = source[end] if end < len(source) else ""
    inside_angles = source.rfind("<", 0, start) > source.rfind(">", 0, start)
    return before in _SPLITS_BEFORE or after in _SPLITS_AFTER or inside_angles


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    document = dict(pairs)
    if len(document) != len(pairs):
        raise ValueError("a duplicated member")  # which one wins is the parser's choice: no fingerprint
    return document
