"""The Python examples of the README's "From Python" section, to run as they are written."""
from __future__ import annotations

import re

from sample_files import ROOT


def from_python_examples() -> list[str]:
    """The ```python blocks of the README's "From Python" section, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def run_example(code: str, monkeypatch) -> dict:
    """Run an example from the repository root (its paths are relative to it); its names."""
    monkeypatch.chdir(ROOT)
    names: dict = {}
    exec(compile(code, "README.md", "exec"), names)
    return names
