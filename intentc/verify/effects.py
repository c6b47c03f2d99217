"""Collision rules of §10 inside `parallel`: unique stores must be provably injective, and
plain writes whose address cannot depend on an iteration are provable conflicts.

Facts (affine.py) come from the walk: parallel body arguments, iotas, integer constants and
the affine index arithmetic over them. Deps are the parallel variables a value depends on.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..ir.types import Extent
from .affine import determined
from .context import NO_DEPS, Context, Value


def _relevant_vars(ctx, resource) -> list[str]:
    """Parallel variables whose iterations share the resource (it is defined outside them)."""
    names = []
    for depth, frame in ctx.parallel_frames():
        if depth > resource.depth:
            names += [name for name, extent in frame.parallel_vars if not _at_most_one(ctx, extent)]
    return names


def _at_most_one(ctx, extent) -> bool:
    extent = ctx.canon(extent)
    return isinstance(extent, int) and extent <= 1


def unique_store_unproven(ctx: Context, resource: Value, indices: Sequence[Value],
                          access_shape: tuple[Extent, ...]) -> str | None:
    """What keeps a unique_store from being provably injective, or None when it is."""
    ranges = _ranges(ctx, resource, access_shape)
    covered: set = set()
    for value in indices:
        covered |= determined(value.fact, ranges)
    for term in ranges:
        if term not in covered and ranges[term] != 1:
            if term[0] == "var":
                return f"no index determines the iteration variable `%{term[1]}`"
            return f"no index determines the lane coordinate along access axis {len(access_shape) - term[1]}"
    return None


def _ranges(ctx, resource, access_shape) -> dict:
    """Each variable the address must determine, with its static range (None if dynamic)."""
    ranges: dict = {}
    for depth, frame in ctx.parallel_frames():
        if depth > resource.depth:
            for name, extent in frame.parallel_vars:
                ranges[("var", name)] = _static(ctx, extent)
    rank = len(access_shape)
    for axis, extent in enumerate(access_shape):
        ranges[("lane", rank - axis)] = _static(ctx, extent)
    return ranges


def _static(ctx, extent):
    extent = ctx.canon(extent)
    return extent if isinstance(extent, int) else None


def conflicting_var(ctx: Context, resource: Value, values: Sequence[Value]) -> str | None:
    """A parallel variable none of the address, mask or control depends on, if any."""
    deps = ctx.control_deps()
    for value in values:
        deps = deps | (value.deps or NO_DEPS)
    for name in _relevant_vars(ctx, resource):
        if name not in deps:
            return name
    return None
