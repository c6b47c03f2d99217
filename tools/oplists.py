"""Lists hand-written op-name lists outside `intentc/ir/`: tuple, list or set literals made
only of op names (two or more). Which ops have a property is a query on the op table
(`ir.optable.ops_where`); an implementation keyed by op name (a dict from each op to its
numpy function, LLVM instruction or diagnostic) is not a list and is not reported. A line
may say why its strings are not op names with a comment containing "not op names".

    python tools/oplists.py [PATH...]      # exit status 1 when it finds any
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

from intentc.ir.optable import all_ops

ROOT = Path(__file__).resolve().parents[1]


def op_name_lists(path: Path, ops: set[str]) -> list[str]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Tuple | ast.List | ast.Set):
            continue
        names = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(names) >= 2 and len(names) == len(node.elts) and set(names) <= ops \
                and "not op names" not in lines[node.lineno - 1]:
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            found.append(f"{where}:{node.lineno}: {', '.join(names)}")
    return found


def main(argv: list[str]) -> int:
    ops = set(all_ops())
    roots = [Path(a).resolve() for a in argv] or [ROOT / "intentc"]
    files = sorted(p for root in roots for p in ([root] if root.is_file() else root.rglob("*.py")))
    found = [hit for path in files if ROOT / "intentc" / "ir" not in path.parents
             for hit in op_name_lists(path, ops)]
    print("\n".join(found) or "no op-name lists outside intentc/ir/")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
