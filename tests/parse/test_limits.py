"""The parser's limits (issue 17): literals beyond every dtype's range and nesting beyond
MAX_NESTING are diagnostics; everything within the limits survives every stage."""
from __future__ import annotations

import json

import numpy as np
import pytest

import intentc
from intentc import DiagnosticError, from_json, parse, print_module, to_json
from intentc.driver import compile_kernel
from intentc.parse.brackets import MAX_NESTING
from intentc.verify import verify


def _kernel(body: str, params: str = "%y: view<f32, [4], out>") -> str:
    return f"kernel @k({params}) {{\n{body}\n}}\n"


def _codes(source: str) -> list[str]:
    with pytest.raises(DiagnosticError) as caught:
        parse(source, "limits.kir")
    return [d.code for d in caught.value.diagnostics]


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "1.8e308", "1" + "0" * 309, "-" + "9" * 5000,
                                     "0x" + "f" * 4000, "0x1" + "0" * 256])
def test_literals_beyond_every_dtype_are_rejected_while_parsing(literal):
    assert _codes(_kernel(f"  %c = constant {{value = {literal}}} : f64")) == ["E0017"]


def test_huge_extents_and_enum_values_are_rejected_while_parsing():
    assert _codes(_kernel("", "%y: view<f32, [" + "7" * 5000 + "], out>")) == ["E0017"]
    assert _codes("enum @E {a = " + "1" * 4400 + "}\n") == ["E0017"]


def test_the_largest_finite_literals_parse_and_the_verifier_judges_them_per_dtype():
    largest_int = 2 ** 1024 - 1                              # rounds past f64's maximum
    module = parse(_kernel(f"  %a = constant {{value = 1.7976931348623157e308}} : f64\n"
                           f"  %b = constant {{value = 1e39}} : f32\n"
                           f"  %c = constant {{value = {largest_int}}} : f64\n"
                           f"  %d = constant {{value = 007}} : i32"))
    assert [(d.code, d.line) for d in verify(module)] == [("E202", 3), ("E202", 4)]
    assert module.items[0].body[3].attributes["value"] == 7


def test_infinities_are_written_as_words_and_json_stays_strict():
    source = _kernel("  %a = constant {value = inf} : f32\n  %b = constant {value = -inf} : f32\n"
                     "  %c = constant {value = nan} : f32")
    module = parse(source)
    text = to_json(module)
    strict = json.loads(text, parse_constant=lambda word: pytest.fail(f"bare {word} in JSON"))
    values = [op["attributes"]["value"] for op in strict["module"]["items"][0]["body"]]
    assert values == [{"float": "inf"}, {"float": "-inf"}, {"float": "nan"}]
    assert from_json(text) == module and print_module(from_json(text)) == source


def test_json_written_before_strictness_still_reads():
    legacy = to_json(parse(_kernel("  %a = constant {value = 2.0} : f32"))).replace("2.0", "Infinity")
    assert from_json(legacy).items[0].body[0].attributes["value"] == float("inf")


@pytest.mark.parametrize("number", ["1e400", "1" * 5000])
def test_json_numbers_beyond_every_dtype_are_diagnostics(number):
    with pytest.raises(DiagnosticError) as caught:
        from_json('{"kir_json": 1, "module": {"items": [], "x": ' + number + "}}")
    assert [d.code for d in caught.value.diagnostics] == ["E0017"]


def _nested_ifs(depth: int) -> str:
    lines = ["kernel @k(%y: view<f32, [4], out>, %b: bool) {", "  %c = constant {value = 1.0} : f32",
             "  %z = constant {value = 0} : index"]
    for level in range(depth):
        lines += ["if %b {", f"^t{level}:"]
    return "\n".join(lines + ["write %y, %c index(%z)"] + ["}"] * (depth + 1)) + "\n"


def _deepest_allowed() -> int:
    depth = 1
    while True:
        try:
            parse(_nested_ifs(depth + 1))
        except DiagnosticError as error:
            assert [d.code for d in error.diagnostics] == ["E0018"]
            return depth
        depth += 1


def test_nesting_beyond_the_limit_is_a_diagnostic_at_the_bracket_that_passes_it():
    deepest = _deepest_allowed()
    assert deepest >= MAX_NESTING - 4
    with pytest.raises(DiagnosticError) as caught:
        parse(_nested_ifs(300), "deep.kir")
    (diagnostic,) = caught.value.diagnostics
    assert (diagnostic.code, diagnostic.file) == ("E0018", "deep.kir")
    assert diagnostic.line == 3 + 2 * (MAX_NESTING - 1) + 1     # the `if` whose `{` is bracket 65


def test_every_stage_handles_the_deepest_module_the_parser_allows():
    source = _nested_ifs(_deepest_allowed())
    module = parse(source)
    assert verify(module) == []
    assert print_module(module) == print_module(parse(print_module(module)))
    assert parse(print_module(module)) == module
    assert from_json(to_json(module)) == module
    assert "define" in compile_kernel(source, "k", "llvm", None).artifacts["kernel.ll"]
    out = intentc.run(module, "k", {"y": np.zeros(4, np.float32), "b": np.bool_(True)})
    assert out["y"][0] == 1.0


def test_deeply_nested_json_is_a_diagnostic():
    op = '{"name": "yield"}'
    for level in range(200):
        op = f'{{"name": "if", "operands": ["b"], "regions": [{{"label": "t{level}", "ops": [{op}]}}]}}'
    document = f'{{"kir_json": 1, "module": {{"items": [{{"kind": "kernel", "name": "k", "body": [{op}]}}]}}}}'
    with pytest.raises(DiagnosticError) as caught:
        from_json(document)
    assert [d.code for d in caught.value.diagnostics] == ["E0018"]


def test_equality_of_deep_modules_needs_no_deep_stack():
    import sys
    module = parse(_nested_ifs(40))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(120)      # `==` walks a work list: the depth of the module does not matter
    try:
        assert module == parse(_nested_ifs(40))
        assert module != parse(_nested_ifs(39))
    finally:
        sys.setrecursionlimit(limit)


def test_a_long_digit_run_in_a_malformed_shape_is_rejected_in_linear_time():
    """The shape pattern once backtracked exponentially on `[999…9x]` (found by tools/fuzz.py)."""
    import time
    started = time.process_time()
    for digits in (60, 5000, 100_000):
        assert _codes(_kernel("", f"%x: tensor<f32, [{'9' * digits}x]>")) == ["E0016"]
    assert time.process_time() - started < 10
