"""The Python side of :class:`xor_ack_dynamodb.memory.ack.Ack`, shared by its two cores.

``PyAck`` (pure Python) and ``CAck`` (C) differ only in their hot path,
``add`` and ``stamp`` of the plain case; everything else is
:class:`_AckMethods`: configuration, inspection, listeners, the slow paths
(errors, early stamps, overflow), ``fail``, ``reset_timeout`` and ``tick``.
Where a chain sits and when it expires is decided by one engine,
:class:`~xor_ack_dynamodb.memory._generations.Generations` (the ``Acker``'s too);
this module decides what the tracker makes of it (events and counters).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from ..errors import (
    BufferLengthsUnequal,
    InvalidTag,
    InvalidTimeout,
    TagExists,
)
from ..stamps import Stamp, as_stamp
from ._ack_report import AckedListener, AckStats, FailedListener, FailReason, counters_of
from ._generations import Generations, GenerationsConfig, check_buckets
from ._listeners import Listeners, call_all, raise_errors
from ._ticker import Ticker

if TYPE_CHECKING:
    from ._ackcore import CoreAttributes, EntryLike
else:
    # Kept by the core (C attributes or PyAck slots), read and written here too: the
    # stubs declare them once (``_ackcore.pyi``); nothing to inherit at run time.
    CoreAttributes = object

#: Entry flags (the same values as ``_ackcore.ADDED`` / ``_ackcore.FAILED``).
ADDED = 1
FAILED = 2

_from_bytes = int.from_bytes
perf_counter = time.perf_counter


def check_tag(tag: object) -> str:
    if not isinstance(tag, str) or not tag:
        raise InvalidTag(f"a tag must be a non-empty str, not {tag!r}")
    return tag


def _checked(tag: object, stamp: object) -> tuple[str, int, int]:
    """Validate a call's tag and stamp: (tag, the stamp as an int, its length in bytes)."""
    tag = check_tag(tag)  # the tag first, as before: a bad tag wins over a bad stamp
    checked = as_stamp(stamp)
    return tag, _from_bytes(checked, "big"), len(checked)


def _positive_seconds(name: str, value: object) -> float:
    """``value`` as seconds (a finite number > 0, not a bool); else ``InvalidTimeout``.

    An int too big for a float (``10**400``) is refused alike, not an ``OverflowError``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidTimeout(f"{name} must be a finite number of seconds > 0, not {value!r}")
    try:
        seconds = float(value)
    except OverflowError as exc:  # not repr'd: an int of over 4300 digits cannot be
        raise InvalidTimeout(
            f"{name} must be a finite number of seconds > 0, not an int too big for a float"
        ) from exc
    if not math.isfinite(seconds) or seconds <= 0:
        raise InvalidTimeout(f"{name} must be a finite number of seconds > 0, not {value!r}")
    return seconds


def _core_high_water(high_water: int | None) -> int:
    """The cores' copy of the high-water mark: -1 for no limit.

    A mark of ``sys.maxsize`` or more is no limit either (no dict holds that many
    entries), so both cores treat it as -1: the C core keeps the mark as a
    ``Py_ssize_t``, and would overflow on it.  ``Ack.high_water`` still reports the value given.
    """
    return -1 if high_water is None or high_water >= sys.maxsize else high_water


#: The attributes that only the Python side uses (the core's are in ``_ackcore.Core``).
PYTHON_SLOTS = (
    "_dropped",
    "_expired",
    "_failed",
    "_failed_listeners",
    "_generations",
    "_orphaned",
    "_overflowed",
    "_tick_interval",
    "_timeout",
    "_unclaimed",
    "__weakref__",
)


class _AckMethods(GenerationsConfig, Listeners[AckedListener, FailedListener], CoreAttributes):
    """Everything of :class:`Ack` except the hot path (``add`` / ``stamp``).

    Shared by both cores: :class:`PyAck` (pure Python) and ``CAck`` (C).  The
    cores call ``_add_slow`` / ``_stamp_slow`` for every call that is not the
    plain case (errors, early stamps, overflow, unusual types).

    The cores' fast paths read ``_chains``, ``_buckets``, ``_gen`` and
    ``_high_water``: they are the engine's own containers, and copies of its
    generation and high-water mark (``tick`` refreshes ``_gen``).
    """

    if not TYPE_CHECKING:
        # No instance __dict__: then ``ack.add`` needs no dict probe to rule out
        # an instance attribute shadowing the method (that probe cost ~15% of a
        # C-core operation).  Hidden from mypy, which would check every
        # assignment below against this empty tuple instead of the subclasses'.
        __slots__ = ()

    implementation: ClassVar[str]
    _entry_type: ClassVar[type[EntryLike]]
    _event_adapters: ClassVar[tuple[str, str]] = ("AckAcked", "AckFailed")

    def __init__(
        self,
        timeout: float | None = None,
        *,
        buckets: int = 3,
        high_water: int | None = None,
    ) -> None:
        """A tracker.

        ``timeout``: seconds after which a chain that has not completed fails with
        ``"timeout"`` (sets :attr:`tick_interval` to ``timeout / (buckets - 1)``;
        without it, chains expire only when you call :meth:`tick`).  ``buckets``:
        the number of timeout generations (>= 2; more buckets, finer timeouts).
        ``high_water``: the most entries held at once; an ``add`` beyond it fails
        the new chain at once with ``"overflow"``.
        """
        nbuckets = check_buckets(buckets)  # checked in the order of the arguments, as before
        self._timeout = None if timeout is None else _positive_seconds("timeout", timeout)
        self._tick_interval = None if self._timeout is None else self._timeout / (nbuckets - 1)
        if self._tick_interval == 0.0:  # 5e-324 / 2: ticking() would name an interval
            raise InvalidTimeout(
                f"timeout={timeout!r} is too small: its tick interval, timeout / (buckets - 1),"
                " is 0 seconds"
            )
        generations: Generations[str, EntryLike] = Generations(nbuckets, high_water)
        self._generations = generations
        self._chains = generations.entries
        self._buckets = generations.buckets
        self._gen = generations.gen
        self._high_water = _core_high_water(generations.high_water)
        self._acked_listeners = ()
        self._added = self._acked = self._pending = 0
        self._ack_time_total = self._ack_time_max = 0.0
        self._failed_listeners: tuple[FailedListener, ...] = ()
        self._failed = self._expired = self._overflowed = 0
        self._unclaimed = self._orphaned = self._dropped = 0

    # -- configuration and inspection ----------------------------------------

    @property
    def timeout(self) -> float | None:
        """Seconds a chain may take (None: expiry only by explicit ``tick()``)."""
        return self._timeout

    @property
    def tick_interval(self) -> float | None:
        """How often ``tick()`` must run for :attr:`timeout` to hold."""
        return self._tick_interval

    @property
    def stats(self) -> AckStats:
        return counters_of(AckStats, self)

    def __len__(self) -> int:
        """The number of pending chains (added, not finished)."""
        return self._pending

    def __contains__(self, tag: object) -> bool:
        """True if ``tag`` is a pending chain."""
        entry = self._chains.get(tag) if isinstance(tag, str) else None
        return entry is not None and bool(entry.flags & ADDED)

    def state(self, tag: str) -> Stamp | None:
        """The current XOR state of a pending chain, or None if ``tag`` is not one."""
        entry = self._chains.get(check_tag(tag))
        if entry is None or not entry.flags & ADDED:
            return None
        return Stamp(entry.value.to_bytes(entry.nbytes, "big"))

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} pending={self._pending} unclaimed={self._unclaimed} "
            f"timeout={self._timeout} buckets={self.buckets} high_water={self.high_water}>"
        )

    # -- listeners -------------------------------------------------------------

    def _emit_failed(self, events: Iterable[tuple[str, FailReason]]) -> None:
        errors: list[Exception] | None = None
        for tag, reason in events:
            errors = call_all(self._failed_listeners, (tag, reason), errors)
        raise_errors(errors, "failed")

    # -- the slow paths ----------------------------------------------------------

    def _new_entry(self, value: int, nbytes: int, t_added: float, flags: int) -> EntryLike:
        """An entry for ``Generations.insert``, which sets its generation."""
        return self._entry_type(value, nbytes, self._generations.gen, t_added, flags)

    def _count_ack(self, t_added: float) -> None:
        """Count one chain acked, added at ``t_added`` (``perf_counter``)."""
        elapsed = perf_counter() - t_added
        self._acked += 1
        self._pending -= 1
        self._ack_time_total += elapsed
        if elapsed > self._ack_time_max:
            self._ack_time_max = elapsed

    def _complete(self, tag: str, entry: EntryLike) -> None:
        """The chain's state is zero: forget it, count it, tell the listeners."""
        self._generations.remove(tag, entry)
        self._count_ack(entry.t_added)
        raise_errors(call_all(self._acked_listeners, (tag,)), "acked")

    def _add_slow(self, tag: object, stamp: object) -> bool:
        tag, value, nbytes = _checked(tag, stamp)
        generations = self._generations
        entry = self._chains.get(tag)
        if entry is None:
            self._added += 1
            if generations.full():
                self._overflowed += 1
                self._emit_failed([(tag, FailReason.OVERFLOW)])
                return False
            generations.insert(tag, self._new_entry(value, nbytes, perf_counter(), ADDED))
            self._pending += 1
            return False
        if entry.flags & ADDED:
            raise TagExists(tag)
        if entry.nbytes and entry.nbytes != nbytes:
            raise BufferLengthsUnequal()
        # The add of a chain whose stamps or fail came first: claim the entry, and
        # give the chain a whole timeout from its add (the newest generation).
        value ^= entry.value
        flags = entry.flags | ADDED
        generations.remove(tag, entry)
        self._unclaimed -= 1
        self._added += 1
        self._pending += 1
        claimed = self._new_entry(value, nbytes, perf_counter(), flags)
        generations.insert(tag, claimed)
        if value == 0:  # zero wins over an early fail, as in Storm
            self._complete(tag, claimed)
            return True
        if flags & FAILED:
            self._finish_failed(tag, claimed)
        return False

    def _stamp_slow(self, tag: object, stamp: object) -> bool:
        tag, value, nbytes = _checked(tag, stamp)
        generations = self._generations
        entry = self._chains.get(tag)
        if entry is None:  # before its add (or after its chain finished)
            return self._keep_unclaimed(tag, value, nbytes, 0)
        if entry.nbytes == 0:
            # Only a fail came before: now the length is known.
            generations.replace(tag, self._new_entry(value, nbytes, 0.0, entry.flags))
            return False
        if entry.nbytes != nbytes:
            raise BufferLengthsUnequal()
        value ^= entry.value
        if value == 0 and entry.flags & ADDED:
            self._complete(tag, entry)
            return True
        entry.value = value
        return False

    def _keep_unclaimed(self, tag: str, value: int, nbytes: int, flags: int) -> bool:
        """Keep a stamp or fail that came before its add, unless the tracker is full; False."""
        if self._generations.full():
            self._dropped += 1
        else:
            self._generations.insert(tag, self._new_entry(value, nbytes, 0.0, flags))
            self._unclaimed += 1
        return False

    def _finish_failed(self, tag: str, entry: EntryLike) -> None:
        self._generations.remove(tag, entry)
        self._pending -= 1
        self._failed += 1
        self._emit_failed([(tag, FailReason.FAILED)])

    # -- the verbs besides add / stamp -----------------------------------------

    def fail(self, tag: str) -> bool:
        """Fail the chain ``tag`` now (``"failed"`` event); True if it was pending.

        A fail for a tag that is not pending is kept until the tag's add (which
        then fails at once, unless the chain's state is zero by then) or until
        it times out.
        """
        tag = check_tag(tag)
        entry = self._chains.get(tag)
        if entry is None:
            return self._keep_unclaimed(tag, 0, 0, FAILED)
        if entry.flags & ADDED:
            self._finish_failed(tag, entry)
            return True
        entry.flags |= FAILED
        return False

    def reset_timeout(self, tag: str) -> bool:
        """Restart the timeout of ``tag`` (Storm's ``resetTimeout``); False if nothing is held.

        For a chain that is slow but alive: it gets a whole timeout again from now.  Stamps
        held for a tag not added yet are renewed too, as the acker renews a tree it holds
        before its Track (``tests/trackers/test_trackers_agree.py``).
        """
        return self._generations.renew(check_tag(tag))

    def tick(self) -> int:
        """Expire the oldest timeout generation; returns how many chains timed out.

        Timed-out chains fail with ``"timeout"``; unclaimed entries in the
        generation are dropped (``stats.orphaned``).  Every expired chain is
        forgotten before the first listener runs.
        """
        expired = self._generations.tick()
        self._gen = self._generations.gen  # the cores' fast path adds to this generation
        timed_out = [(tag, FailReason.TIMEOUT) for tag, entry in expired if entry.flags & ADDED]
        orphaned = len(expired) - len(timed_out)
        self._unclaimed -= orphaned
        self._orphaned += orphaned
        self._pending -= len(timed_out)
        self._expired += len(timed_out)
        self._emit_failed(timed_out)
        return len(timed_out)

    def ticking(self, interval: float | None = None) -> Ticker:
        """An asyncio task that calls :meth:`tick` every ``interval`` seconds.

        ``interval`` defaults to :attr:`tick_interval`.  Use ``async with
        ack.ticking(): ...`` or ``ticker.start()`` / ``await ticker.stop()``.  One ticker
        of an ``Ack`` runs at a time: starting another raises ``TickerRunning``.
        """
        if interval is None:
            if self._tick_interval is None:
                raise InvalidTimeout("give ticking() an interval, or the Ack a timeout")
            interval = self._tick_interval
        return Ticker(self.tick, _positive_seconds("interval", interval), owner=self)
