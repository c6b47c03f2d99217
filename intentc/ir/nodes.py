"""The KIR node model: modules, kernels, helpers, enums, ops and regions.

Every op is one generic node; what its operands, attributes and regions mean comes from the
op table (`intentc.ir.optable`). Blocks are flat lists of ops, never expression trees.

Source locations and comments are trivia: they are kept, printed and serialized, but two
nodes that differ only in them are equal (as in MLIR, where locations are not part of an
op's identity). That is what makes `parse(print(n)) == n` meaningful.
"""
from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

from .types import Type

TRIVIA = frozenset({"loc", "comments", "end_comments"})


class Loc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    line: int
    col: int


class Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")
    loc: Loc | None = None
    comments: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return all(
            _same(getattr(self, name), getattr(other, name))
            for name in type(self).model_fields
            if name not in TRIVIA
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, getattr(self, "name", None)))


def _same(a, b) -> bool:
    """Equality where a float attribute is its exact value: NaN equals NaN, -0.0 is not 0.0."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (bool, int, float)) or isinstance(b, (bool, int, float)):
        return type(a) is type(b) and repr(a) == repr(b)
    return a == b


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


AttrValue = TypeAliasType(
    "AttrValue", Union[bool, int, float, str, Keyword, SymbolRef, Type, list["AttrValue"]]
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
    ops: tuple["Op", ...] = ()
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


Item = Annotated[Union[Kernel, Helper, EnumDecl], Field(discriminator="kind")]


class Module(Node):
    items: tuple[Item, ...] = ()
    end_comments: tuple[str, ...] = ()

    def find(self, name: str) -> Kernel | Helper | EnumDecl | None:
        return next((item for item in self.items if item.name == name), None)


Region.model_rebuild()
Op.model_rebuild()
