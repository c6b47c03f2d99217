"""The README's "From Python" example on the CPU runs as written and computes what it says
(the GPU example: tests/gpu/test_load_cuda.py)."""
from __future__ import annotations

import numpy as np
from readme_snippets import from_python_examples, run_example


def test_the_readme_shows_the_gpu_and_the_cpu_examples():
    examples = from_python_examples()
    assert len(examples) == 2 and 'target="cuda"' in examples[0] and "np." in examples[1]


def test_the_cpu_example_runs_and_adds(monkeypatch):
    names = run_example(from_python_examples()[1], monkeypatch)
    np.testing.assert_array_equal(names["z"], names["x"] + names["y"])
