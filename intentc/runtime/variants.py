"""Picking a kernel's entry for one launch (docs/gpu.md, "Variants for dynamic extents").

A cubin may hold, beside the kernel's own entry, register-form variants for row lengths
known only at launch (`launch.json` `variants`, by increasing `max`, all selected by one
extent). A launch runs the first variant whose `max` is at least the value that extent is
bound to, else the kernel's own entry. The pick happens where a launch's arguments are
bound (the prepared-launch fast path keeps the entry it was prepared with): a dictionary
read and a scan of a few integers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
        bound = extents.get(self.extent)
        value = bound[0] if bound is not None else int(np.asarray(env[self.extent]))
        for largest, entry in self.variants:
            if value <= largest:
                return entry
        return self.default
