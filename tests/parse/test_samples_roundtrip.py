"""Every sample is canonical, and survives text → nodes → text and text → JSON → text."""
import pytest

from sample_files import SAMPLES
from intentc import from_json, parse, print_module, to_json


def test_there_are_samples_covering_the_language():
    assert len(SAMPLES) >= 30


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_is_canonical_and_round_trips(path):
    text = path.read_text()
    module = parse(text, str(path))
    assert print_module(module) == text, "not canonical: run `intentc fmt --in-place`"
    assert parse(print_module(module)) == module
    via_json = from_json(to_json(module))
    assert via_json == module
    assert print_module(via_json) == text


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_starts_with_a_comment_saying_what_it_computes(path):
    first = path.read_text().lstrip().splitlines()[0]
    assert first.startswith("// ") and len(first) > 10
