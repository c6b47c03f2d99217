"""Layout encodings (after Triton's): a layout maps hardware coordinates (register slot,
thread = lane + 32·warp) to the logical coordinate of a tensor element.

- `Blocked`: an N-D tiling. Each thread holds `size_per_thread` consecutive elements an
  axis, the lanes of a warp and the warps of a CTA tile the axes in `order` (fastest first);
  the tile repeats over the tensor, each repetition adding registers. The 1-D register form
  of the CTA mapping is `Blocked([S], [V], [32], [T/32])`.
- `Slice`: the layout of a reduction's result along `dim`: the parent's coordinate with that
  axis dropped (the threads that held the reduced axis hold copies).
- `Uniform`: every thread holds the same value (a full reduction's result after the
  butterflies, a scalar broadcast's source).
- `Shared`: elements staged in the CTA's shared memory, addressed by any thread.
- `Split`: an axis cut into parts, each held by its own layout (a record whose fields
  threads hold differently: a Q4_K block's header, which every lane of a row's group reads,
  and its quants, 32 bytes a lane).
Printed forms are what `launch.json` and the layout dump show.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

WARP = 32


def _digits(number: int, radices, order) -> list[int]:
    """`number` written in mixed radix, the axes in `order` least significant first."""
    digits = [0] * len(radices)
    for axis in order:
        number, digits[axis] = divmod(number, radices[axis])
    return digits


def _list(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


@dataclass(frozen=True)
class Blocked:
    shape: tuple                       # logical extents; None for a dynamic extent
    size_per_thread: tuple
    threads_per_warp: tuple
    warps_per_cta: tuple
    order: tuple                       # axes, fastest-varying first
    # The tile spans every CTA of the grid (a top-level tensor program), not one CTA: the
    # repetitions then step over the grid (CTA c holds tile c, c + nctaid, ...).
    grid_wide: bool = False

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def threads(self) -> int:
        return math.prod(self.threads_per_warp) * math.prod(self.warps_per_cta)

    @property
    def tile(self) -> tuple:
        """The extent a CTA covers an axis without repeating."""
        return tuple(s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    @property
    def repetitions(self) -> tuple | None:
        """How often the tile repeats an axis; None when an extent is dynamic (a loop)."""
        if None in self.shape:
            return None
        return tuple(-(-extent // tile) for extent, tile in zip(self.shape, self.tile))

    @property
    def registers(self) -> int | None:
        """Slots a thread holds (some may lie past the extent, masked)."""
        repetitions = self.repetitions
        return None if repetitions is None else math.prod(self.size_per_thread) * math.prod(repetitions)

    def coordinate(self, register: int, thread: int) -> tuple:
        """The logical coordinate of `register` of `thread` (it may lie past the extent)."""
        within = math.prod(self.size_per_thread)
        repetition, element = divmod(register, within)
        lane, warp = thread % WARP, thread // WARP
        lanes = _digits(lane, self.threads_per_warp, self.order)
        warps = _digits(warp, self.warps_per_cta, self.order)
        elements = _digits(element, self.size_per_thread, self.order)
        repeats = _digits(repetition, self.repetitions or (1 << 62,) * self.rank, self.order)
        return tuple(r * tile + (w * t + ln) * s + e for r, tile, w, t, ln, s, e in zip(
            repeats, self.tile, warps, self.threads_per_warp, lanes, self.size_per_thread, elements))

    def __str__(self) -> str:
        return (f"#blocked<{{sizePerThread = {_list(self.size_per_thread)}, threadsPerWarp = "
                f"{_list(self.threads_per_warp)}, warpsPerCTA = {_list(self.warps_per_cta)}, "
                f"order = {_list(self.order)}" + (", CTAs = [grid]" if self.grid_wide else "") + "}>")


@dataclass(frozen=True)
class Slice:
    parent: Blocked
    dim: int

    @property
    def registers(self) -> int | None:
        return self.parent.registers

    def coordinate(self, register: int, thread: int) -> tuple:
        full = self.parent.coordinate(register, thread)
        return full[:self.dim] + full[self.dim + 1:]

    def __str__(self) -> str:
        return f"#slice<{{dim = {self.dim}, parent = {self.parent}}}>"


@dataclass(frozen=True)
class Uniform:
    def coordinate(self, register: int, thread: int) -> tuple:
        return ()

    def __str__(self) -> str:
        return "#uniform"


@dataclass(frozen=True)
class Shared:
    order: tuple

    def __str__(self) -> str:
        return f"#shared<{{order = {_list(self.order)}}}>"


@dataclass(frozen=True)
class Split:
    """Axis `axis` cut at `bounds` (the first coordinate of each part after the first): part
    i, held by `parts[i]` in its own coordinates, covers [bounds[i-1], bounds[i]) of the
    axis. A thread's registers are those of the parts in turn."""
    axis: int
    bounds: tuple
    parts: tuple

    @property
    def registers(self) -> int | None:
        counts = [part.registers for part in self.parts]
        return None if None in counts else sum(counts)

    def coordinate(self, register: int, thread: int) -> tuple:
        for part, start in zip(self.parts, (0, *self.bounds)):
            count = part.registers
            if count is None or register < count:
                inner = part.coordinate(register, thread)
                return (*inner[:self.axis], inner[self.axis] + start, *inner[self.axis + 1:])
            register -= count
        raise IndexError("a register past the parts'")

    def __str__(self) -> str:
        return (f"#split<{{axis = {self.axis}, at = {_list(self.bounds)}, parts = ["
                + ", ".join(str(part) for part in self.parts) + "]}>")


def row_blocked(extent: int | None, threads: int, vector: int = 1, grid_wide: bool = False) -> Blocked:
    """The CTA mapping's 1-D form: `vector` consecutive elements a thread, T threads, the
    tile repeated along the row (over the grid's CTAs when `grid_wide`)."""
    return Blocked((extent,), (vector,), (min(WARP, threads),), (max(1, threads // WARP),), (0,), grid_wide)


# Any of the encodings above.
Layout = Blocked | Slice | Uniform | Shared | Split
