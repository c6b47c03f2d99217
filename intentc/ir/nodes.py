"""The KIR node model: modules, kernels, helpers, enums, ops and regions.

Every op is one generic node; what its operands, attributes and regions mean comes from the
op table (`intentc.ir.optable`). Blocks are flat lists of ops, never expression trees.

Source locations and comments are trivia: they are kept, printed and serialized, but two
nodes that differ only in them are equal (as in MLIR, where locations are not part of an
op's identity). That is what makes `parse(print(n)) == n` meaningful.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WrapSerializer
from typing_extensions import TypeAliasType

from .types import Type

TRIVIA = frozenset({"loc", "comments", "end_comments"})


class Loc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    line: int
    col: int


class Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    loc: Loc | None = None
    comments: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return _same(self, other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, getattr(self, "name", None)))


def _same(a, b) -> bool:
    """Equality where a float attribute is its exact value: NaN equals NaN, -0.0 is not 0.0.

    A work list, not recursion: nodes nest as deep as the parser allows, and `==` must not
    be the stage that runs out of stack."""
    pending = [(a, b)]
    while pending:
        a, b = pending.pop()
        if isinstance(a, Node) or isinstance(b, Node):
            if type(a) is not type(b):
                return False
            pending.extend((getattr(a, name), getattr(b, name)) for name in type(a).model_fields
                           if name not in TRIVIA)
        elif isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return False
            pending.extend((a[key], b[key]) for key in a)
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if type(a) is not type(b) or len(a) != len(b):
                return False
            pending.extend(zip(a, b))
        elif isinstance(a, (bool, int, float)) or isinstance(b, (bool, int, float)):
            if type(a) is not type(b) or repr(a) != repr(b):
                return False
        elif a != b:
            return False
    return True


class Keyword(BaseModel):
    """A bare identifier attribute value, such as `sum`, `acquire` or `two_of_four`."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["keyword"] = "keyword"
    name: str


class SymbolRef(BaseModel):
    """A reference to a module-level symbol (`@helper`) or an enum member (`@Mode.fast`)."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["symbol"] = "symbol"
    name: str


class NonFiniteFloat(BaseModel):
    """How JSON carries an `inf`, `-inf` or `nan` attribute: JSON has no such numbers, and a
    bare `Infinity` or `NaN` is not JSON. In memory the attribute is a plain float."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    float: Literal["inf", "-inf", "nan"]


def _read_non_finite(value):
    if isinstance(value, dict) and set(value) == {"float"} and value["float"] in ("inf", "-inf", "nan"):
        return float(value["float"])
    return value


def _write_non_finite(value, handler, info):
    if info.mode_is_json() and isinstance(value, float) and not math.isfinite(value):
        return {"float": "nan" if math.isnan(value) else repr(value)}
    return handler(value)


if TYPE_CHECKING:
    # The same union for the type checker, which resolves a recursive plain alias but not a
    # recursive TypeAliasType (pydantic needs the latter for the schema).
    AttrValue = bool | int | float | str | Keyword | SymbolRef | Type | list["AttrValue"]
else:
    AttrValue = TypeAliasType(
        "AttrValue",
        Annotated[
            bool | int | float | str | Keyword | SymbolRef | Type | list["AttrValue"],
            BeforeValidator(_read_non_finite,
                            json_schema_input_type=bool | int | float | str | Keyword | SymbolRef | Type
                            | NonFiniteFloat | list["AttrValue"]),
            WrapSerializer(_write_non_finite),
        ],
    )


class Param(Node):
    name: str
    type: Type


class OperandGroup(BaseModel):
    """A keyword operand segment such as `index(%i, %j)` or `mask(%m)`."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    values: tuple[str, ...]


class Region(Node):
    label: str
    args: tuple[Param, ...] = ()
    ops: tuple[Op, ...] = ()
    end_comments: tuple[str, ...] = ()


class Op(Node):
    name: str
    results: tuple[str, ...] = ()
    operands: tuple[str, ...] = ()
    groups: tuple[OperandGroup, ...] = ()
    attributes: dict[str, AttrValue] = Field(default_factory=dict)
    result_types: tuple[Type, ...] = ()
    regions: tuple[Region, ...] = ()
    # False for the quoted generic form of an op the table does not know (`"x.y" ...`).
    registered: bool = True

    def group(self, key: str) -> tuple[str, ...] | None:
        return next((g.values for g in self.groups if g.key == key), None)

    # Typed reads of attributes whose type the op table fixes (the verifier checked it): a
    # value of another type is an internal error, not an input error.
    def int_attr(self, name: str, default: int | None = None) -> int:
        """An integer attribute such as `axis`; `default` when absent."""
        value = self.attributes.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"`{self.name}` attribute `{name}` is {value!r}, not an integer")
        return value

    def int_list_attr(self, name: str) -> list[int]:
        """An integer list attribute such as `axes`; [] when absent."""
        value = self.attributes.get(name, [])
        ints = [v for v in value if isinstance(v, int) and not isinstance(v, bool)] if isinstance(value, list) else []
        if not isinstance(value, list) or len(ints) != len(value):
            raise TypeError(f"`{self.name}` attribute `{name}` is {value!r}, not a list of integers")
        return ints

    def keyword_attr(self, name: str) -> str:
        """The name of a keyword attribute such as `kind = sum`."""
        value = self.attributes.get(name)
        if not isinstance(value, Keyword):
            raise TypeError(f"`{self.name}` attribute `{name}` is {value!r}, not a keyword")
        return value.name

    def symbol_attr(self, name: str) -> str:
        """The name of a symbol attribute such as `callee = @helper`."""
        value = self.attributes.get(name)
        if not isinstance(value, SymbolRef):
            raise TypeError(f"`{self.name}` attribute `{name}` is {value!r}, not a symbol")
        return value.name


class Kernel(Node):
    kind: Literal["kernel"] = "kernel"
    name: str
    params: tuple[Param, ...] = ()
    body: tuple[Op, ...] = ()
    end_comments: tuple[str, ...] = ()


class Helper(Node):
    kind: Literal["helper"] = "helper"
    name: str
    params: tuple[Param, ...] = ()
    result_types: tuple[Type, ...] = ()
    body: tuple[Op, ...] = ()
    end_comments: tuple[str, ...] = ()


class EnumMember(Node):
    """A member of an enum: a name, nothing else (§2)."""
    name: str


class EnumDecl(Node):
    kind: Literal["enum"] = "enum"
    name: str
    members: tuple[EnumMember, ...]


def member_ordinal(decl: EnumDecl, member: str) -> int:
    """The position of a member in its declaration: how compiled code encodes it privately
    (a runtime word; never printed, hashed or passed in the ABI as a fact of the member)."""
    return next(k for k, m in enumerate(decl.members) if m.name == member)


Item = Annotated[Kernel | Helper | EnumDecl, Field(discriminator="kind")]


class Module(Node):
    items: tuple[Item, ...] = ()
    end_comments: tuple[str, ...] = ()

    def find(self, name: str) -> Kernel | Helper | EnumDecl | None:
        return next((item for item in self.items if item.name == name), None)


Region.model_rebuild()
Op.model_rebuild()
