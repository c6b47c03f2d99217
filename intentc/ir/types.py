"""KIR value types (spec §1, §2, §8, §9).

Types are frozen pydantic models with a `kind` tag so that JSON round-trips through a
discriminated union. A scalar is a rank-0 tensor: `f32` and `tensor<f32, []>` are the same
type, and the printer writes the short form.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

DType = Literal[
    "bool", "index",
    "i8", "i16", "i32", "i64",
    "u8", "u16", "u32", "u64",
    "f16", "bf16", "f32", "f64",
    "f8e4m3fn", "f8e5m2",
]
DTYPES: tuple[str, ...] = DType.__args__  # type: ignore[attr-defined]

SIGNED_INTS = ("i8", "i16", "i32", "i64", "index")
UNSIGNED_INTS = ("u8", "u16", "u32", "u64")
INTEGERS = SIGNED_INTS + UNSIGNED_INTS
FLOATS = ("f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2")
BIT_WIDTH = {
    "bool": 1, "index": 64,
    "i8": 8, "i16": 16, "i32": 32, "i64": 64,
    "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "f8e4m3fn": 8, "f8e5m2": 8,
}

# Element types the spec names only to exclude (§1): packed data uses u8/u16/u32 carriers.
EXCLUDED_DTYPES = ("i4", "u4", "fp4", "f4", "e2m1")

Direction = Literal["in", "out", "inout"]

# A static extent is an int; a dynamic extent is the name of an SSA index value (§2).
Extent = int | str


class TypeBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TensorType(TypeBase):
    kind: Literal["tensor"] = "tensor"
    dtype: DType
    shape: tuple[Extent, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_scalar(self) -> bool:
        return not self.shape


class TupleType(TypeBase):
    kind: Literal["tuple"] = "tuple"
    elements: tuple[Type, ...]


class RecordField(TypeBase):
    name: str
    type: Type


class RecordType(TypeBase):
    kind: Literal["record"] = "record"
    fields: tuple[RecordField, ...]

    def field_type(self, name: str) -> Type | None:
        return next((f.type for f in self.fields if f.name == name), None)


class ViewType(TypeBase):
    """An external view (§8): element dtype, logical shape, direction and alias relation.

    Offset and strides are runtime values in elements; they are bound at launch and are
    not part of the type.
    """
    kind: Literal["view"] = "view"
    dtype: DType
    shape: tuple[Extent, ...]
    direction: Direction
    noalias: bool = False


class BufferType(TypeBase):
    """A kernel-local logical buffer (§9): one scalar dtype, a logical shape."""
    kind: Literal["buffer"] = "buffer"
    dtype: DType
    shape: tuple[Extent, ...]


class EnumType(TypeBase):
    """A constexpr-only closed enum declared at module level (§2)."""
    kind: Literal["enum"] = "enum"
    name: str


class ConstexprType(TypeBase):
    """A kernel parameter whose value is part of the specialization (§2)."""
    kind: Literal["constexpr"] = "constexpr"
    inner: Type


Type = Annotated[
    TensorType | TupleType | RecordType | ViewType | BufferType | EnumType | ConstexprType,
    Field(discriminator="kind"),
]

for _model in (TupleType, RecordField, RecordType, ConstexprType):
    _model.model_rebuild()

