"""The declarative op table: one entry per op drives the parser, printer, verifier and docs.

An `OpDef` names an op's positional operands, its keyword operand groups (`index(...)`,
`mask(...)`), its attributes with their kinds, how many regions and results it has, and the
spec section that gives its meaning. Ops register themselves from the modules in
`intentc.ir.ops`, one module per family.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Arity = Literal["1", "?", "*", "+"]
AttrKind = Literal["bool", "int", "number", "keyword", "ints", "type", "symbol", "string"]


@dataclass(frozen=True)
class AttrSpec:
    kind: AttrKind
    required: bool = False
    choices: tuple[str, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class OpDef:
    name: str
    section: str
    summary: str
    # Positional operand names; a trailing `*` makes the last one variadic (zero or more).
    operands: tuple[str, ...] = ()
    groups: dict[str, Arity] = field(default_factory=dict)
    attrs: dict[str, AttrSpec] = field(default_factory=dict)
    # (min, max) regions; region names document what each region computes.
    regions: tuple[str, ...] = ()
    min_regions: int | None = None
    # Number of results, or None for "as many as the result types say".
    results: int | None = 1
    example: str = ""
    # Effects the op has (§10): none for pure ops.
    effects: tuple[str, ...] = ()

    @property
    def variadic(self) -> bool:
        return bool(self.operands) and self.operands[-1].endswith("*")

    @property
    def fixed_operands(self) -> tuple[str, ...]:
        return self.operands[:-1] if self.variadic else self.operands

    @property
    def region_range(self) -> tuple[int, int]:
        low = len(self.regions) if self.min_regions is None else self.min_regions
        return low, len(self.regions)

    @property
    def is_pure(self) -> bool:
        return not self.effects


REGISTRY: dict[str, OpDef] = {}


def register(*defs: OpDef) -> None:
    for op in defs:
        if op.name in REGISTRY:
            raise ValueError(f"op {op.name!r} registered twice")
        REGISTRY[op.name] = op


def lookup(name: str) -> OpDef | None:
    if not REGISTRY:
        from . import ops  # noqa: F401  (registers every op family)
    return REGISTRY.get(name)


def all_ops() -> dict[str, OpDef]:
    lookup("")
    return REGISTRY


# Attribute specs shared by many ops.
APPROXIMATE = AttrSpec("bool", doc="approximate math (§5.1); constexpr bool, default false")
FLUSH_TO_ZERO = AttrSpec("bool", doc="flush subnormals at this op's boundary (§5.1); needs approximate")
ACC = AttrSpec("type", doc="accumulator/result dtype (§3)")
MEMORY_ORDERS = ("relaxed", "acquire", "release", "acq_rel")
ORDER = AttrSpec("keyword", required=True, choices=MEMORY_ORDERS, doc="memory order (§11)")
ACCESS_GROUPS: dict[str, Arity] = {"index": "*", "mask": "?"}
# Set by the address-width pass (§2): offset arithmetic of this access in 32 or 64 bits.
ADDRESS_WIDTH = AttrSpec("int", doc="32 or 64: bit width of this access's offset arithmetic, chosen by "
                                    "the address-width pass (§2); logical indices stay 64-bit")
