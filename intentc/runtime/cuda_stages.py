"""Launching a staged kernel (`launch.json` mapping `staged`, docs/gpu.md "Staged
programs"): its entries in order on one stream, with the scratch memory its grid-wide ops
need, whose address follows the kernel's own argument words."""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import numpy as np

from .cuda_driver import MAX_STREAMS, DeviceBuffer, PreparedLaunch, failure


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
    """Prepared launches run in order on one stream (the stages of one kernel launch), and the
    scratch memory they share (freed when the sequence goes). Shaped like one
    `PreparedLaunch` (`by_stream`, `bind`, a call) for the launch fast path (`load.py`)."""

    def __init__(self, launches: list[PreparedLaunch], scratch: DeviceBuffer):
        self.launches, self._scratch = launches, scratch
        self.by_stream: dict[int, Callable[[], int]] = {}

    def __call__(self, stream: int = 0) -> None:
        status = (self.by_stream.get(stream) or self.bind(stream))()
        if status:
            raise failure(status, "cuLaunchKernelEx")

    def bind(self, stream: int) -> Callable[[], int]:
        """The call of every stage on `stream`: the first failing launch's CUresult, else 0."""
        calls = [launch.by_stream.get(stream) or launch.bind(stream) for launch in self.launches]

        def run() -> int:
            for call in calls:
                status = call()
                if status:
                    return status
            return 0
        if len(self.by_stream) >= MAX_STREAMS:
            self.by_stream.clear()
        self.by_stream[stream] = run
        return run

    def __del__(self):
        with contextlib.suppress(Exception):    # at interpreter exit the driver may be gone first
            self._scratch.free()
