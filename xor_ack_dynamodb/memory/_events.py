"""The in-memory trackers' listeners, as the same typed events (``on("event", fn)``).

``Ack.on("event", fn)`` and ``Acker.on("event", fn)`` register one adapter in the
tracker's ``acked`` and ``failed`` listener lists: the trackers' hot paths are
unchanged (an event object is made only when an ``"event"`` listener is registered),
and the ``"acked"`` / ``"failed"`` listeners keep their signatures.

What the in-memory trackers can say: ``acked``, and ``failed`` / ``timed_out``
(reason ``"failed"``, ``"overflow"``; ``"timeout"`` is :class:`TimedOut`).  They do not
report ``created`` (the caller of ``add`` knows), nor ``expired`` / ``deleted`` (no
TTL, no delete).  ``chain_id`` is ``b""``, ``time`` the wall clock when the event is
made (one event, so one ``id``, for all of a tracker's ``"event"`` listeners);
``Acked.latency`` is None.  An :class:`~xor_ack_dynamodb.memory.acker.Acker` tree's
``tag`` is ``str(anchor_id)`` -- the tag a ``DynamoDBSink`` with an empty prefix gives
the same tree.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from ..errors import InvalidListener
from ..lifecycle import Acked, ChainEvent, failure

EventListener = Callable[[ChainEvent], object]


class _Round:
    """The event of the transition a tracker's listeners are being called for, made by the
    first adapter called and handed to the others called with the same arguments: one
    ``time``, so one ``id``, for one transition seen by several ``on("event", fn)``.

    An adapter called again (the tracker's next call of its listeners, even with the same
    tag object) makes a new event."""

    __slots__ = ("args", "event", "served")

    def __init__(self) -> None:
        self.args: tuple[object, ...] = ()
        self.event: ChainEvent | None = None
        self.served: set[_Adapter] = set()

    def event_for(
        self, adapter: _Adapter, args: tuple[object, ...], make: Callable[[], ChainEvent]
    ) -> ChainEvent:
        same = len(args) == len(self.args)
        same = same and all(a is b for a, b in zip(args, self.args, strict=True))
        if self.event is None or adapter in self.served or not same:
            self.args, self.event, self.served = args, make(), set()
        self.served.add(adapter)
        return self.event


class _Adapter:
    """A tracker listener that makes an event and calls ``fn`` (see :func:`adapts`)."""

    __slots__ = ("fn", "round")

    def __init__(self, fn: EventListener, round: _Round) -> None:
        self.fn = fn
        self.round = round


def round_in(listeners: tuple[object, ...]) -> _Round:
    """The round the adapters in ``listeners`` share (a new one if there are none)."""
    return next((a.round for a in listeners if isinstance(a, _Adapter)), None) or _Round()


def adapts(registered: object, fn: object) -> bool:
    """Is ``registered`` (an ``acked`` / ``failed`` listener) ``on("event", fn)``'s adapter?

    Only ``off("event", fn)`` asks: an adapter is never equal to ``fn`` itself, so that
    ``off("acked", fn)`` leaves ``fn``'s event registration alone, and ``off("event", fn)``
    a plain ``on("acked", fn)`` of the same callable.
    """
    return isinstance(registered, _Adapter) and bool(registered.fn == fn)


class AckAcked(_Adapter):
    """``Ack``'s ``acked`` listener ``fn(tag)`` -> :class:`Acked`."""

    __slots__ = ()

    def __call__(self, tag: str) -> None:
        self.fn(self.round.event_for(self, (tag,), lambda: Acked(tag, b"", time.time())))


class AckFailed(_Adapter):
    """``Ack``'s ``failed`` listener ``fn(tag, reason)`` -> :class:`Failed` / :class:`TimedOut`."""

    __slots__ = ()

    def __call__(self, tag: str, reason: str) -> None:
        def make() -> ChainEvent:
            return failure(tag, b"", time.time(), str(reason))

        self.fn(self.round.event_for(self, (tag, reason), make))


class AckerAcked(_Adapter):
    """``Acker``'s ``acked`` listener ``fn(Acked)`` -> :class:`Acked` (tag ``str(anchor_id)``)."""

    __slots__ = ()

    def __call__(self, done: Any) -> None:
        def make() -> ChainEvent:
            return Acked(str(done.anchor_id), b"", time.time())

        self.fn(self.round.event_for(self, (done,), make))


class AckerFailed(_Adapter):
    """``Acker``'s ``failed`` listener ``fn(Nacked)`` -> :class:`Failed` / :class:`TimedOut`."""

    __slots__ = ()

    def __call__(self, nack: Any) -> None:
        def make() -> ChainEvent:
            return failure(str(nack.anchor_id), b"", time.time(), str(nack.reason))

        self.fn(self.round.event_for(self, (nack,), make))


def check_listener(listener: object) -> EventListener:
    """``listener``, if it can be called; ``InvalidListener`` otherwise.

    An ``async def`` function is refused too: the trackers call their listeners and do
    not await them, so it would only make a coroutine and never run (events lost).
    """
    InvalidListener.check(listener)
    return cast(EventListener, listener)
