"""The declarative op table: one entry per op is the op's definition for every stage.

An `OpDef` names an op's positional operands, its keyword operand groups (`index(...)`,
`mask(...)`), its attributes with their kinds, how many regions and results it has, and the
spec section that gives its meaning; the parser, printer, generic verifier checks and docs
read that. Its traits (element-wise, commutative, same type, contraction, memory accesses,
what the GPU mapping admits) are what passes, the interpreter and the code generators ask
of an op instead of keeping their own lists of op names. Ops register themselves from the
modules in `intentc.ir.ops`, one module per family; each stage's implementation of a family
lives in a module of the same name (docs/architecture.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

Arity = Literal["1", "?", "*", "+"]
Access = Literal["read", "write"]
# The dtypes an element-wise op is defined on (§4, §5); `ir.dtypes.in_class` tests one.
DtypeClass = Literal["any", "numeric", "float", "int", "int_or_bool"]
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
    # The op family: the module of `intentc.ir.ops` defining it, and the name of the module
    # implementing it in every stage (set by `register`).
    family: str = ""
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

    # ---- traits --------------------------------------------------------------------------
    # Each result element comes from the operands' elements at the same coordinate alone
    # (scalar operands broadcast), so the op runs unchanged on values with extra leading axes.
    elementwise: bool = False
    # Swapping the two operands never changes the result.
    commutative: bool = False
    # The result has the type of the (first) operand: no conversion, no bool result.
    same_type: bool = False
    # The operand dtypes the op is defined on.
    dtypes: DtypeClass = "any"
    # May take an enum operand (§2): same-enum comparison and plumbing.
    enum_operands: bool = False
    # At its source's type the op is the identity (a no-op conversion or rearrangement).
    identity_at_same_type: bool = False
    # Moves or repeats its source's elements without changing one (a splat stays a splat).
    rearranges: bool = False
    # The integer `e` with `x op e == x` (and `e op x == x` too when commutative).
    int_identity: int | None = None
    # The C math library function of the same name computes it (libm on the host, libdevice's
    # `__nv_` functions on NVIDIA GPUs); the others are intrinsics or written out in IR.
    libm: bool = False
    # Expensive enough (a division) that a lowered value used twice is computed once.
    costly: bool = False
    # Sums products over paired axes into an explicit accumulator (§3, §5.3); the pairs come
    # from `ops.contraction.contraction_axes`.
    contraction: bool = False
    # How the op touches the view or buffer named by its first operand (§10, §11).
    accesses: tuple[Access, ...] = ()
    # Ends a region: the enclosing op's implementation takes its values, so the interpreter
    # and the lowering register nothing for it (the verifier does).
    terminator: bool = False
    # Why the op has no LLVM lowering; empty when it has one (tests/ir/test_registries.py).
    no_lowering: str = ""
    # The GPU mapping (docs/gpu.md): the CTA register form computes the op coordinate by
    # coordinate, and keeps `cta_registers` registers a coordinate for its result (None:
    # counted only when the result has several uses).
    cta_per_coordinate: bool = False
    cta_registers: int | None = None
    # A structured op whose results, when its body is element-wise and its carried values
    # have the results' shape, take each coordinate from the same coordinate alone: a GPU
    # mapping may run it per coordinate (docs/gpu.md, "Regions per coordinate").
    region_per_coordinate: bool = False
    # A NaN among its results is a new NaN: only its NaN-ness is defined (§5.2: ordinary
    # casts and IEEE arithmetic), so no operand's NaN payload or sign is observable through
    # it (a backend may widen such an operand without keeping its NaN bits).
    fresh_nan: bool = False
    # A reduction whose partial is several values (a value and its position; an author's
    # components and whether any member was present), combined through `combine_tuple`
    # (codegen/llvm/target.py): a GPU mapping keeps a word of each a partial.
    tuple_partials: bool = False

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

    @property
    def multi_result(self) -> bool:
        """Whether an implementation returns a list of results rather than one value."""
        return self.results is None or self.results > 1

    @property
    def reads(self) -> bool:
        return "read" in self.accesses

    @property
    def writes(self) -> bool:
        return "write" in self.accesses


REGISTRY: dict[str, OpDef] = {}


def register(module: str, *defs: OpDef) -> None:
    """Add the ops defined by family module `module` (its `__name__`) to the table."""
    family = module.rsplit(".", 1)[-1]
    for op in defs:
        if op.name in REGISTRY:
            raise ValueError(f"op {op.name!r} registered twice")
        REGISTRY[op.name] = replace(op, family=family)


def lookup(name: str) -> OpDef | None:
    if not REGISTRY:
        from . import ops  # noqa: F401  (registers every op family)
    return REGISTRY.get(name)


def all_ops() -> dict[str, OpDef]:
    lookup("")
    return REGISTRY


def op_def(name: str) -> OpDef:
    """The definition of a registered op (KeyError for an unknown name)."""
    found = lookup(name)
    if found is None:
        raise KeyError(f"no op {name!r} in the op table")
    return found


def ops_where(predicate) -> frozenset[str]:
    """The names of the ops whose definition satisfies `predicate`."""
    return frozenset(name for name, op in all_ops().items() if predicate(op))


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
