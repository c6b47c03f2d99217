"""Mutated samples (tools/fuzz.py's mutator: deleted and inserted tokens, wrong dtypes,
operand counts, attribute values, huge extents, unicode names) through the command line:
`intentc verify`, and for what verifies `intentc compile --target ptx` and `intentc run` on
the sample's bundled inputs. Every answer is an exit code 0 or 1, and every error a
`file:line:col: error[CODE]: message` line with its source line and caret: never a
traceback, never an internal error (exit 3).

INTENTC_FUZZ_CLI_INPUTS=N runs N mutants (default a handful)."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import random
import re
import sys

import pytest

from intentc.cli import main
from sample_files import ROOT

INPUTS = int(os.environ.get("INTENTC_FUZZ_CLI_INPUTS", "24"))
DIAGNOSTIC = re.compile(r"^\S.*:\d+:\d+: (error|warning)\[[ER]\d{3,4}\]: \S")


def _mutator(rng: random.Random):
    spec = importlib.util.spec_from_file_location("intentc_fuzz_tool_cli", ROOT / "tools" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.Mutator([], rng)


def _cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


def _well_formed(stderr: str) -> list[str]:
    """What is wrong with the rendered diagnostics: a traceback, a line naming an error that
    is not the diagnostic format, an error without its excerpt and caret."""
    problems = ["a traceback"] if "Traceback" in stderr else []
    lines = stderr.split("\n")
    for at, line in enumerate(lines):
        if "error[" in line and not line.startswith(" "):
            if not DIAGNOSTIC.match(line):
                problems.append(f"malformed: {line}")
            elif at + 2 >= len(lines) or not lines[at + 1].lstrip().split("|")[0].strip().isdigit() \
                    or "^" not in lines[at + 2]:
                problems.append(f"no excerpt and caret: {line}")
    return problems


def _mutants(count: int, seed: int):
    rng = random.Random(seed)
    mutator = _mutator(rng)
    samples = sorted((ROOT / "ir_samples").glob("*.kir"))
    for _ in range(count):
        sample = rng.choice(samples)
        text = sample.read_text()
        for _ in range(rng.randint(1, 3)):
            text = rng.choice(mutator.edits)(text)
        yield sample, text


@pytest.mark.parametrize("seed", range(2))
def test_mutated_samples_get_diagnostics_never_a_crash(tmp_path, seed):
    checked = {"verified": 0, "rejected": 0}
    for number, (sample, text) in enumerate(_mutants(INPUTS // 2, seed)):
        path = tmp_path / f"mutant{number}.kir"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        code, stderr = _cli(["verify", str(path)])
        if code == 2 and "is not UTF-8 text" in stderr:     # a lone surrogate written out: an unreadable file
            continue
        assert code in (0, 1) and not _well_formed(stderr), (text, code, stderr[-2000:])
        if code == 1:
            checked["rejected"] += 1
            continue
        checked["verified"] += 1
        inputs = ROOT / "ir_samples" / "inputs" / f"{sample.stem}.npz"
        for argv in (["compile", str(path), "--target", "ptx", "-o", str(tmp_path / f"out{number}")],
                     ["run", str(path), "--inputs", str(inputs)] if inputs.exists() else None):
            if argv is None:
                continue
            (tmp_path / f"out{number}").mkdir(exist_ok=True)
            code, stderr = _cli(argv)
            assert code in (0, 1, 2) and not _well_formed(stderr), (argv[0], text, code, stderr[-2000:])
    assert checked["rejected"], checked    # the mutants reach the verifier's and parser's diagnostics
