"""What the stores report (the service turns it into Prometheus metrics; the default ignores
it), and the one error the shared store raises."""
from __future__ import annotations


class StoreEvents:
    def lookup(self, tier: str, namespace: str, hit: bool) -> None:
        """One read of one tier: found or not."""

    def integrity_failure(self, tier: str) -> None:
        """A record failed its sha256 check and was dropped."""

    def fallback(self, operation: str) -> None:
        """The shared tier was unreachable; the local tier served alone."""

    def evicted(self, count: int) -> None:
        """Records removed to stay under the size cap."""


class SharedStoreUnavailable(Exception):
    """The shared store could not be reached (or is in its back-off window after a failure)."""
