"""The layout assignment pass: a layout for every tensor value of a kernel's mapped region,
and the conversions where two layouts meet (docs/gpu.md, "Layouts").

Layouts are anchored by the mapping's distribution of the iteration's tensors (reads and
writes use it, so neighbouring threads touch neighbouring elements), propagate through
element-wise ops unchanged, give full reductions a `#uniform` result (every thread gets the
same bits from the butterflies) and histogram counts a `#shared` one. A value used in a
layout other than its own gets a conversion: a uniform value broadcast into a distributed
tensor costs nothing (each thread holds it), shared-memory counts merged into a view are
read back by the threads that own the bins. Values of an iteration mapped to one thread
get a layout whose single thread holds every element, which `mapping_report` flags.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...ir.nodes import Op
from ...ir.types import TensorType
from .encodings import Blocked, Layout, Shared, Uniform


@dataclass(frozen=True)
class Conversion:
    value: str
    source: str                 # printed layouts
    target: str
    through: str                # "registers" | "shared"


@dataclass
class Assignment:
    """name -> layout for every tensor value of the mapped region, and the conversions."""
    values: dict = field(default_factory=dict)
    conversions: list = field(default_factory=list)

    def encodings(self) -> dict[str, str]:
        """#name -> printed layout, one name per distinct layout, in first-use order."""
        names: dict[str, str] = {}
        for layout in self.values.values():
            text = str(layout)
            if text.startswith(("#blocked", "#slice", "#mma", "#split")) and text not in names.values():
                names[f"#layout{len(names)}"] = text
        return names

    def to_json(self) -> dict:
        encodings = self.encodings()
        short = {text: name for name, text in encodings.items()}
        return {"encodings": encodings,
                "values": {name: short.get(str(layout), str(layout)) for name, layout in self.values.items()},
                "conversions": [{"value": c.value, "from": short.get(c.source, c.source),
                                 "to": short.get(c.target, c.target), "through": c.through}
                                for c in self.conversions]}



def dump(layouts: dict) -> str:
    """The layout dump of `launch.json`'s `layouts` (Assignment.to_json()): the encodings,
    each value's layout, then the conversions."""
    lines = [f"{name} = {text}" for name, text in layouts["encodings"].items()]
    lines += [f"%{name} : {layout}" for name, layout in layouts["values"].items()]
    lines += [f"convert %{c['value']} : {c['from']} -> {c['to']}  // through {c['through']}"
              for c in layouts["conversions"]]
    return "\n".join(lines) + "\n"


def _static(type_: TensorType, known: dict) -> tuple:
    return tuple(e if isinstance(e, int) else known.get(e) for e in type_.shape)


def one_thread(type_: TensorType, known: dict) -> Blocked:
    """Every element in one thread's registers (an iteration mapped to a thread); a dynamic
    extent prints as its name."""
    shape = _static(type_, known)
    rank = len(shape)
    per_thread = tuple(e if e is not None else f"%{name}" for e, name in zip(shape, type_.shape))
    return Blocked(shape, per_thread, (1,) * rank, (1,) * rank, tuple(reversed(range(rank))))


def assign(ops: Sequence[Op], distribution: Callable[[TensorType], Layout], known: dict,
           one_thread_per_iteration: bool = False) -> Assignment:
    """Layouts of the tensor values defined by `ops` (an iteration body, nested regions
    included): `distribution(type_)` gives the mapping's layout of a tensor type, or
    one_thread_per_iteration puts every tensor on its iteration's thread."""
    result = Assignment()

    def visit(block: Sequence[Op]) -> None:
        for op in block:
            for name, type_ in zip(op.results, op.result_types):
                if not isinstance(type_, TensorType):
                    continue
                result.values[name] = _layout_of(op, type_, distribution, known, one_thread_per_iteration)
            for region in op.regions:
                visit(region.ops)
    visit(ops)
    _conversions(ops, result)
    return result


def _layout_of(op: Op, type_: TensorType, distribution: Callable[[TensorType], Layout], known: dict,
               one_thread_per_iteration: bool) -> Layout:
    if not type_.shape:
        return Uniform()
    if one_thread_per_iteration:
        return one_thread(type_, known)
    if op.name == "histogram":
        return Shared((0,))
    return distribution(type_)


def _conversions(ops: Sequence[Op], result: Assignment) -> None:
    for op in ops:
        for region in op.regions:
            _conversions(region.ops, result)
        if op.name == "broadcast" and op.operands[0] in result.values:
            source, target = result.values[op.operands[0]], result.values.get(op.results[0])
            if target is not None and str(source) != str(target):
                result.conversions.append(Conversion(op.operands[0], str(source), str(target), "registers"))
        elif op.name == "scatter_reduce" and isinstance(result.values.get(op.operands[1]), Shared):
            counts = result.values[op.operands[1]]
            result.conversions.append(Conversion(op.operands[1], str(counts), "global", "shared"))


def elements(type_: TensorType, known: dict) -> int | None:
    shape = _static(type_, known)
    return None if None in shape else math.prod(shape)
