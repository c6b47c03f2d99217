"""The respelling fingerprint (intentc/cache/respelling.py): requests that differ only in JSON
or KIR spelling share it, and two texts with one spelling-free form always prepare to the same
canonical text (or both fail), so the fingerprint never finds another module's entry."""
from __future__ import annotations

import json
import re

import pytest

from intentc.cache.respelling import request_fingerprint, spelling_free
from intentc_server.worker import prepare
from sample_files import ROOT, SAMPLES

MAX_NESTING, MAX_CHARS = 64, 1 << 20
SMALL_SAMPLE = ROOT / "ir_samples" / "row_softmax.kir"
INSERTIONS = ("// a comment, with (brackets] = and <angles>\n", "\n\t  ")


def prepared(text: str) -> tuple:
    """What the key is computed from: ("ok", canonical text), or the kind of refusal."""
    reply = prepare(text, MAX_NESTING)
    return reply if reply[0] == "ok" else (reply[0],)


def respelled(text: str) -> str:
    """Every whitespace run re-spelled, and a comment after every line that ends an op."""
    text = re.sub(r"[ \t]+", lambda run: " \t "[: 1 + len(run.group()) % 3], text)
    return "// respelled\n\n" + re.sub(r"\n", "   // noted\n\n", text)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda path: path.stem)
def test_a_respelled_sample_has_the_same_spelling_free_form_and_canonical_text(sample):
    text = sample.read_text()
    if spelling_free(text) is None:
        assert '"' in text  # string literals: no fingerprint (whitespace inside them counts)
        return
    other = respelled(text)
    assert spelling_free(other) == spelling_free(text)
    assert prepared(other) == prepared(text)


def test_every_single_insertion_that_keeps_the_form_keeps_the_meaning():
    """Insert a comment or whitespace at every position of a sample: whenever the spelling-free
    form stays the same, the prepared text does too (inside tokens the form changes)."""
    text = SMALL_SAMPLE.read_text()
    form, meaning = spelling_free(text), prepared(text)
    same_form = 0
    for position in range(len(text) + 1):
        for insertion in INSERTIONS:
            mutant = text[:position] + insertion + text[position:]
            if spelling_free(mutant) == form:
                same_form += 1
                assert prepared(mutant) == meaning, (position, insertion)
    assert same_form > 200  # most token boundaries take both insertions


@pytest.mark.parametrize("text", [
    "kernel @k() {\n  %a, // split\n %b = op\n}\n",              # a comment inside a result list
    "kernel @k() {\n  %a // split\n = op\n}\n",
    "kernel @k() {\n  %c = f(%a, // split\n %b)\n}\n",            # inside an operand group
    "kernel @k(%x: view<f32, // split\n [4], in>) {\n}\n",        # inside a shaped type
    "kernel @k(%x: view<f32, [4] // split\n , in>) {\n}\n",
    'kernel @k() {\n  %a = "op  name"\n}\n',                       # a string literal
    "kernel @k() {\r\n}\r\n",                                       # a carriage return
])
def test_comments_that_could_split_a_token_and_strings_have_no_spelling_free_form(text):
    assert spelling_free(text) is None


def test_the_fingerprint_ignores_json_spelling_and_sees_every_value():
    request = {"source": SMALL_SAMPLE.read_text(), "kernel": "row_softmax", "target": "kir",
               "specialization": {"extents": {"N": 128}}}
    compact = json.dumps(request, separators=(",", ":")).encode()
    spaced = json.dumps(dict(reversed(request.items())), indent=3).encode()
    source_respelled = json.dumps({**request, "source": respelled(request["source"])}).encode()
    other_extent = json.dumps({**request, "specialization": {"extents": {"N": 129}}}).encode()
    fingerprints = [request_fingerprint(body, MAX_CHARS) for body in (compact, spaced, source_respelled)]
    assert fingerprints[0] is not None and fingerprints.count(fingerprints[0]) == 3
    assert request_fingerprint(other_extent, MAX_CHARS) != fingerprints[0]
    assert request_fingerprint(compact, len(request["source"]) - 1) is None  # over the source limit
    assert request_fingerprint(b'{"source": "a", "source": "b"}', MAX_CHARS) is None  # duplicated member
    assert request_fingerprint(b'[1, 2]', MAX_CHARS) is None
    with_surrogate = json.dumps({**request, "source": "// \ud800\n" + request["source"]}).encode()
    assert request_fingerprint(with_surrogate, MAX_CHARS) is None  # the service refuses it: no respelling
    assert request_fingerprint(b'{"source": "x", "n": 1e999}', MAX_CHARS) is None


def test_every_other_whitespace_character_is_refused():
    """str.split() (which makes the spelling-free form) splits at exactly the lexer's whitespace
    and the characters refused up front."""
    others = [chr(code) for code in range(0x110000) if chr(code).isspace() and chr(code) not in " \t\n"]
    assert [spelling_free(f"kernel{space}@k() {{\n}}\n") for space in others] == [None] * len(others)
    assert spelling_free("kernel @k() {\n}\n") == "kernel @k() { }"
