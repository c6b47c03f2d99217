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
- a string literal (`"`), or whitespace other than space, tab and newline (a carriage
  return, a form feed, Unicode spaces), gives up: whitespace inside strings counts, a shaped
  type's flags accept no carriage return, and the lexer ignores no other whitespace.

`request_fingerprint` also gives up on a source holding a lone surrogate (even in a comment:
the service refuses such text) and on a JSON object with a duplicated member.

Nothing here is trusted beyond that: the fingerprint only finds keys that the ordinary path
computed, and the entry it finds passes its seal as always.
"""
from __future__ import annotations

import hashlib
import json
import re

FINGERPRINT_TAG = b"intentc-request-fingerprint-1\n"
_COMMENT = re.compile(r"//[^\n]*")
# What str.split() splits at besides the lexer's ` `, tab and newline (carriage return
# included): a text holding one gets no fingerprint. (One substring search each is several
# times faster than a regular expression's character class.)
_OTHER_WHITESPACE = ("\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
                     + "\u2028\u2029\u202f\u205f\u3000")
_LEXER_WHITESPACE = " \t\n"
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
    if spelled is None or not _is_unicode(source):  # (the service refuses a lone surrogate, even in a comment)
        return None
    try:  # the other members as canonical JSON (one line), then the source as it is (no escaping)
        others = json.dumps({name: value for name, value in document.items() if name != "source"},
                            sort_keys=True, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a non-finite number
        return None
    text = others.encode("ascii") + b"\n" + spelled.encode("utf-8")
    return hashlib.sha256(FINGERPRINT_TAG + text).digest()


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def spelling_free(source: str) -> str | None:
    """`source` without comments and with every whitespace run as one space, or None where
    that could change what the text means (see the module docstring)."""
    if '"' in source or any(space in source for space in _OTHER_WHITESPACE):
        return None
    if "//" in source:
        if _a_comment_may_matter(source):
            return None
        source = _COMMENT.sub("", source)  # the newline that ends a comment stays
    return " ".join(source.split())  # (str.split's whitespace is the lexer's here: checked above)


def _a_comment_may_matter(source: str) -> bool:
    """Whether a run of comments (and whitespace) sits where removing it could join a token."""
    inside_angles, previous_end = False, 0
    for comment in _COMMENT.finditer(source):
        start, end = comment.span()
        last_open, last_close = source.rfind("<", previous_end, start), source.rfind(">", previous_end, start)
        if last_open != last_close:  # (both -1: no angle since the last comment, still as it was)
            inside_angles = last_open > last_close
        before = _skip_whitespace(source, start - 1, -1)
        continues_run = 0 < previous_end == before + 1  # the character before is the end of a comment
        after = _skip_whitespace(source, end, 1)
        if (inside_angles or (not continues_run and _character(source, before) in _SPLITS_BEFORE)
                or _character(source, after) in _SPLITS_AFTER):
            return True
        previous_end = end
    return False


def _skip_whitespace(source: str, index: int, step: int) -> int:
    while 0 <= index < len(source) and source[index] in _LEXER_WHITESPACE:
        index += step
    return index


def _character(source: str, index: int) -> str:
    return source[index] if 0 <= index < len(source) else ""


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    document = dict(pairs)
    if len(document) != len(pairs):
        raise ValueError("a duplicated member")  # which one wins is the parser's choice: no fingerprint
    return document
