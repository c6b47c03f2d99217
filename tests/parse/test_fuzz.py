"""A bounded run of tools/fuzz.py (the long runs are `python tools/fuzz.py --inputs 100000`):
mutated samples and grammar derivations through parse, verify, print, JSON and LLVM, with no
internal error."""
import importlib.util
import io
import sys

from sample_files import ROOT


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("intentc_fuzz_tool", ROOT / "tools" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: its dataclasses look their module up in sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_bounded_fuzz_run_finds_no_internal_error(tmp_path):
    fuzz = _fuzz_module()
    log = io.StringIO()
    tally = fuzz.fuzz(count=300, seconds=40, seed=17, out=tmp_path, report=1e9, grammar_share=0.2, log=log)
    crashes = [path.with_suffix(".txt").read_text() for path in tally.failures]
    assert tally.outcomes["internal_error"] == 0, crashes[:3]
    # The run reached every stage: inputs that fail to parse, fail to verify, and compile.
    assert {"diagnostics", "rejected", "compiled"} <= set(tally.outcomes), tally.outcomes
    assert tally.inputs == sum(tally.outcomes.values())


def test_the_grammar_generator_derives_inputs_that_parse():
    import random
    fuzz = _fuzz_module()
    samples = [p.read_text() for p in sorted((ROOT / "ir_samples").glob("*.kir"))]
    generator = fuzz.GrammarGenerator(samples, random.Random(3))
    checker = fuzz.Checker(compile_llvm=False)
    outcomes = {checker.check(generator.input()) for _ in range(200)}
    assert outcomes & {"rejected", "verified"}, outcomes
