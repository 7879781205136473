"""Open, overdue and failed now: index counts refreshed in the background, moved by the stream.

Counting 100,000 index entries takes seconds (``Select=COUNT`` pages of one shard after
another), too long for a page that must answer within a second.  So a background task
counts the three lists (every shard at once), waits five times as long as that took (at
least ``every`` seconds), and counts again; a page shows the last count, its age, and
what the stream said since: a ``created`` event adds an open chain, an ``acked`` /
``failed`` / ``timed_out`` one takes it away, a failure adds a failed chain, a failed
chain's tag created again takes that failed chain away.  Chains that become overdue by
the clock alone are not events: the overdue count is the last count's, less the chains
closed since (acked, failed, deleted) whose deadline had passed when the count began (the
record's old image says which).  An action (fail, touch, sweep) asks for a new count at
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
from dataclasses import dataclass, field, replace
from typing import Any

from xor_ack_dynamodb import ChainState, events
from xor_ack_dynamodb.dynamodb.item import decode
from xor_ack_dynamodb.dynamodb.together import every
from xor_ack_dynamodb.errors import CorruptItem

from .inventory import STATUSES, Inventory, Status

log = logging.getLogger("xor_ack_dynamodb.dashboard")


@dataclass(frozen=True, slots=True)
class Move:
    """What one event does to the counts, at ``time``: open and failed chains; ``closed``:
    a live chain ended or went, which the last count had overdue if its ``deadline`` (before
    this write) had passed when that count began."""

    time: float
    open: int = 0
    failed: int = 0
    closed: bool = False
    deadline: float | None = None
    #: ``time`` is a stream record's, rounded down (``events.RECORD_TIME_STEP``): a
    #: deletion's, whose item holds no time of it.
    rounded: bool = False

    def overdue(self, as_of: float | None) -> int:
        counted = as_of is not None and self.deadline is not None and self.deadline <= as_of
        return -1 if self.closed and counted else 0


def _chain(image: dict[str, Any] | None, partition_key: str) -> ChainState | None:
    if image is None:
        return None
    try:
        return decode(image, partition_key)
    except CorruptItem:  # not a chain's item: it moves no count
        return None


def moves_of(
    record: events.StreamRecord, found: list[events.ChainEvent], partition_key: str
) -> list[Move]:
    """How one stream record, whose events are ``found``, changes the counts."""
    old = _chain(record.old_image, partition_key)
    new = _chain(record.new_image, partition_key)
    out: list[Move] = []
    for event in found:
        same = old is not None and old.chain_id == event.chain_id
        deadline = old.deadline if old is not None and same else None
        if isinstance(event, (events.Expired, events.Deleted)):
            if event.state == "live":
                out.append(Move(event.time, open=-1, closed=True, deadline=deadline, rounded=True))
            elif event.state in ("failed", "timed_out"):
                out.append(Move(event.time, failed=-1, rounded=True))
        elif event.kind == "created":
            out.append(Move(event.time, open=1))
        elif event.kind == "acked":
            out.append(Move(event.time, open=-1, closed=True, deadline=deadline))
        elif event.kind in ("failed", "timed_out"):
            out.append(Move(event.time, open=-1, failed=1, closed=True, deadline=deadline))
    if old is not None and new is not None and old.chain_id != new.chain_id and old.failed:
        out.append(Move(new.created_at, failed=-1))  # its tag created again: no longer failed
    return out


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
    _moves: list[Move] = field(default_factory=list)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    error: str | None = None
    refreshes: int = 0

    def note(self, moves: list[Move]) -> None:
        """What the stream's records did (from the follower, on the event loop).

        A move whose time is rounded down is dated by the latest it may have happened
        (within its rounding, and not after it came): a deletion in the minute a count
        began (DynamoDB Local's record times are minutes) was taken for one before it, and
        the count kept the chain until the next one.  One just before a count that comes
        after it began is taken away twice, until the next count."""
        now = self.clock()
        for move in moves:
            if move.rounded:
                move = replace(move, time=min(move.time + events.RECORD_TIME_STEP, now))
            if self._as_of is None or move.time >= self._as_of:
                self._moves.append(move)

    def request(self) -> None:
        """Count again now (after an action)."""
        self._wake.set()

    async def refresh(self) -> None:
        started = self.clock()
        monotonic = time.monotonic()
        values = await every(self.inventory.count(s) for s in STATUSES)
        self._counted = dict(zip(STATUSES, values, strict=True))
        self._as_of = started
        self._took = time.monotonic() - monotonic
        self._moves = [m for m in self._moves if m.time >= started]
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
        changes: dict[Status, int] = {
            "open": sum(m.open for m in self._moves),
            "overdue": sum(m.overdue(self._as_of) for m in self._moves),
            "failed": sum(m.failed for m in self._moves),
        }
        for status in STATUSES:
            counted = self._counted.get(status)
            since = changes[status]
            value = None if counted is None else max(0, counted + since)
            out.append(Count(status, value, counted, self._as_of, self._took, since))
        return out
