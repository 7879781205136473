"""Live updates: server-sent events telling open pages what to fetch again.

Two kinds of message, both small: ``overview`` (the counts or the windows moved) and
``changed`` (a JSON list of the tags the stream just wrote: a page showing one of them
fetches its live part again).  Neither carries the data itself: pages fetch their
HTML fragment, rendered and escaped by the same templates as the page.

Notices are coalesced: ``overview`` at most every ``overview_every`` seconds, the tags
of ``changed`` gathered for ``tags_every`` seconds.  A subscriber that falls behind
(its queue full) is told to ``resync``: refresh whatever it shows.  Each stream sends a
comment every 15 seconds so that proxies keep it open, and ends when the dashboard
closes, or after ``LIFETIME`` seconds with an ``again`` message (the page opens a new
one at once, and fetches its part again): a server asked to stop waits for open
responses before it runs the lifespan's shutdown that closes the dashboard, so a
service that mounts it stops within ``LIFETIME`` seconds with pages open.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

HEARTBEAT = 15.0
#: Seconds one stream lasts at most (see the module docstring).
LIFETIME = 20.0
QUEUE = 64
#: Tags per ``changed`` message at most; more become a ``resync``.
MAX_TAGS = 500
#: What :meth:`Broadcaster.close` puts in every queue: the stream ends.
_CLOSE = ("close", "")


@dataclass
class Broadcaster:
    overview_every: float = 1.0
    tags_every: float = 0.1
    lifetime: float = LIFETIME
    _subscribers: set[asyncio.Queue[tuple[str, str]]] = field(default_factory=set)
    _tags: set[str] = field(default_factory=set)
    _overview_due: bool = False
    _flush: asyncio.TimerHandle | None = None
    _last_overview: float = 0.0
    _closed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def overview(self) -> None:
        self._overview_due = True
        self._schedule()

    def changed(self, tags: set[str]) -> None:
        if tags:
            self._tags.update(tags)
            self._schedule()

    def _schedule(self) -> None:
        if self._flush is not None or self._closed.is_set():
            return
        loop = asyncio.get_running_loop()
        wait = self.tags_every
        if self._overview_due and not self._tags:
            wait = max(wait, self._last_overview + self.overview_every - loop.time())
        self._flush = loop.call_later(max(0.0, wait), self._send)

    def _send(self) -> None:
        self._flush = None
        loop = asyncio.get_running_loop()
        if self._tags:
            tags = sorted(self._tags)
            self._tags.clear()
            if len(tags) > MAX_TAGS:
                self._publish("resync", "")
            else:
                self._publish("changed", json.dumps(tags))
        if self._overview_due:
            if loop.time() - self._last_overview >= self.overview_every:
                self._overview_due = False
                self._last_overview = loop.time()
                self._publish("overview", "")
            else:
                self._schedule()

    def _publish(self, kind: str, data: str) -> None:
        for queue in list(self._subscribers):
            try:
                queue.put_nowait((kind, data))
            except asyncio.QueueFull:
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait(("resync", ""))

    def close(self) -> None:
        """End every stream (the server is stopping)."""
        self._closed.set()
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        for queue in list(self._subscribers):
            while not queue.empty():
                queue.get_nowait()
            queue.put_nowait(_CLOSE)

    async def stream(self) -> AsyncIterator[str]:
        """One subscriber's server-sent events, until the dashboard closes."""
        queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue(QUEUE)
        self._subscribers.add(queue)
        loop = asyncio.get_running_loop()
        ends = loop.time() + self.lifetime
        try:
            yield "retry: 2000\n\n"
            while not self._closed.is_set():
                left = ends - loop.time()
                if left <= 0:
                    yield "event: again\ndata: \n\n"
                    return
                try:  # asyncio.timeout: wait_for (3.11) could lose the browser's leaving
                    async with asyncio.timeout(min(HEARTBEAT, left)):
                        message = await queue.get()
                except TimeoutError:
                    if ends - loop.time() > 0:
                        yield ": keep-alive\n\n"
                    continue
                if message is _CLOSE:
                    return
                yield f"event: {message[0]}\ndata: {message[1]}\n\n"
        finally:
            self._subscribers.discard(queue)
