"""Launching a staged kernel (`launch.json` mapping `staged`, docs/gpu.md "Staged
programs"): its entries in order on one stream, with the scratch memory its grid-wide ops
need, whose address follows the kernel's own argument words."""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import numpy as np

from .cuda_driver import MAX_STREAMS, DeviceBuffer, LaunchShape, PreparedLaunch, failure, remember_plan


class StagedEntries:
    """The stage entries of a loaded module and the scratch size rule of `launch.json`."""

    def __init__(self, config, module, sm_count: int):
        self.functions = [module.function(stage["entry"]) for stage in config.stages]
        self.grids = [launch_grid(stage["grid"], sm_count) for stage in config.stages]
        self.scratch = config.scratch

    def words(self, slots: np.ndarray) -> int:
        """Scratch words for a launch whose argument words are `slots`: one a chunk (at least
        one chunk) and grid-wide op."""
        size = math.prod(int(slots[e[1]]) if isinstance(e, list) else int(e) for e in self.scratch["domain"])
        chunks = max(1, -(-size // self.scratch["chunk"]))
        return chunks * self.scratch["words_per_chunk"]

    def with_scratch(self, slots: np.ndarray) -> tuple[np.ndarray, DeviceBuffer]:
        """The argument words with the address of fresh scratch memory appended, and that memory."""
        scratch = DeviceBuffer(8 * self.words(slots))
        return np.append(slots, np.int64(np.uint64(scratch.address).view(np.int64))), scratch


def launch_grid(text: str, sm_count: int) -> tuple[int, int, int]:
    kind, _, number = text.partition(":")
    return (int(number) * sm_count if kind == "ctas_per_sm" else int(number), 1, 1)


class LaunchSequence:
    """Launches run in order on one stream (the stages of one kernel launch). Shaped like a
    `PreparedLaunch` for the launch fast path (`load.py`): it is its own `shape`, whose call
    bound to a stream runs every stage there (its `extra` is not read). Each stream gets
    scratch memory of its own (made at its first launch there, freed when the sequence goes):
    launches on one stream run in order, so they may share it; launches on two streams may
    run at once, so they must not."""

    extra = None

    def __init__(self, shapes: list[LaunchShape], slots: np.ndarray, status: int, stages: StagedEntries):
        self._shapes, self._slots, self._status, self._stages = shapes, slots, status, stages
        self._scratch: dict[int, DeviceBuffer] = {}
        self.shape = self
        self.by_stream: dict[int, Callable[[object], int]] = {}
        self.plans: dict[int, tuple] = {}
        self.scratch_word = len(slots)      # the parameter word holding the scratch memory's address

    def native_plan(self, stream: int) -> tuple:
        """How the native fast path runs the stages on `stream` (`native_launch.c`): (((config
        address, function, extra address) a stage), what owns them)."""
        run = self.by_stream.get(stream) or self.bind(stream)
        natives = [(launch.shape.native(stream), launch.extra.value) for launch in run.launches]  # type: ignore[attr-defined]
        plan = (tuple((*config, extra) for (config, _), extra in natives), (run, [owner for (_, owner), _ in natives]))
        return remember_plan(self.plans, stream, plan)

    def template_plan(self, stream: int) -> tuple:
        """A launch template's native plan on `stream` (`launch_template.CallTemplate`): ((config
        address, function) a stage, ((the scratch word, this stream's scratch address),), owners)."""
        natives = [shape.native(stream) for shape in self._shapes]
        return (tuple(config for config, _ in natives), ((self.scratch_word, self.scratch(stream).address),),
                (self, [owner for _, owner in natives]))

    def __call__(self, stream: int = 0) -> None:
        status = (self.by_stream.get(stream) or self.bind(stream))(self.extra)
        if status:
            raise failure(status, "cuLaunchKernelEx")

    def scratch(self, stream: int) -> DeviceBuffer:
        """The scratch memory of the launches on `stream`."""
        scratch = self._scratch.get(stream)
        if scratch is None:
            scratch = self._scratch[stream] = DeviceBuffer(8 * self._stages.words(self._slots))
        return scratch

    def bind(self, stream: int) -> Callable[[object], int]:
        """The call of every stage on `stream`: the first failing launch's CUresult, else 0."""
        words = [*self._slots.view(np.uint64).tolist(), self.scratch(stream).address, self._status]
        launches = [PreparedLaunch.of(shape, words) for shape in self._shapes]
        calls = [(launch.shape.by_stream.get(stream) or launch.shape.bind(stream), launch.extra) for launch in launches]

        def run(_extra: object) -> int:
            for call, extra in calls:
                status = call(extra)
                if status:
                    return status
            return 0
        run.launches = launches         # type: ignore[attr-defined]  # their words live as long as the call
        if len(self.by_stream) >= MAX_STREAMS:
            self.by_stream.clear()
        self.by_stream[stream] = run
        return run

    def __del__(self):
        with contextlib.suppress(Exception):    # at interpreter exit the driver may be gone first
            for scratch in self._scratch.values():
                scratch.free()
