"""The table's stream, read in a thread: windows, histories and live notices from it.

``xor_ack_dynamodb.events.StreamReader`` polls every shard (boto3, blocking), so it runs
in a thread of its own.  It reads the stream from its oldest record (24 hours: the
windows fill at once), then follows it every ``interval`` seconds; whether it has caught
up is its first round with nothing more to give.  For each record it decodes the events,
adds them to the windows and the counts, adds the record to its tag's history, and tells
the event loop which tags changed (the open pages refresh the chains they show).

A stream that cannot be read (none on the table, an error) is shown on the overview and
tried again, from where each shard was; the dashboard works without it, with no windows
and no histories.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xor_ack_dynamodb import events

from .counts import Move, moves_of
from .history import Entry, History, entries_of, is_chain_record
from .windows import Windows, WindowsView

log = logging.getLogger("xor_ack_dynamodb.dashboard")
#: Seconds between two looks for new shards, and before reading again after an error.
REFRESH_SHARDS = 10.0
RETRY = 5.0
#: Records added to the windows and histories per hold of the lock.
CHUNK = 100


@dataclass
class StreamStatus:
    arn: str | None = None
    caught_up: bool = False
    records: int = 0
    not_chains: int = 0  #: records of other items (a fleet's markers), skipped
    corrupt: int = 0
    error: str | None = None
    since: float | None = None


@dataclass
class Follower:
    """Reads the stream of one table until :meth:`stop`; thread-safe views of what it saw."""

    streams: Any
    partition_key: str
    windows: Windows
    history: History
    #: Called on the event loop with what the new records did to the counts and the tags
    #: that changed.
    on_records: Callable[[list[Move], set[str], bool], None]
    loop: asyncio.AbstractEventLoop
    interval: float = 0.5
    status: StreamStatus = field(default_factory=StreamStatus)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self, arn: str) -> None:
        self.status.arn = arn
        self.status.since = time.time()
        self._thread = threading.Thread(
            target=self._run, args=(arn,), name="xor-ack-dashboard-stream", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def view(self, now: float) -> WindowsView:
        with self._lock:
            return self.windows.view(now)

    def story(self, tag: str) -> Any:
        with self._lock:
            return self.history.of(tag)

    def _run(self, arn: str) -> None:
        # one reader for the whole run: after an error it goes on from where each shard
        # was, not from the oldest record (every history and count would take it twice)
        reader = events.StreamReader(self.streams, arn, from_start=True)
        while not self._stop.is_set():
            try:
                self._follow(reader)
            except Exception as exc:  # a network error, a stream gone: shown, tried again
                self.status.error = f"{type(exc).__name__}: {exc}"
                log.warning("reading the stream failed (again in %.0f s): %s", RETRY, exc)
                self._stop.wait(RETRY)

    def _follow(self, reader: events.StreamReader) -> None:
        reader.refresh()
        last_refresh = time.monotonic()
        while not self._stop.is_set():
            records, more = reader.poll()
            self._say_failing(reader.failing())
            if records:
                self._take(records)
            if not more:
                if not self.status.caught_up:
                    self.status.caught_up = True
                    self._notify([], set(), True)
                self._stop.wait(self.interval)
            if time.monotonic() - last_refresh > REFRESH_SHARDS:
                reader.refresh()
                last_refresh = time.monotonic()

    def _say_failing(self, failing: list[tuple[str, int, BaseException]]) -> None:
        """A shard whose reads fail (the reader tries it again at each poll) is said on the
        page, and logged once when it starts: the counts and histories stop meanwhile."""
        if not failing:
            self.status.error = None
            return
        _, _, error = failing[0]
        said = f"{type(error).__name__}: {error}"
        of = f"{len(failing)} shards" if len(failing) > 1 else "a shard"
        error_text = f"reading {of} failed, tried again at each poll ({said})"
        if self.status.error is None:
            log.warning("reading the stream failed: %s", said)
        self.status.error = error_text

    def _take(self, records: list[dict[str, Any]]) -> None:
        """Decode the records outside the lock (the slow part), then add them under it, a
        chunk at a time: a page that asks for the windows waits for one chunk at most."""
        found: list[Move] = []
        tags: set[str] = set()
        decoded: list[tuple[str, list[events.ChainEvent], list[Entry]]] = []
        for raw in records:
            self.status.records += 1
            try:
                record = events.parse(raw)
                if not is_chain_record(record):
                    self.status.not_chains += 1
                    continue
                chain_events = events.events_of(record, self.partition_key)
            except events.CorruptRecord:
                self.status.corrupt += 1
                continue
            tag = record.keys.get(self.partition_key, {}).get("S")
            if not isinstance(tag, str):
                self.status.corrupt += 1
                continue
            decoded.append((tag, chain_events, entries_of(record, chain_events)))
            found.extend(moves_of(record, chain_events, self.partition_key))
            tags.add(tag)
        for start in range(0, len(decoded), CHUNK):
            with self._lock:
                for tag, chain_events, entries in decoded[start : start + CHUNK]:
                    self.windows.extend(chain_events)
                    self.history.add(tag, entries)
        self._notify(found, tags, self.status.caught_up)

    def _notify(self, found: list[Move], tags: set[str], live: bool) -> None:
        try:
            self.loop.call_soon_threadsafe(self.on_records, found, tags, live)
        except RuntimeError:  # the loop closed: the dashboard is stopping
            self._stop.set()
