"""The in-memory trackers' listeners, as the same typed events (``on("event", fn)``).

``Ack.on("event", fn)`` and ``Acker.on("event", fn)`` register one adapter in the
tracker's ``acked`` and ``failed`` listener lists: the trackers' hot paths are
unchanged (an event object is made only when an ``"event"`` listener is registered),
and the ``"acked"`` / ``"failed"`` listeners keep their signatures.

What the in-memory trackers can say: ``acked``, and ``failed`` / ``timed_out``
(reason ``"failed"``, ``"overflow"``; ``"timeout"`` is :class:`TimedOut`).  They do not
report ``created`` (the caller of ``add`` knows), nor ``expired`` / ``deleted`` (no
TTL, no delete).  ``chain_id`` is ``b""``, ``time`` the wall clock when the event is
made; ``Acked.latency`` is None.  An :class:`~xor_ack_dynamodb.memory.acker.Acker` tree's
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


class _Adapter:
    """A tracker listener that makes an event and calls ``fn`` (see :func:`adapts`)."""

    __slots__ = ("fn",)

    def __init__(self, fn: EventListener) -> None:
        self.fn = fn


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
        self.fn(Acked(tag, b"", time.time()))


class AckFailed(_Adapter):
    """``Ack``'s ``failed`` listener ``fn(tag, reason)`` -> :class:`Failed` / :class:`TimedOut`."""

    __slots__ = ()

    def __call__(self, tag: str, reason: str) -> None:
        self.fn(failure(tag, b"", time.time(), str(reason)))


class AckerAcked(_Adapter):
    """``Acker``'s ``acked`` listener ``fn(Acked)`` -> :class:`Acked` (tag ``str(anchor_id)``)."""

    __slots__ = ()

    def __call__(self, done: Any) -> None:
        self.fn(Acked(str(done.anchor_id), b"", time.time()))


class AckerFailed(_Adapter):
    """``Acker``'s ``failed`` listener ``fn(Nacked)`` -> :class:`Failed` / :class:`TimedOut`."""

    __slots__ = ()

    def __call__(self, nack: Any) -> None:
        self.fn(failure(str(nack.anchor_id), b"", time.time(), str(nack.reason)))


def check_listener(listener: object) -> EventListener:
    """``listener``, if it can be called; ``InvalidListener`` otherwise.

    An ``async def`` function is refused too: the trackers call their listeners and do
    not await them, so it would only make a coroutine and never run (events lost).
    """
    InvalidListener.check(listener)
    return cast(EventListener, listener)
