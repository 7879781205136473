"""Event listeners of the in-memory trackers (``Ack``, ``Acker``): call all, then raise.

A tracker forgets a finished chain *before* it calls the listeners, so a
listener that raises cannot lose it.  The other listeners still run; then the
exception reaches whoever caused the event (one exception as itself, several
as an ``ExceptionGroup``).  A ``BaseException`` that is not an ``Exception``
(``KeyboardInterrupt``, ``SystemExit``) is not caught and stops at once.

Registration is checked here too (:func:`registers_acked`), so that both
trackers refuse the same mistakes with the same errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import (
    TYPE_CHECKING,
    ClassVar,
    Generic,
    Literal,
    NoReturn,
    SupportsIndex,
    TypeVar,
    cast,
    overload,
)

from ..errors import InvalidArgument
from ._events import adapts, check_listener

if TYPE_CHECKING:
    from ._events import EventListener

A = TypeVar("A", bound=Callable[..., object])
F = TypeVar("F", bound=Callable[..., object])


def call_all(
    listeners: tuple[Callable[..., object], ...],
    args: tuple[object, ...],
    errors: list[Exception] | None = None,
) -> list[Exception] | None:
    """Call every listener with ``args``; return what they raised, added to ``errors``."""
    for listener in listeners:
        try:
            listener(*args)
        except Exception as exc:
            errors = [exc] if errors is None else [*errors, exc]
    return errors


def raise_errors(errors: list[Exception] | None, event: str) -> None:
    """Raise what :func:`call_all` collected, if anything."""
    if errors:
        if len(errors) == 1:
            raise errors[0]
        raise ExceptionGroup(f"several {event!r} listeners raised", errors)


def registers_acked(event: object, listener: object) -> bool:
    """Check an ``on(event, listener)`` call: True for ``"acked"``, False for ``"failed"``.

    ``InvalidListener`` if ``listener`` is not callable, ``InvalidArgument`` for another event.
    """
    check_listener(listener)
    if event not in ("acked", "failed"):
        raise InvalidArgument(f'event must be "acked", "failed" or "event", not {event!r}')
    return event == "acked"


class Listeners(Generic[A, F]):
    """``on(event, listener)`` and ``off`` of both in-memory trackers: ``"acked"`` listeners
    (``A``) in ``_acked_listeners``, ``"failed"`` ones (``F``) in ``_failed_listeners``."""

    if not TYPE_CHECKING:
        __slots__ = ()  # the trackers keep the tuples (Ack: in its core's slots)

    _acked_listeners: tuple[A, ...]
    _failed_listeners: tuple[F, ...]
    #: The names, in ``_events``, of this tracker's adapters from its
    #: ``acked`` / ``failed`` listener calls to the typed events.
    _event_adapters: ClassVar[tuple[str, str]]

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        """No tracker is copied or pickled (the C core cannot be): it holds live chains,
        listeners and maybe a ticker thread (a copy of an ``Acker`` shared its trees and kept
        counters of its own); make a new one instead."""
        raise TypeError(
            f"cannot pickle or copy {type(self).__name__!r}: a tracker holds live chains and "
            "listeners; make a new one"
        )

    @overload
    def on(self, event: Literal["acked"], listener: A) -> A: ...
    @overload
    def on(self, event: Literal["failed"], listener: F) -> F: ...
    @overload
    def on(self, event: Literal["event"], listener: EventListener) -> EventListener: ...
    def on(self, event: str, listener: A | F | EventListener) -> A | F | EventListener:
        """Call ``listener`` when a chain is acked (``"acked"``) or fails (``"failed"``).

        ``Ack`` calls ``listener(tag)`` / ``listener(tag, reason)``; the acker
        ``fn(Acked)`` / ``fn(Nacked)``.  Listeners run after the tracker has
        forgotten the chain, in the order they were added.  If one raises, the
        others still run, then the exception is raised to whoever caused the event
        (``stamp``, ``add``, ``fail``, ``tick``, or the acker's message); several
        become an ``ExceptionGroup``.  The chain is finished either way.

        ``"event"``: ``fn(event)`` with the typed events of :mod:`xor_ack_dynamodb.events`
        (``Acked``, ``Failed``, ``TimedOut``), the ones the DynamoDB stream gives; it is
        registered as one ``acked`` and one ``failed`` listener, so nothing is made for
        events while none is registered.
        """
        if event == "event":
            from . import _events as trackers

            fn = trackers.check_listener(listener)
            acked, failed = (getattr(trackers, name) for name in self._event_adapters)
            made = acked(fn, trackers.round_in(self._acked_listeners))
            self._acked_listeners = (*self._acked_listeners, cast(A, made))
            made = failed(fn, trackers.round_in(self._failed_listeners))
            self._failed_listeners = (*self._failed_listeners, cast(F, made))
            return listener
        if registers_acked(event, listener):
            self._acked_listeners = (*self._acked_listeners, cast(A, listener))
        else:
            self._failed_listeners = (*self._failed_listeners, cast(F, listener))
        return listener

    def off(
        self, event: Literal["acked", "failed", "event"], listener: Callable[..., object]
    ) -> bool:
        """Remove one registration of ``listener``; False if it was not registered.

        ``"event"`` removes the adapters of one ``on("event", listener)``, and only them.
        """
        if event == "event":
            acked = self._off("acked", listener, adapted=True)
            return self._off("failed", listener, adapted=True) and acked
        if event not in ("acked", "failed"):
            raise InvalidArgument(f'event must be "acked", "failed" or "event", not {event!r}')
        return self._off(event, listener, adapted=False)

    def _off(
        self, event: Literal["acked", "failed"], listener: Callable[..., object], adapted: bool
    ) -> bool:
        """Remove the first ``event`` listener that is ``listener`` (``adapted``: its adapter)."""
        if event == "acked":
            listeners: tuple[Callable[..., object], ...] = self._acked_listeners
        else:
            listeners = self._failed_listeners
        for i, registered in enumerate(listeners):
            if adapts(registered, listener) if adapted else registered == listener:
                remaining = listeners[:i] + listeners[i + 1 :]
                if event == "acked":
                    self._acked_listeners = cast(tuple[A, ...], remaining)
                else:
                    self._failed_listeners = cast(tuple[F, ...], remaining)
                return True
        return False
