"""The op table drives parsing and docs: every op's documented example parses and prints back."""
import subprocess
import sys

import pytest

from intentc import parse, print_module
from intentc.ir.optable import all_ops

EXAMPLES = {name: op.example for name, op in all_ops().items() if op.example}


def test_every_op_family_is_registered():
    assert len(all_ops()) > 100
    for required in ("parallel", "loop", "if", "yield", "region_fold", "region_scan", "scaled_contract",
                     "sparse_contract", "histogram", "quantized_dot", "atomic_cas", "random_bits",
                     "assume_in_bounds", "scatter_reduce", "unique_store", "buffer", "arg_reduce"):
        assert required in all_ops()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_parses_as_that_op_and_prints_canonically(name):
    example = EXAMPLES[name].replace("  ...\n", "")
    text = "kernel @k() {\n" + "".join(f"  {line}\n" for line in example.splitlines()) + "}\n"
    module = parse(text)
    assert module.items[0].body[0].name == name
    assert parse(print_module(module)) == module


def test_docs_op_reference_is_current(root):
    result = subprocess.run([sys.executable, "-m", "intentc.ir.docgen", "--check"], cwd=root)
    assert result.returncode == 0, "run `python -m intentc.ir.docgen` to regenerate docs/kir.md"
