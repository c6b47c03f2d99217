"""Syntax errors name the bracket left open, and a structured type in element position gets
the rule that forbids it (issue 17, issue 15 item 19)."""
import pytest

from intentc import DiagnosticError, parse


def _first(source: str):
    with pytest.raises(DiagnosticError) as caught:
        parse(source, "b.kir")
    return caught.value.diagnostics[0]


def test_an_unclosed_brace_is_named_with_where_it_opened():
    diagnostic = _first("kernel @k(%a: f32) {\n  %r = exp %a : f32\n")
    assert diagnostic.code == "E0003"
    assert "`{` opened at 1:20 is not closed" in diagnostic.message


def test_the_brace_a_misindented_closer_took_is_the_one_named():
    source = "kernel @k(%a: f32, %b: bool) {\n  if %b {\n  ^t:\n    %r = exp %a : f32\n\n}\n"
    diagnostic = _first(source)
    assert diagnostic.code == "E0003"
    assert "`{` opened at 2:9 is not closed" in diagnostic.message


def test_a_closer_of_the_wrong_kind_names_the_open_bracket():
    diagnostic = _first("kernel @k(%a: f32 {\n}\n")
    assert "`(` opened at 1:10 is not closed" in diagnostic.message


@pytest.mark.parametrize("type_text, element, column", [
    ("buffer<record<a: f32>, [4]>", "record", 22),
    ("view<tuple<f32, f32>, [4], in>", "tuple", 20),
    ("tensor<enum<@E>, [4]>", "enum", 22),
    ("tensor<record, [4]>", "record", 22),
])
def test_structured_types_in_element_position_get_the_rule(type_text, element, column):
    diagnostic = _first(f"kernel @k(%x: {type_text}) {{\n}}\n")
    assert (diagnostic.code, diagnostic.line, diagnostic.col) == ("E0019", 1, column)
    assert element in diagnostic.message and "spec §1" in diagnostic.message
