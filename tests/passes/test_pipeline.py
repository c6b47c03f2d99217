"""Pipeline strings: parsing, canonical printing, options, and diagnostics for mistakes."""
from __future__ import annotations

import pytest

from intentc.passes import DEFAULT_PIPELINE, PipelineError, lookup_pass, parse_pipeline, pass_names, print_pipeline
from intentc.passes.base import PASS_MODULES


def test_default_pipeline_round_trips_with_every_option_spelled_out():
    text = print_pipeline(parse_pipeline(DEFAULT_PIPELINE))
    assert text == ("canonicalize,cse,fusion-legality{contract-add=true multiply-reduce=true fma=true},"
                    "online-reduction{segment=64},dce,address-width")
    assert print_pipeline(parse_pipeline(text)) == text


def test_options_parse_with_spaces_or_commas():
    (fusion, online) = parse_pipeline(" fusion-legality{fma=false, contract-add=0} , online-reduction{segment=16}")
    assert (fusion.fma, fusion.contract_add, fusion.multiply_reduce) == (False, False, True)
    assert online.segment == 16


def test_every_registered_pass_is_documented_and_named():
    assert set(pass_names()) == set(PASS_MODULES)
    for name in pass_names():
        cls = lookup_pass(name)
        assert cls.name == name and cls.summary


def test_empty_pipeline_is_no_passes():
    assert parse_pipeline("") == []


@pytest.mark.parametrize("text, code, col", [
    ("cse,bogus", "E0070", 5),
    ("cse,,dce", "E0071", 5),
    ("cse dce", "E0071", 5),
    ("online-reduction{segment=8", "E0071", 27),
    ("online-reduction{segment}", "E0071", 25),
    ("online-reduction{width=8}", "E0072", 18),
    ("fusion-legality{fma=maybe}", "E0073", 21),
    ("online-reduction{segment=0}", "E0073", 1),
    ("fusion-legality{fma=true fma=false}", "E0074", 26),
])
def test_mistakes_are_located_diagnostics(text, code, col):
    with pytest.raises(PipelineError) as caught:
        parse_pipeline(text)
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.line, diagnostic.col, diagnostic.file) == (code, 1, col, "<pipeline>")
    assert "^" in caught.value.render()
