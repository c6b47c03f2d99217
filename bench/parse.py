"""Parse-and-build time: every sample, a generated 100-line kernel, a generated 10,000-line module.

Goals on the 2-core reference machine: a 100-line kernel in ≤ 10 ms median, ≥ 10,000
lines/s on the large module. For context the table also shows plain Lark (the same grammar,
a parse tree only, no node building, no lark-cython).

    python bench/parse.py [--repeat N]
"""
from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lark import Lark

from bench.common import ROOT, median_seconds, print_table, write_results
from bench.gen import generated_module
from intentc import parse


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--repeat", type=int, default=15)
    repeat = options.parse_args().repeat

    plain = Lark((ROOT / "grammar" / "kir.lark").read_text(), parser="lalr", lexer="contextual")
    rows, records = [], []
    inputs = [(p.name, p.read_text()) for p in sorted((ROOT / "ir_samples").glob("*.kir"))]
    inputs += [("generated-100-lines", generated_module(100)),
               ("generated-10000-lines", generated_module(10000))]
    for name, text in inputs:
        lines = text.count("\n")
        runs = 3 if lines > 1000 else repeat
        ours = median_seconds(functools.partial(parse, text), runs, warmup=1)
        tree = median_seconds(functools.partial(plain.parse, text), runs, warmup=1)
        rows.append([name, lines, ours * 1e3, round(lines / ours), tree * 1e3, f"{tree / ours:.2f}x"])
        records.append({"input": name, "lines": lines, "intentc_ms": ours * 1e3,
                        "lines_per_s": lines / ours, "plain_lark_tree_ms": tree * 1e3})
    print_table(["input", "lines", "intentc ms", "lines/s", "plain lark tree ms", "speed vs plain"], rows)
    by_name = {r["input"]: r for r in records}
    goals = {
        "100-line kernel median ms (goal <= 10)": by_name["generated-100-lines"]["intentc_ms"],
        "10,000-line module lines/s (goal >= 10,000)": by_name["generated-10000-lines"]["lines_per_s"],
    }
    print()
    for goal, value in goals.items():
        print(f"{goal}: {value:.1f}")
    path = write_results("parse", {"repeat": repeat, "results": records, "goals": goals})
    print(f"\nwritten {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
