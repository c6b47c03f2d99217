"""The kernel ABI: `void kernel(i64 *args, i64 *status)`.

`args` is a flat array of 64-bit slots, parameter by parameter:

- a view: storage pointer of its allocation, element offset, allocation size in elements,
  then one stride per axis and one extent per axis (elements, any sign for strides);
- a scalar: its bit pattern, zero-extended (f32 as its 32 bits, f16 as its 16 bits);
- a constexpr: like a scalar (an enum member as its value); ignored when specialized.

`status` is one word: 0, or the 1-based id of the first run-time check that failed.
A target may take the slots as parameters instead, one i64 each before `status`
(`TargetHooks.words_as_params`: the GPU ABI, docs/gpu.md).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from ...ir.nodes import Kernel
from ...ir.types import ConstexprType, EnumType, TensorType, ViewType

if TYPE_CHECKING:
    from .kernel import LoweredKernel


@dataclass(frozen=True)
class ParamSlots:
    name: str
    kind: str            # "view" | "scalar" | "constexpr"
    dtype: str           # element dtype ("enum" for enum constexprs)
    rank: int
    start: int

    @property
    def count(self) -> int:
        return 3 + 2 * self.rank if self.kind == "view" else 1


def layout(kernel: Kernel) -> list[ParamSlots]:
    slots, start = [], 0
    for param in kernel.params:
        type_ = param.type
        if isinstance(type_, ViewType):
            entry = ParamSlots(param.name, "view", type_.dtype, len(type_.shape), start)
        elif isinstance(type_, ConstexprType):
            dtype = "enum" if isinstance(type_.inner, EnumType) else type_.inner.dtype
            entry = ParamSlots(param.name, "constexpr", dtype, 0, start)
        elif isinstance(type_, TensorType) and not type_.shape:
            entry = ParamSlots(param.name, "scalar", type_.dtype, 0, start)
        else:
            raise ValueError(f"parameter %{param.name} has a type the CPU ABI cannot pass")
        slots.append(entry)
        start += entry.count
    return slots


def slot_count(slots: list[ParamSlots]) -> int:
    return sum(s.count for s in slots)


@dataclass(frozen=True)
class CheckReport:
    """A run-time check site as a runtime reports it when the status word names it."""
    code: str
    message: str
    hint: str
    op: str
    line: int
    col: int


@dataclass(frozen=True)
class KernelAbi:
    """What calling a compiled kernel needs beyond its code: the entry's name, the argument
    slots and the check sites (status word k names `sites[k - 1]`). Stored beside cached
    objects and cubins as `abi.json`, so a cache hit runs without lowering again."""
    function: str
    slots: tuple[ParamSlots, ...]
    sites: tuple[CheckReport, ...]

    def to_json(self) -> str:
        return json.dumps({"function": self.function, "slots": [asdict(s) for s in self.slots],
                           "sites": [asdict(s) for s in self.sites]}, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes) -> KernelAbi:
        data = json.loads(text)
        return cls(data["function"], tuple(ParamSlots(**s) for s in data["slots"]),
                   tuple(CheckReport(**s) for s in data["sites"]))


def abi_json(lowered: LoweredKernel) -> str:
    """`abi.json` of a `LoweredKernel` (its check sites name ops by source location)."""
    sites = tuple(CheckReport(s.code, s.message, s.hint, s.op.name, *((s.op.loc.line, s.op.loc.col) if s.op.loc
                                                                       else (1, 1))) for s in lowered.sites)
    return KernelAbi(lowered.function, tuple(lowered.slots), sites).to_json()
