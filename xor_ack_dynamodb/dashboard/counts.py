"""Open, overdue and failed now: index counts refreshed in the background, moved by the stream.

Counting 100,000 index entries takes seconds (``Select=COUNT`` pages of one shard after
another), too long for a page that must answer within a second.  So a background task
counts the three lists (every shard at once), waits five times as long as that took (at
least ``every`` seconds), and counts again; a page shows the last count, its age, and
what the stream said since: a ``created`` event adds an open chain, an ``acked`` /
``failed`` / ``timed_out`` one takes it away, a failure adds a failed chain.  Chains that
become overdue by the clock alone are not events: the overdue count is the last count's,
less the chains timed out since.  An action (fail, touch, sweep) asks for a new count at
once.

An event moves a count when it happened after the count began (by the event's own time);
one that happened while the count ran may be in both, until the next count.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from xor_ack_dynamodb import events

from .inventory import STATUSES, Inventory, Status

log = logging.getLogger("xor_ack_dynamodb.dashboard")

#: What each event kind does to the counts: (open, overdue, failed).
_MOVES: dict[str, tuple[int, int, int]] = {
    "created": (1, 0, 0),
    "acked": (-1, 0, 0),
    "failed": (-1, 0, 1),
    "timed_out": (-1, -1, 1),
}


def moves_of(event: events.ChainEvent) -> tuple[int, int, int]:
    """How ``event`` changes (open, overdue, failed)."""
    if isinstance(event, (events.Expired, events.Deleted)):
        if event.state == "live":
            return (-1, 0, 0)
        return (0, 0, -1) if event.state in ("failed", "timed_out") else (0, 0, 0)
    return _MOVES.get(event.kind, (0, 0, 0))


@dataclass(frozen=True)
class Count:
    status: Status
    #: The count with the stream's changes since it began (None: not counted yet).
    value: int | None
    counted: int | None
    #: When the count began, and how long it took (seconds).
    as_of: float | None
    took: float | None
    since: int = 0  #: what the stream added (or took away) since


@dataclass
class Counts:
    """The three counts of one table, kept fresh by :meth:`run`."""

    inventory: Inventory
    every: float = 5.0
    clock: Callable[[], float] = time.time
    on_change: Callable[[], None] = lambda: None
    _counted: dict[Status, int] = field(default_factory=dict)
    _as_of: float | None = None
    _took: float | None = None
    _moves: list[tuple[float, tuple[int, int, int]]] = field(default_factory=list)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    error: str | None = None
    refreshes: int = 0

    def note(self, chain_events: list[events.ChainEvent]) -> None:
        """The stream's events (from the follower, on the event loop)."""
        for event in chain_events:
            moves = moves_of(event)
            if moves != (0, 0, 0) and (self._as_of is None or event.time >= self._as_of):
                self._moves.append((event.time, moves))

    def request(self) -> None:
        """Count again now (after an action)."""
        self._wake.set()

    async def refresh(self) -> None:
        started = self.clock()
        monotonic = time.monotonic()
        values = await asyncio.gather(*(self.inventory.count(s) for s in STATUSES))
        self._counted = dict(zip(STATUSES, values, strict=True))
        self._as_of = started
        self._took = time.monotonic() - monotonic
        self._moves = [(t, m) for t, m in self._moves if t >= started]
        self.refreshes += 1
        self.error = None
        self.on_change()

    async def run(self) -> None:
        """Count, wait, count again, until cancelled; an error is shown, then retried."""
        while True:
            self._wake.clear()
            try:
                await self.refresh()
                pause = max(self.every, 5 * (self._took or 0.0))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # shown on the overview, retried
                self.error = f"{type(exc).__name__}: {exc}"
                log.warning("counting the indexes failed: %s", self.error)
                self.on_change()
                pause = max(self.every, 10.0)
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for loses a cancel that
            # comes as the wake-up does (an action's recount, then close()), and run() went on
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(pause):
                    await self._wake.wait()

    def now(self) -> list[Count]:
        out = []
        for i, status in enumerate(STATUSES):
            counted = self._counted.get(status)
            since = sum(m[i] for _, m in self._moves)
            value = None if counted is None else max(0, counted + since)
            out.append(Count(status, value, counted, self._as_of, self._took, since))
        return out
