"""Type helpers for the rules: printing, structural equality with extent identity, broadcast."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..ir.types import BufferType, ConstexprType, Extent, RecordType, TensorType, TupleType, ViewType
from ..printer.printer import type_text

if TYPE_CHECKING:
    from .context import Context

fmt = type_text


def fmt_shape(shape: Sequence[Extent]) -> str:
    return "[" + ", ".join(str(e) if isinstance(e, int) else f"%{e}" for e in shape) + "]"


def tensor_text(dtype: str, shape: Sequence[Extent]) -> str:
    return dtype if not shape else f"tensor<{dtype}, {fmt_shape(shape)}>"


def same_type(ctx: Context, a: object, b: object) -> bool:
    """Structural equality where dynamic extents compare by identity (§2). (Each branch
    checks both types so that the checker knows `b`'s type too.)"""
    if type(a) is not type(b):
        return False
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return a.dtype == b.dtype and ctx.same_shape(a.shape, b.shape)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elements) == len(b.elements) and all(
            same_type(ctx, x, y) for x, y in zip(a.elements, b.elements))
    if isinstance(a, RecordType) and isinstance(b, RecordType):
        return len(a.fields) == len(b.fields) and all(
            x.name == y.name and same_type(ctx, x.type, y.type) for x, y in zip(a.fields, b.fields))
    if isinstance(a, ViewType) and isinstance(b, ViewType):
        return (a.dtype, a.direction, a.noalias) == (b.dtype, b.direction, b.noalias) and \
            ctx.same_shape(a.shape, b.shape)
    if isinstance(a, BufferType) and isinstance(b, BufferType):
        return a.dtype == b.dtype and ctx.same_shape(a.shape, b.shape)
    if isinstance(a, ConstexprType) and isinstance(b, ConstexprType):
        return same_type(ctx, a.inner, b.inner)
    return a == b


def broadcastable(ctx: Context, source: tuple[Extent, ...], target: tuple[Extent, ...]) -> bool:
    """numpy rule, right-aligned: each source extent is the aligned target extent or static 1."""
    if len(source) > len(target):
        return False
    offset = len(target) - len(source)
    return all(s == 1 or ctx.same_extent(s, target[offset + k]) for k, s in enumerate(source))


def broadcast_shapes(ctx: Context, shapes: Sequence[tuple[Extent, ...]]) -> tuple[Extent, ...] | None:
    """The common shape several shapes broadcast to (right-aligned), or None."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[Extent] = [1] * rank
    for shape in shapes:
        offset = rank - len(shape)
        for k, extent in enumerate(shape):
            current = result[offset + k]
            if current == 1:
                result[offset + k] = extent
            elif extent != 1 and not ctx.same_extent(current, extent):
                return None
    return tuple(result)
