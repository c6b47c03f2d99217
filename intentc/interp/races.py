"""Detects conflicting plain accesses between unordered `parallel` iterations (§10).

Each access made inside `parallel` carries the path of iterations it runs in: one
(invocation, iteration) step per enclosing `parallel`. Two accesses are ordered when one
path is a prefix of the other, or when the paths first differ in which `parallel`
invocation they ran (those run one after the other). They are unordered when they first
differ in the iteration of the same invocation. An element written by one iteration and
read or written by an unordered one is a data race: the program is illegal, and the
interpreter reports it instead of picking an order. Atomics and scatter_reduce are the
sanctioned ways to share an address: atomics never race with atomics, but a plain access
and an atomic one of another iteration race when either writes (§11: the plain access is
not atomic), so atomics are logged apart; unique_store is tracked like a write. Readers
are remembered one per element (the last), so a race is found where the run exposes it,
not proven absent.
"""
from __future__ import annotations

from itertools import count

import numpy as np

from ..ir import errors
from .errors import InterpError

Step = tuple[int, str, tuple[int, ...]]   # (invocation, region label, iteration point)
NONE = -1


class RaceTracker:
    def __init__(self) -> None:
        self.path: list[Step] = []
        self._invocations = count()
        self._ids: dict[tuple[Step, ...], int] = {}
        self._paths: list[tuple[Step, ...]] = []
        self._logs: dict[int, tuple[np.ndarray, ...]] = {}

    def new_invocation(self) -> int:
        return next(self._invocations)

    def record(self, storage: np.ndarray, positions: np.ndarray, writes: bool, atomic: bool = False) -> None:
        if not self.path or positions.size == 0:
            return
        current = self._intern(tuple(self.path))
        logs = self._log(storage)
        plain_writer, plain_reader, atomic_writer, atomic_reader = logs
        self._check(plain_writer[positions], current, "written")
        if writes:
            self._check(plain_reader[positions], current, "read")
        if not atomic:
            self._check(atomic_writer[positions], current, "written atomically")
            if writes:
                self._check(atomic_reader[positions], current, "read atomically")
        logs[2 * atomic + (not writes)][positions] = current

    def _log(self, storage: np.ndarray) -> tuple[np.ndarray, ...]:
        """(plain writer, plain reader, atomic writer, atomic reader) of every element."""
        entry = self._logs.get(id(storage))
        if entry is None or entry[0] is not storage:
            entry = (storage, *(np.full(storage.size, NONE, np.int32) for _ in range(4)))
            self._logs[id(storage)] = entry
        return entry[1:]

    def _intern(self, path: tuple[Step, ...]) -> int:
        number = self._ids.get(path)
        if number is None:
            number = self._ids[path] = len(self._paths)
            self._paths.append(path)
        return number

    def _check(self, previous: np.ndarray, current: int, what: str) -> None:
        for other in np.unique(previous):
            if other in (NONE, current):
                continue
            clash = _unordered(self._paths[other], self._paths[current])
            if clash is not None:
                label, theirs, ours = clash
                raise InterpError(
                    errors.DATA_RACE,
                    f"element {what} by {label} iteration {list(theirs)} is accessed by iteration {list(ours)} "
                    "of the same `parallel`: unordered iterations conflict (§10)",
                    "give each iteration its own elements, or use scatter_reduce, unique_store or atomics")


def _unordered(first: tuple[Step, ...], second: tuple[Step, ...]):
    for a, b in zip(first, second):
        if a == b:
            continue
        if a[0] != b[0]:
            return None
        return a[1], a[2], b[2]
    return None
