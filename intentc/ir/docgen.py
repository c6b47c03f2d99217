"""Writes the op reference of docs/kir.md from the op table (`python -m intentc.ir.docgen`)."""
from __future__ import annotations

import sys
from pathlib import Path

from .optable import OpDef, all_ops

BEGIN, END = "<!-- op-reference:begin -->", "<!-- op-reference:end -->"
DOC = Path(__file__).resolve().parents[2] / "docs" / "kir.md"


def _operands(op: OpDef) -> str:
    names = [f"%{n.rstrip('*')}..." if n.endswith("*") else f"%{n}" for n in op.operands]
    groups = {"1": "", "?": "?", "*": "*", "+": "+"}
    names += [f"{key}(...){groups[arity]}" for key, arity in op.groups.items()]
    return " ".join(names) or "—"


def _attrs(op: OpDef) -> str:
    parts = []
    for name, spec in op.attrs.items():
        kind = "|".join(spec.choices) if spec.choices else spec.kind
        parts.append(f"`{name}`{'' if spec.required else '?'}: {kind}")
    return "<br>".join(parts) or "—"


def _results(op: OpDef) -> str:
    return "by result types" if op.results is None else str(op.results)


def _traits(op: OpDef) -> str:
    """The op's traits (docs/architecture.md says what each means)."""
    flags = ["elementwise", "commutative", "same_type", "contraction", "terminator", "rearranges",
             "identity_at_same_type", "enum_operands", "libm", "costly", "cta_per_coordinate"]
    parts = [flag for flag in flags if getattr(op, flag)]
    parts += [f"{access}s" for access in op.accesses]
    if op.dtypes != "any":
        parts.append(f"dtypes: {op.dtypes}")
    if op.int_identity is not None:
        parts.append(f"int_identity: {op.int_identity}")
    if op.cta_registers is not None:
        parts.append(f"cta_registers: {op.cta_registers}")
    if op.no_lowering:
        parts.append(f"no lowering: {op.no_lowering}")
    return "<br>".join(parts) or "—"


def render() -> str:
    rows = [
        "## Op reference (generated from the op table)",
        "",
        "| op | family | spec | operands | attributes | regions | results | traits | meaning |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for op in sorted(all_ops().values(), key=lambda o: o.name):
        regions = ", ".join(op.regions) or "—"
        if op.min_regions is not None and op.regions:
            regions += f" ({op.min_regions}–{len(op.regions)})"
        rows.append(f"| `{op.name}` | {op.family} | {op.section} | {_operands(op)} | {_attrs(op)} | {regions} | "
                    f"{_results(op)} | {_traits(op)} | {op.summary} |")
    return "\n".join(rows)


def updated(text: str) -> str:
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{render()}\n{END}{tail}"


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    new = updated(text)
    if "--check" in sys.argv:
        return 0 if new == text else 1
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
