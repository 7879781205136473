"""Counts over Storm's windows, complete latency and acks per minute, from chain events.

Storm's UI shows a topology's acked / failed counts and complete latency over the last
10 minutes, 3 hours, a day and all time; the stream keeps 24 hours, so here the windows
are 10 minutes, 3 hours and 24 hours, by each event's own time (``created_at``,
``acked_at``, ``failed_at``, the removal's record time).  Each kind keeps its events'
times sorted, so a window's count is two bisections; acks keep their latency beside
their time, so a window's percentiles sort that window's latencies once.  Events older
than 24 hours are dropped; each event is counted once, by its id.

Not thread-safe by itself: :class:`~.follower.Follower` adds under its lock.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass

from xor_ack_dynamodb import events

#: (label, seconds) of each window, shortest first.
WINDOWS: tuple[tuple[str, int], ...] = (("10 min", 600), ("3 h", 10_800), ("24 h", 86_400))
#: The kinds a window counts (an expired chain counts only when it expired live: lost).
COUNTED: tuple[str, ...] = ("created", "acked", "failed", "timed_out", "expired")
#: Upper bounds (seconds) of the latency histogram's bins; the last bin has none.
BINS: tuple[float, ...] = (
    0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 60, 300, 900, 3600, 10_800,
)  # fmt: skip
PERCENTILES = (50, 90, 99)
#: Minutes the acks-per-minute chart shows.
CHART_MINUTES = 60
_DAY = 86_400


@dataclass(frozen=True)
class WindowCounts:
    label: str
    seconds: int
    counts: dict[str, int]
    #: p50, p90, p99 of the complete latency of the window's acks (None: no acks).
    latency: dict[str, float | None]


@dataclass(frozen=True)
class Bin:
    label: str
    count: int


@dataclass(frozen=True)
class WindowsView:
    windows: list[WindowCounts]
    #: The latency histogram of the last 24 hours.
    histogram: list[Bin]
    #: (minute start, acked, failed incl. timed out) for the last CHART_MINUTES minutes.
    per_minute: list[tuple[float, int, int]]
    total_events: int


def percentile(ordered: list[float], p: float) -> float | None:
    """Nearest rank, as ``xor-ack chain stats`` reports it."""
    if not ordered:
        return None
    return ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1]


def bin_label(index: int) -> str:
    def short(seconds: float) -> str:
        if seconds < 1:
            return f"{seconds * 1000:g} ms"
        if seconds < 60:
            return f"{seconds:g} s"
        if seconds < 3600:
            return f"{seconds / 60:g} min"
        return f"{seconds / 3600:g} h"

    if index == 0:
        return f"< {short(BINS[0])}"
    if index == len(BINS):
        return f"≥ {short(BINS[-1])}"
    return f"{short(BINS[index - 1])} to {short(BINS[index])}"


class Windows:
    """Event times per kind, latencies per ack, pruned to the last 24 hours."""

    def __init__(self, seen: int = 200_000) -> None:
        self._times: dict[str, list[float]] = {kind: [] for kind in COUNTED}
        self._acks: list[tuple[float, float]] = []  # (acked_at, latency), sorted
        self._seen = events.RecentIds(seen)
        self.total = 0

    def add(self, event: events.ChainEvent) -> bool:
        """Count ``event`` (once by its id); True if it changed a count."""
        if event.id in self._seen:
            return False
        self._seen.add(event.id)
        if isinstance(event, events.Expired) and not event.lost:
            return False  # a tombstone collected: its chain's end was its own event
        times = self._times.get(event.kind)
        if times is None:
            return False  # deleted: a caller's doing, not a chain's outcome
        bisect.insort(times, event.time)
        if isinstance(event, events.Acked) and event.latency is not None:
            bisect.insort(self._acks, (event.time, event.latency))
        self.total += 1
        return True

    def extend(self, chain_events: Iterable[events.ChainEvent]) -> bool:
        changed = False
        for event in chain_events:
            changed = self.add(event) or changed
        return changed

    def prune(self, now: float) -> None:
        """Forget what is older than the longest window."""
        horizon = now - _DAY
        for times in self._times.values():
            del times[: bisect.bisect_left(times, horizon)]
        del self._acks[: bisect.bisect_left(self._acks, (horizon, -math.inf))]

    def _since(self, times: list[float], start: float) -> int:
        return len(times) - bisect.bisect_left(times, start)

    def view(self, now: float) -> WindowsView:
        self.prune(now)
        windows = []
        for label, seconds in WINDOWS:
            start = now - seconds
            counts = {kind: self._since(times, start) for kind, times in self._times.items()}
            first = bisect.bisect_left(self._acks, (start, -math.inf))
            ordered = sorted(latency for _, latency in self._acks[first:])
            latency = {f"p{p}": percentile(ordered, p) for p in PERCENTILES}
            windows.append(WindowCounts(label, seconds, counts, latency))
        bins = [0] * (len(BINS) + 1)
        for _, took in self._acks:
            bins[bisect.bisect_right(BINS, took)] += 1
        histogram = [Bin(bin_label(i), n) for i, n in enumerate(bins)]
        return WindowsView(windows, histogram, self._per_minute(now), self.total)

    def _per_minute(self, now: float) -> list[tuple[float, int, int]]:
        this_minute = math.floor(now / 60) * 60
        first = this_minute - 60 * (CHART_MINUTES - 1)
        series = []
        failed = self._times["failed"], self._times["timed_out"]
        for minute in range(int(first), int(this_minute) + 1, 60):
            acked = self._between(self._times["acked"], minute, minute + 60)
            lost = sum(self._between(times, minute, minute + 60) for times in failed)
            series.append((float(minute), acked, lost))
        return series

    @staticmethod
    def _between(times: list[float], start: float, end: float) -> int:
        return bisect.bisect_left(times, end) - bisect.bisect_left(times, start)
