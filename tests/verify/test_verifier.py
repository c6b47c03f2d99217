"""The verifier against the annotated cases in tests/verify/cases (MLIR's expected-error
convention, the same machinery as `intentc verify --verify-diagnostics`), the ir_samples,
the diagnostics reference and robustness on broken input."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import intentc
from intentc.cli.common import Chunk
from intentc.cli.verify import diagnostics_of
from intentc.parse import parse, split_input
from intentc.verify import CODES, verify
from intentc.verify.expectations import expectations, unmet

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted((Path(__file__).parent / "cases").glob("*.kir"))
SAMPLES = sorted((ROOT / "ir_samples").glob("*.kir"))
DOC = ROOT / "docs" / "diagnostics.md"


def _chunks():
    for path in CASES:
        for first_line, text in split_input(path.read_text()):
            yield pytest.param(path, text, id=f"{path.stem}:{first_line}")


ALL_CHUNKS = list(_chunks())


@pytest.mark.parametrize("path, text", ALL_CHUNKS)
def test_case_meets_its_expectations(path, text):
    found = diagnostics_of(Chunk(str(path), text))
    assert unmet(text, found, str(path)) == []


def test_every_verifier_code_is_exercised_by_a_rejected_case():
    produced = set()
    for param in ALL_CHUNKS:
        path, text = param.values
        produced |= {d.code for d in diagnostics_of(Chunk(str(path), text))}
    assert set(CODES) - produced == set()


def test_every_case_file_has_accepted_and_rejected_inputs():
    for path in CASES:
        pieces = [text for _, text in split_input(path.read_text())]
        clean = [t for t in pieces if not expectations(t)]
        assert clean and len(clean) < len(pieces), path.name
        assert all(verify(parse(t)) == [] for t in clean), path.name


def test_every_diagnostic_names_a_section_and_has_a_hint():
    for param in ALL_CHUNKS:
        path, text = param.values
        for diagnostic in diagnostics_of(Chunk(str(path), text)):
            if diagnostic.code in CODES:
                assert re.search(r"\((spec §|docs/kir\.md|op table)", diagnostic.message), diagnostic
                assert diagnostic.hint, diagnostic


def test_ir_samples_exist_and_verify_cleanly():
    assert len(SAMPLES) >= 10
    failures = {p.name: [d.render() for d in verify(parse(p.read_text(), p.name), p.name)] for p in SAMPLES}
    assert {name: f for name, f in failures.items() if f} == {}


def test_diagnostics_doc_lists_every_code():
    text = DOC.read_text()
    documented = set(re.findall(r"^### (E\d+)", text, re.MULTILINE))
    package = Path(intentc.__file__).parent
    parser_sources = [*(package / "parse").glob("*.py"), *(package / "serialize").glob("*.py")]
    parser_codes = {code for path in parser_sources for code in re.findall(r'"(E00\d\d)"', path.read_text())}
    assert len(parser_codes) >= 13
    assert documented == set(CODES) | parser_codes


def test_doc_examples_produce_their_codes():
    text = DOC.read_text()
    sections = re.split(r"^### ", text, flags=re.MULTILINE)[1:]
    checked = 0
    for section in sections:
        code = section.split()[0]
        match = re.search(r"```kir\n(.*?)```", section, re.DOTALL)
        if match and code in CODES:
            found = {d.code for d in diagnostics_of(Chunk("doc", match.group(1)))}
            assert code in found, (code, found)
            checked += 1
    assert checked == len(CODES)


@pytest.mark.parametrize("path, text", ALL_CHUNKS[::3])
def test_broken_variants_give_diagnostics_not_tracebacks(path, text):
    """Drop each line in turn: whatever remains parses to diagnostics or verifies, never crashes."""
    lines = text.splitlines()
    for dropped in range(len(lines)):
        variant = "\n".join(lines[:dropped] + lines[dropped + 1:])
        found = diagnostics_of(Chunk("variant", variant))
        assert all(d.code and d.line >= 1 for d in found)


def test_expectation_offsets():
    source = "a\n// expected-error@+1 {{x}}\nb\nc // expected-error {{y}}\n// expected-error@-2 {{z}}\n" \
             "// expected-error@1 {{w}}\n"
    assert [(e.line, e.text) for e in expectations(source)] == [(3, "x"), (4, "y"), (3, "z"), (1, "w")]
