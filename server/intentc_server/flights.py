"""Single-flight: concurrent callers with the same key share one run of the work.

The work runs in its own task, so a caller that goes away (a dropped connection) does not
cancel it for the others.
"""
from __future__ import annotations

import asyncio
from typing import Generic, TypeVar
from collections.abc import Awaitable, Callable

T = TypeVar("T")


class SingleFlight(Generic[T]):
    def __init__(self):
        self._flights: dict[object, asyncio.Task[T]] = {}

    def __len__(self) -> int:
        return len(self._flights)

    async def run(self, key: object, work: Callable[[], Awaitable[T]],
                  on_join: Callable[[], None] = lambda: None) -> tuple[T, bool]:
        """The work's result, and whether this caller joined a flight another started
        (`on_join` is called at once when it does)."""
        flight = self._flights.get(key)
        joined = flight is not None
        if joined:
            on_join()
        else:
            flight = asyncio.create_task(work())
            self._flights[key] = flight
            flight.add_done_callback(lambda _: self._flights.pop(key, None))
        return await asyncio.shield(flight), joined
