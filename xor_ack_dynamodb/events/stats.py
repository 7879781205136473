"""Counts and complete-latency percentiles over a run of events (``xor-ack chain stats``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..lifecycle import Acked, ChainEvent, Expired

#: The percentiles of the complete latency a summary reports.
PERCENTILES = (50, 90, 99)


def percentile(sorted_values: list[float], p: float) -> float | None:
    """The nearest-rank ``p``-th percentile of ascending values; None when there are none."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass
class Summary:
    """How many chains were created, acked, failed, timed out, expired, deleted.

    ``expired`` counts chains that expired live (work lost); ``tombstones_expired``
    the finished chains whose tombstones TTL removed.  Each event is counted once
    by its id, so a record read twice does not count twice.
    """

    created: int = 0
    acked: int = 0
    failed: int = 0
    timed_out: int = 0
    expired: int = 0
    tombstones_expired: int = 0
    deleted: int = 0
    corrupt: int = 0
    latencies: list[float] = field(default_factory=list, repr=False)
    _ids: set[str] = field(default_factory=set, repr=False)

    def add(self, event: ChainEvent) -> None:
        if event.id in self._ids:
            return
        self._ids.add(event.id)
        if isinstance(event, Expired) and not event.lost:
            self.tombstones_expired += 1
        else:
            setattr(self, event.kind, getattr(self, event.kind) + 1)
        if isinstance(event, Acked) and event.latency is not None:
            self.latencies.append(event.latency)

    def extend(self, events: Iterable[ChainEvent]) -> Summary:
        for event in events:
            self.add(event)
        return self

    def latency(self) -> dict[str, float | None]:
        """``{"p50": ..., "p90": ..., "p99": ...}`` in seconds (None without acks)."""
        ordered = sorted(self.latencies)
        return {f"p{p}": percentile(ordered, p) for p in PERCENTILES}

    def as_dict(self) -> dict[str, object]:
        return {
            "created": self.created,
            "acked": self.acked,
            "failed": self.failed,
            "timed_out": self.timed_out,
            "expired": self.expired,
            "tombstones_expired": self.tombstones_expired,
            "deleted": self.deleted,
            "corrupt_records": self.corrupt,
            "complete_latency": self.latency(),
        }
