"""Property tests: generated modules round-trip through text and JSON."""
from hypothesis import HealthCheck, given, settings

from intentc import from_json, parse, print_module, to_json

from kir_strategies import modules

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(modules)
def test_print_then_parse_gives_the_same_module(module):
    text = print_module(module)
    reparsed = parse(text)
    assert reparsed == module
    assert print_module(reparsed) == text  # stable, comments included


@SETTINGS
@given(modules)
def test_json_round_trip_gives_the_same_module_and_text(module):
    back = from_json(to_json(module))
    assert back == module
    assert print_module(back) == print_module(module)
