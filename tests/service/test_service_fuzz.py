"""Mutated samples (tools/fuzz.py's mutator) posted to the compile service, for the `kir`
and `ptx` targets: every answer is a 200 or a 4xx whose diagnostics carry a code and a
position in the text sent, never a 5xx; the same request twice gets the same answer (a
cached entry is what the first compile made); and the unmutated sample still compiles to
its own artifacts afterwards (no entry corrupted).

INTENTC_FUZZ_SERVICE_INPUTS=N posts N mutants (default a handful)."""
from __future__ import annotations

import importlib.util
import os
import random
import re
import sys

import pytest

from harness import post_compile
from sample_files import ROOT

INPUTS = int(os.environ.get("INTENTC_FUZZ_SERVICE_INPUTS", "8"))
KERNEL = re.compile(r"^kernel @(\w+)", re.MULTILINE)


def _mutants(count: int, seed: int):
    spec = importlib.util.spec_from_file_location("intentc_fuzz_tool_service", ROOT / "tools" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    rng = random.Random(seed)
    mutator = module.Mutator([], rng)
    samples = sorted((ROOT / "ir_samples").glob("*.kir"))
    for _ in range(count):
        text = rng.choice(samples).read_text()
        original = text
        for _ in range(rng.randint(1, 3)):
            text = rng.choice(mutator.edits)(text)
        kernel = (KERNEL.findall(original) or ["k"])[0]
        yield original, text, kernel, rng.choice([{"target": "kir"}, {"target": "ptx", "arch": "sm_90"}])


def _checked(reply, text: str) -> dict:
    assert reply.status_code < 500, (reply.status_code, reply.text[:2000], text)
    body = reply.json()
    if reply.status_code == 422 and "diagnostics" in body:
        lines = text.count("\n") + 1
        assert body["diagnostics"] and not body["artifacts"], body
        for diagnostic in body["diagnostics"]:
            assert re.fullmatch(r"[ER]\d{3,4}", diagnostic["code"]), diagnostic
            assert 1 <= diagnostic["line"] <= lines and diagnostic["col"] >= 1, (diagnostic, lines)
    else:
        assert reply.status_code in (200, 413, 422), (reply.status_code, body)
    return body


@pytest.mark.parametrize("seed", [3])
def test_mutated_samples_get_4xx_diagnostics_never_a_5xx(service, seed):
    for original, text, kernel, target in _mutants(INPUTS, seed):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:          # a lone surrogate: JSON can carry it, tests/service/test_service_unicode.py
            continue
        body = {"source": text, "kernel": kernel, **target}
        first = _checked(post_compile(service, body), text)
        again = _checked(post_compile(service, body), text)
        assert (first.get("artifacts"), first.get("diagnostics")) == (again.get("artifacts"), again.get("diagnostics"))
        clean = post_compile(service, {"source": original, "kernel": kernel, **target})
        assert clean.status_code == 200, (clean.status_code, clean.text[:1000])
