"""Malformed input gives located diagnostics with a code and a caret, never a traceback."""
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sample_files import SAMPLES
from intentc import DiagnosticError, parse, print_module

CASES = [
    # (source, code, line, col)
    ("kernel @k() {\n  %a = add %x,, %y : f32\n}\n", "E0001", 2, 15),
    ("kernel @k() {\n  %a = add %x $ : f32\n}\n", "E0002", 2, 15),
    ("kernel @k() {\n  %a = add %x : f32\n", "E0003", 2, 20),
    ("kernel @k() {\n  %a = ad %x : f32\n}\n", "E0010", 2, 8),
    ("kernel @k(%x: f33) {\n}\n", "E0011", 1, 15),
    ("kernel @k(%x: view<i4, [4], in>) {\n}\n", "E0012", 1, 20),
    ('kernel @k() {\n  %a = "x\\q" : f32\n}\n', "E0013", 2, 8),
    ("kernel @k() {\n  %a = constant {value = 1, value = 2} : f32\n}\n", "E0014", 2, 29),
    ("kernel @k(%x: view<f32, [4], up>) {\n}\n", "E0015", 1, 15),
    ("kernel @k(%x: tensor<f32, [4,]>) {\n}\n", "E0016", 1, 15),
]


@pytest.mark.parametrize("source, code, line, col", CASES, ids=[c[1] for c in CASES])
def test_diagnostic_has_code_location_and_caret(source, code, line, col):
    with pytest.raises(DiagnosticError) as caught:
        parse(source, "bad.kir")
    first = caught.value.diagnostics[0]
    assert (first.code, first.line, first.col) == (code, line, col)
    rendered = caught.value.render()
    assert rendered.startswith(f"bad.kir:{line}:{col}: error[{code}]: ")
    source_line, caret_line = rendered.splitlines()[1:3]
    assert source_line.endswith(source.split("\n")[line - 1])
    assert caret_line.index("^") - caret_line.index("|") - 2 == col - 1


def test_one_run_reports_an_error_in_each_broken_kernel():
    source = ("kernel @a() {\n  %x = add %p,, %q : f32\n}\n\n"
              "kernel @b() {\n  %y = mul %p : f32\n}\n\n"
              "kernel @c() {\n  %z = frob %p : f32\n}\n")
    with pytest.raises(DiagnosticError) as caught:
        parse(source)
    assert [(d.code, d.line) for d in caught.value.diagnostics] == [("E0001", 2), ("E0010", 10)]


def test_unknown_op_suggests_the_closest_names():
    with pytest.raises(DiagnosticError) as caught:
        parse("kernel @k() {\n  %a = reduec %x : f32\n}\n")
    assert "`reduce`" in caught.value.diagnostics[0].hint


def _mutations():
    text = st.sampled_from(SAMPLES).map(lambda p: p.read_text())
    pieces = st.sampled_from(["%", "{", "}", "(", ")", ",", ":", "=", "<", ">", "[", "]", "^",
                              "@", '"', "//", "\n", "add", "tensor<", "-inf", "0x", "i4", "é", "\x85"])
    return st.tuples(text, st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 6), pieces),
                                    min_size=1, max_size=4))


def _apply(text: str, edits) -> str:
    for position, delete, piece in edits:
        at = position % (len(text) + 1)
        text = text[:at] + piece + text[at + delete:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations())
def test_mutated_samples_give_diagnostics_or_round_trip(case):
    source = _apply(*case)
    try:
        module = parse(source, "mutant.kir")
    except DiagnosticError as error:
        assert error.diagnostics
        for diagnostic in error.diagnostics:
            assert re.fullmatch(r"E\d{4}", diagnostic.code)
            assert 1 <= diagnostic.line <= source.count("\n") + 1
        assert error.render().startswith("mutant.kir:")
        return
    text = print_module(module)
    assert parse(text) == module
    assert print_module(parse(text)) == text


@pytest.mark.parametrize("char", ["\u2028", "\u0085", "\x0c", "\x1e", "\x01"])
def test_a_line_separator_in_the_source_keeps_the_diagnostic_three_lines(char):
    """Found by fuzzing: a raw U+2028 in the message and the excerpt split the rendered
    diagnostic for any reader that splits lines the Unicode way (Python's splitlines)."""
    source = f"kernel @k() {{\n  paralle{char}l %M {{\n}}\n"
    with pytest.raises(DiagnosticError) as caught:
        parse(source, "u.kir")
    rendered = caught.value.render().splitlines()
    assert rendered[0].startswith("u.kir:2:10: error[E0002]: unexpected character `U+"), rendered
    assert rendered[1].endswith("paralle\ufffdl %M {") and rendered[2].index("^") == rendered[1].index("\ufffd")
