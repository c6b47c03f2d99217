"""Picking a kernel's entry for one launch (docs/gpu.md, "Variants for dynamic extents").

A cubin may hold, beside the kernel's own entry, register-form variants for row lengths
known only at launch (`launch.json` `variants`, by increasing `max`, all selected by one
extent). A launch runs the first variant whose `max` is at least the value that extent is
bound to, else the kernel's own entry. A lazy compile (`Specialization.lazy_variants`, the
default) holds no variants, only the rule that picks one (`variant_rule`):
`LazyVariants` compiles each variant, a kernel of its own, on the first launch that needs
it. The pick happens where a launch's arguments are bound (the prepared-launch fast path
keeps the entry it was prepared with): a dictionary read and a scan of a few integers, or
a few integer operations and a dictionary read.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from ..codegen.nvptx.variants import VariantRule

Kernel = TypeVar("Kernel")


@dataclass(frozen=True)
class Entry:
    """One entry of the loaded module and how to launch it."""
    function: object        # the driver's function handle
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0   # dynamic shared memory (the MMA mapping's operand ring past 48 KiB)


class EntryTable:
    def __init__(self, default: Entry, extent: str | None = None, variants: list[tuple[int, Entry]] | None = None,
                 fallback: Entry | None = None):
        self.default, self.extent = default, extent
        self.variants = variants or []        # (max, entry) by increasing max
        self.fallback = fallback              # for launches whose views have no tensor map (MMA mapping)

    def pick(self, extents: dict, env: dict) -> Entry:
        """The entry for a launch whose dynamic extents are bound in `extents` (name →
        (value, source), as `interp.launch.Launch` keeps them) and scalars in `env`."""
        if not self.variants:
            return self.default
        value = bound_value(extents, env, str(self.extent))
        for largest, entry in self.variants:
            if value <= largest:
                return entry
        return self.default


def bound_value(extents: dict, env: dict, extent: str) -> int:
    """The value a launch binds `extent` to: a view's extent, or an `index` parameter."""
    bound = extents.get(extent)
    return bound[0] if bound is not None else int(np.asarray(env[extent]))


class LazyVariants(Generic[Kernel]):
    """The variants a lazy compile left out: `build((fewest, most))` compiles the one serving
    rows of that many elements (on the first launch in its bucket); kept for later launches.
    `sources`: where a call's arguments give the rule's extent before they are bound (view
    name and axis, or the `index` parameter with axis None: `extent_sources`)."""

    def __init__(self, rule: VariantRule, build: Callable[[tuple[int, int]], Kernel],
                 sources: list[tuple[str, int | None]] | None = None):
        self.rule, self._build, self._sources = rule, build, sources or []
        self.built: dict[tuple[int, int], Kernel] = {}
        self._lock = threading.Lock()

    def pick(self, extents: dict, env: dict) -> Kernel | None:
        """The variant for a launch binding `extents` and `env`; None where the kernel's own
        entry serves it (an empty row, or one longer than any variant's)."""
        return self._variant(bound_value(extents, env, self.rule.extent))

    def pick_unbound(self, arguments: dict) -> Kernel | None:
        """The variant for a call's arguments as given (arrays and scalars by name), read
        from their shapes before binding, so that only the variant binds them (it checks
        them all, a mismatch included); None where they do not say (then bind them here)."""
        for name, axis in self._sources:
            try:
                value = arguments[name]
                return self._variant(int(value) if axis is None else int(value.shape[axis]))
            except (AttributeError, IndexError, KeyError, TypeError, ValueError):
                continue
        return None

    def _variant(self, value: int) -> Kernel | None:
        bucket = self.rule.bucket(value)
        if bucket is None:
            return None
        with self._lock:
            kernel = self.built.get(bucket)
            if kernel is None:
                kernel = self.built[bucket] = self._build(bucket)
        return kernel


def extent_sources(params: list, extent: str) -> list[tuple[str, int | None]]:
    """Where a call's arguments give `extent`: (view, axis) for each view parameter that
    declares it, or (`index` parameter, None)."""
    sources: list[tuple[str, int | None]] = [(param.name, None) for param in params if param.name == extent]
    for param in params:
        shape = getattr(param.type, "shape", ())
        if getattr(param.type, "direction", None) is not None and extent in shape:
            sources.append((param.name, shape.index(extent)))
    return sources
