"""The hand-written parser of well-formed text (`intentc/parse/fast.py`) builds exactly Lark's
nodes, trivia included (locations, comments and which node claims each comment), and gives up
on whatever Lark rejects or reports."""
import importlib.util
import random
import sys

import pytest

from sample_files import ROOT
from intentc.diagnostics import DiagnosticError
from intentc.parse import parser
from intentc.parse.fast import Unsure, parse_well_formed

KIR_FILES = sorted(ROOT.glob("ir_samples/*.kir")) + sorted(ROOT.glob("tests/**/*.kir"))

# Where a comment lands depends on when each parser reads it: trailing comments after two ops
# on one line, regions and blocks closed on a comment's line, comments at the end.
TRIVIA_CASES = [
    "kernel @k(%x: f32) {\n  %a = neg %x : f32 %b = neg %a : f32  // after both\n  yield\n}\n",
    "// first\nkernel @k(%x: f32) {  // on the name's line\n  %a = neg %x : f32\n  // before the brace\n}"
    "  // on the brace's line\n// at the end\n",
    "kernel @k(%n: index) {\n  parallel %n { ^b(%i: index): %r = add %i, %i : index yield }  // one line\n"
    "  parallel %n {\n  ^c(%j: index):  // the label's\n    yield\n  } { ^d: yield }\n}\n",
    "kernel @k() {\n  %z = constant {value = 0.0} : f32  // zero\n  // dangling\n}\n// -----\n",
    "enum @Mode { fast, exact = 1 }  // members\nhelper @h(%x: f32) -> (f32) {\n  yield %x\n}\n",
    "kernel @k() {\n  %c = constant {value = -inf, flags = [true, nan, @Mode.fast, \"s\", 0x1F, 1e3]} : f32\n"
    "  %t = \"my.op\" %c : tuple<f32, record<a: f32, b: tensor<i8, [2, %N]>>, constexpr<enum<@Mode>>>\n}\n",
    "kernel @k(%x: f32) {\r\n  %a = neg %x  // CRLF\r\n  // its type\r\n    : f32\r\n}\r\n",
    "", "// a comment alone\n", "kernel @k(%x: tuple<>, %y: record<>) {}\nkernel @j() {\n}\n",
]


def _lark(text: str):
    try:
        return parser.parse_with_lark(text, "t.kir")
    except DiagnosticError:     # the fast parser must give up too
        return None


def _fast(text: str):
    builder = parser._builder()
    builder.reset(text, "t.kir")
    try:
        return parse_well_formed(text, builder)
    except Unsure:
        return None


def _dump(module) -> str:
    # `==` ignores trivia; the dump has every field, floats by repr (NaN, -0.0)
    return repr(module.model_dump())


@pytest.mark.parametrize("path", KIR_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_well_formed_file_parses_fast_to_lark_nodes(path):
    for _, text in parser.split_input(path.read_text()):
        if parser.too_deep(text):
            continue
        expected = _lark(text)
        if expected is not None:
            fast = _fast(text)
            assert fast is not None, "the fast parser gave up on well-formed text"
            assert _dump(fast) == _dump(expected)
        else:
            assert _fast(text) is None


@pytest.mark.parametrize("text", TRIVIA_CASES)
def test_trivia_land_where_lark_puts_them(text):
    expected = _lark(text)
    fast = _fast(text)
    assert (fast is None) == (expected is None)
    if expected is not None:
        assert _dump(fast) == _dump(expected)


def test_mutated_and_derived_inputs_parse_alike():
    """What the fast parser accepts, Lark accepts with the same nodes (tools/fuzz.py's
    mutations of every file and derivations of the grammar)."""
    outcomes = _differential(seed=11, count=400)
    assert outcomes["accepted"] > 50 and outcomes["gave_up"] > 50, outcomes


def _differential(seed: int, count: int) -> dict:
    spec = importlib.util.spec_from_file_location("intentc_fuzz_tool", ROOT / "tools" / "fuzz.py")
    fuzz = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fuzz
    spec.loader.exec_module(fuzz)
    samples = [path.read_text() for path in KIR_FILES]
    rng = random.Random(seed)
    mutator, generator = fuzz.Mutator(samples, rng), fuzz.GrammarGenerator(samples, rng)
    outcomes = {"accepted": 0, "gave_up": 0}
    for number in range(count):
        text = generator.input() if number % 5 == 0 else mutator.input()
        if parser.too_deep(text):
            continue
        fast = _fast(text)
        if fast is None:
            outcomes["gave_up"] += 1
            continue
        expected = _lark(text)
        assert expected is not None and _dump(fast) == _dump(expected), text
        outcomes["accepted"] += 1
    return outcomes

