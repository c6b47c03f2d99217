"""A launch as a function of its views' data pointers: the new-pointer fast path (`docs/runtime.md`).

A call bound and checked in full (`CudaKernel.prepare`) leaves, beside its launch, a
template: its parameter words and, for each view, the word holding its address and the
bytes it spans. Of the launch's checks (the interpreter's R0101–R0109, layout facts, R0303)
and words, only three things depend on where the memory lies; everything else depends on
names, shapes, strides, dtypes, devices and scalar bits, which `seen_calls` compares before
it uses a template. The three, for a call with other data pointers:

- the address words: each view's address is its data pointer plus a fixed difference
  (its first byte may lie before element 0 with negative strides);
- `noalias` (R0109): a noalias view's bytes must not overlap another view's;
- the 16-byte alignment fact (R0108), where a kernel was compiled with it.

`CallTemplate.launch(pointers)` re-checks the last two (None when one fails: the caller
binds the call in full, which reports the interpreter's diagnostic) and sets the address
words of the template's launch: no binding, no upload (the words are kernel parameters,
docs/gpu.md "GPU ABI"), and nothing allocated. Each thread has a launch of its own per
template, rewritten by its next call: the caller launches it at once (the driver copies the
parameters during the launch), as `LoadedKernel.__call__` and `CudaKernel.launch_in_place` do.
"""
from __future__ import annotations

import threading
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .cuda_driver import DeviceBuffer, LaunchShape, ParameterBlock, PreparedLaunch, remember_plan
from .cuda_stages import LaunchSequence
from .tensor_maps import encoded_maps


@dataclass(frozen=True)
class TemplateView:
    """One view of the call the template was made from, as bound."""
    name: str
    word: int                   # the parameter word holding its address
    address: int                # that word's value (the first byte it spans)
    span: tuple[int, int]       # [low, high) bytes it spans
    first: int                  # the byte address of its element 0 (what the alignment fact is about)
    noalias: bool
    aligned16: bool
    empty: bool                 # no bytes: its address word is a fixed dummy, whatever its pointer


@dataclass(frozen=True)
class TensorMaps:
    """The copy engine's tensor maps of a launch (`mma.tma`, `tensor_maps.py`): their spec,
    each view's first argument word, and the word holding the maps' device address."""
    tma: dict
    views: dict[str, int]
    word: int

    def launch(self, shape: LaunchShape, words: list[int]) -> PreparedLaunch | None:
        """A launch of its own with maps encoded for `words`' addresses (in device memory it
        keeps), or None where the copy engine cannot describe a view there (a full binding
        then takes the kernel's fallback entry)."""
        maps = encoded_maps(self.tma, self.views, np.array(words[:self.word], dtype=np.uint64).view(np.int64))
        if maps is None:
            return None
        memory = DeviceBuffer.from_array(maps)
        return PreparedLaunch.of(shape, [*words[:self.word], memory.address, *words[self.word + 1:]], memory)


@dataclass(frozen=True)
class LaunchTemplate:
    shape: LaunchShape | LaunchSequence       # a staged kernel's stages: launched natively only
    words: list[int]            # the parameter words (unsigned), status address last
    views: list[TemplateView]
    maps: TensorMaps | None = None             # tensor maps: encoded again for every new call's addresses

    def for_call(self, pointers: Sequence[int], index: dict[str, int]) -> CallTemplate:
        """The template for calls whose view `name` is the data pointer `pointers[index[name]]`
        (views not in `index`, or empty, lie where they lay in the call it was made from);
        `pointers` are this call's."""
        moving = {v.name: v for v in self.views if v.name in index and not v.empty}

        def relative(view: TemplateView) -> tuple[int | None, int, int]:
            """(pointer index or None, low, high): its span as pointer + offsets, or fixed."""
            if view.name not in moving:
                return None, *view.span
            base = pointers[index[view.name]]
            return index[view.name], view.span[0] - base, view.span[1] - base
        addresses = [(v.word, index[v.name], v.address - pointers[index[v.name]]) for v in moving.values()]
        aligned = [(index[v.name], v.first - pointers[index[v.name]]) for v in moving.values() if v.aligned16]
        disjoint = [(*relative(a), *relative(b)) for a in self.views if a.noalias for b in self.views
                    if b is not a and (a.name in moving or b.name in moving)]
        return CallTemplate(self.shape, self.words, addresses, aligned, disjoint, self.maps)


class CallTemplate:
    """A template with its views' places in a call's data pointers."""

    def __init__(self, shape: LaunchShape | LaunchSequence, words: list[int], addresses: list, aligned: list,
                 disjoint: list, maps: TensorMaps | None = None):
        self.shape, self._parameters, self._words = shape, ParameterBlock(words), words
        self._addresses = addresses     # (word, pointer index, address - pointer)
        self._aligned = aligned         # (pointer index, element 0 - pointer): 16-byte aligned
        self._disjoint = disjoint       # (index, low, high, index, low, high): index None = fixed bytes
        self._maps = maps
        self._per_thread = threading.local()
        # what the native path launches from (None: a launch with tensor maps, made by `launch`)
        self.native = _native_form(words, addresses, aligned, disjoint) if maps is None else None
        self.plans: dict[int, tuple] = {}
        # its launches are the caller's to keep (each owns its tensor maps), not this thread's for one call
        self.owned = maps is not None

    def native_plan(self, stream: int) -> tuple:
        """How the native fast path launches it on `stream` (`native_launch.c`): ((config
        address, function) a launch, (word, value) a word that depends on the stream, owners)."""
        if isinstance(self.shape, LaunchShape):
            config, owner = self.shape.native(stream)
            return remember_plan(self.plans, stream, ((config,), (), owner))
        return remember_plan(self.plans, stream, self.shape.template_plan(stream))

    def launch(self, pointers: Sequence[int]) -> PreparedLaunch | None:
        """This thread's launch set to a call with these data pointers (a tuple by pointer
        index; launch it before this thread's next call), or None when a check that depends
        on them fails, or the template is a staged kernel's (its stages' scratch is per stream:
        launched from a template by the native path only)."""
        if not isinstance(self.shape, LaunchShape):
            return None
        for index, first in self._aligned:
            if (pointers[index] + first) % 16:
                return None
        for index, low, high, other, other_low, other_high in self._disjoint:
            if index is not None:
                low, high = pointers[index] + low, pointers[index] + high
            if other is not None:
                other_low, other_high = pointers[other] + other_low, pointers[other] + other_high
            if low < other_high and other_low < high:
                return None
        if self._maps is not None:
            words = list(self._words)
            for word, index, difference in self._addresses:
                words[word] = pointers[index] + difference
            return self._maps.launch(self.shape, words)
        try:
            launch = self._per_thread.launch
        except AttributeError:
            launch = self._per_thread.launch = PreparedLaunch(self.shape, self._parameters.new())
        words = launch.block
        for word, index, difference in self._addresses:
            words[word] = pointers[index] + difference
        return launch


def _native_form(words: list[int], addresses: list, aligned: list, disjoint: list) -> bytes:
    """The template as `native_launch.c` reads it: int64s [len(words), len(addresses),
    len(aligned), len(disjoint), words..., then each tuple's items (a fixed span's index -1)],
    two's complement where a word or difference does not fit a signed one."""
    items = [len(words), len(addresses), len(aligned), len(disjoint), *words,
             *(item for group in (addresses, aligned, disjoint) for entry in group for item in entry)]
    return array("q", [-1 if item is None else item - (1 << 64) if item >= 1 << 63 else item
                       for item in items]).tobytes()
