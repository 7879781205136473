"""The in-memory tracker (seed: npm ``ack``) with Storm's timeouts and FsShelter's high-water mark.

::

    ack = Ack(timeout=30.0)                  # chains older than 30-45 s fail with "timeout"
    ack.on("acked", lambda tag: ...)
    ack.on("failed", lambda tag, reason: ...)   # reason: "failed", "timeout" or "overflow"
    ack.add(tag, file_stamp)
    ack.stamp(tag, xor(file_stamp, w1, w2, w3))
    ack.stamp(tag, w1); ack.stamp(tag, w2); ack.stamp(tag, w3)   # -> "acked"

Every chain ends exactly once: ``acked`` (its state reached zero), or
``failed`` with a reason: ``"failed"`` (``fail(tag)``), ``"timeout"`` (not
complete within its timeout) or ``"overflow"`` (added while the tracker held
``high_water`` chains).  A finished chain is forgotten: its tag can start again.

**Stamps that arrive before their add are kept**, as Storm's acker keeps an ack
that overtakes its init: the seed drops them, which loses the completion (the
chain then never reaches zero).  Such an *unclaimed* entry waits, under the
same timeout, for the ``add`` that claims it; the add XORs its stamp in and the
chain completes at once if the stamps that came first were the rest of it.  A
``fail`` that arrives before its add is kept the same way and fails the chain
as soon as it is added -- unless the chain's state is already zero then, which
wins, as in Storm.  An unclaimed entry that times out is dropped silently (it
belongs to no chain this tracker knows) and counted in ``stats.orphaned``.
The price: a late duplicate stamp for a chain that already finished waits as an
unclaimed entry for one timeout, so a tag reused within that window would
absorb it and time out; use a fresh tag per attempt (``f"{name}#{attempt}"``).

**Timeouts** are Storm's rotating buckets: chains sit in the newest of
``buckets`` generations; each :meth:`Ack.tick` expires the oldest generation
and opens a new one, so with tick interval T a chain lives between
``(buckets - 1) * T`` and ``buckets * T`` -- no clock read or timer per chain,
O(1) per operation.  ``Ack(timeout=t)`` ticks every ``t / (buckets - 1)``, so a
chain never fails before ``t`` and always by ``t * buckets / (buckets - 1)``.
Call ``tick()`` yourself (it is synchronous), or let ``async with
ack.ticking():`` run an asyncio task that does.

**Speed**: ``add`` and ``stamp`` run in C (``_ackcore``) when the optional
extension is built, else in pure Python (:class:`PyAck`, the same semantics);
``Ack`` is the fastest one available (``Ack.implementation``).  State is kept as
raw bytes (C) or Python ints, never re-created per operation.

Not thread-safe: use one ``Ack`` from one thread or event loop.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Literal, overload

from ._listeners import call_all, raise_errors
from .errors import BufferLengthsUnequal, InvalidTag, TagExists
from .stamps import Stamp, as_stamp

if TYPE_CHECKING:
    from ._ackcore import EntryLike

__all__ = ["Ack", "AckStats", "FailReason", "PyAck", "Ticker"]

#: Entry flags (the same values as ``_ackcore.ADDED`` / ``_ackcore.FAILED``).
ADDED = 1
FAILED = 2

_from_bytes = int.from_bytes
_perf_counter = time.perf_counter


class FailReason(StrEnum):
    """Why a chain failed; a ``str``, so ``reason == "timeout"`` works."""

    FAILED = "failed"  #: ``fail(tag)`` was called
    TIMEOUT = "timeout"  #: not complete within its timeout
    OVERFLOW = "overflow"  #: added while the tracker held ``high_water`` chains


BytesLike = bytes | bytearray | memoryview
AckedListener = Callable[[str], object]
FailedListener = Callable[[str, FailReason], object]


@dataclass(frozen=True, slots=True)
class AckStats:
    """Counters of one :class:`Ack` (a snapshot).

    ``added == acked + failed + expired + overflowed + pending`` always holds.
    """

    added: int  #: ``add`` calls that started a chain (overflowed ones included)
    acked: int  #: chains whose state reached zero
    failed: int  #: chains failed by ``fail(tag)``
    expired: int  #: chains failed by their timeout
    overflowed: int  #: chains failed at once by the high-water mark
    pending: int  #: chains added and not finished
    unclaimed: int  #: entries whose stamps or fail arrived before their add
    orphaned: int  #: unclaimed entries that timed out without an add
    dropped: int  #: early stamps / fails not kept because the tracker was full
    ack_time_total: float  #: seconds from add to ack, summed over acked chains
    ack_time_max: float  #: the longest time from add to ack, in seconds

    @property
    def ack_time_mean(self) -> float | None:
        """Mean seconds from add to ack, None before the first ack."""
        return self.ack_time_total / self.acked if self.acked else None


class _PyEntry:
    """One chain of :class:`PyAck` (the C core has ``_ackcore.Entry``)."""

    __slots__ = ("flags", "gen", "nbytes", "t_added", "value")

    def __init__(self, value: int, nbytes: int, gen: int, t_added: float, flags: int) -> None:
        self.value = value
        self.nbytes = nbytes
        self.gen = gen
        self.t_added = t_added
        self.flags = flags


def _check_tag(tag: object) -> str:
    if not isinstance(tag, str) or not tag:
        raise InvalidTag(f"a tag must be a non-empty str, not {tag!r}")
    return tag


def _checked(tag: object, stamp: object) -> tuple[str, int, int]:
    """Validate a call's tag and stamp: (tag, the stamp as an int, its length in bytes)."""
    tag = _check_tag(tag)  # the tag first, as before: a bad tag wins over a bad stamp
    checked = as_stamp(stamp)
    return tag, _from_bytes(checked, "big"), len(checked)


def _positive_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, not {value!r}")
    return value


def _positive_seconds(name: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a finite number of seconds > 0, not {value!r}")
    return float(value)


#: The attributes that only the Python side uses (the core's are in ``_ackcore.Core``).
_PYTHON_SLOTS = (
    "_dropped",
    "_expired",
    "_failed",
    "_failed_listeners",
    "_orphaned",
    "_overflowed",
    "_tick_interval",
    "_timeout",
    "_unclaimed",
    "__weakref__",
)


class _AckMethods:
    """Everything of :class:`Ack` except the hot path (``add`` / ``stamp``).

    Shared by both cores: :class:`PyAck` (pure Python) and ``CAck`` (C).  The
    cores call ``_add_slow`` / ``_stamp_slow`` for every call that is not the
    plain case (errors, early stamps, overflow, unusual types).
    """

    if not TYPE_CHECKING:
        # No instance __dict__: then ``ack.add`` needs no dict probe to rule out
        # an instance attribute shadowing the method (that probe cost ~15% of a
        # C-core operation).  Hidden from mypy, which would check every
        # assignment below against this empty tuple instead of the subclasses'.
        __slots__ = ()

    implementation: ClassVar[str]
    _entry_type: ClassVar[type[EntryLike]]

    # Kept by the core (C attributes or PyAck slots), read and written here too.
    _chains: dict[str, EntryLike]
    _buckets: list[dict[str, EntryLike]]
    _acked_listeners: tuple[AckedListener, ...]
    _high_water: int
    _gen: int
    _added: int
    _acked: int
    _pending: int
    _ack_time_total: float
    _ack_time_max: float

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
        nbuckets = _positive_int("buckets", buckets, 2)
        self._timeout = None if timeout is None else _positive_seconds("timeout", timeout)
        self._tick_interval = None if self._timeout is None else self._timeout / (nbuckets - 1)
        self._chains = {}
        self._buckets = [{} for _ in range(nbuckets)]
        self._acked_listeners = ()
        self._high_water = -1 if high_water is None else _positive_int("high_water", high_water, 1)
        self._gen = 0
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
    def buckets(self) -> int:
        return len(self._buckets)

    @property
    def high_water(self) -> int | None:
        return None if self._high_water < 0 else self._high_water

    @property
    def stats(self) -> AckStats:
        return AckStats(
            added=self._added,
            acked=self._acked,
            failed=self._failed,
            expired=self._expired,
            overflowed=self._overflowed,
            pending=self._pending,
            unclaimed=self._unclaimed,
            orphaned=self._orphaned,
            dropped=self._dropped,
            ack_time_total=self._ack_time_total,
            ack_time_max=self._ack_time_max,
        )

    def __len__(self) -> int:
        """The number of pending chains (added, not finished)."""
        return self._pending

    def __contains__(self, tag: object) -> bool:
        """True if ``tag`` is a pending chain."""
        entry = self._chains.get(tag) if isinstance(tag, str) else None
        return entry is not None and bool(entry.flags & ADDED)

    def state(self, tag: str) -> Stamp | None:
        """The current XOR state of a pending chain, or None if ``tag`` is not one."""
        entry = self._chains.get(_check_tag(tag))
        if entry is None or not entry.flags & ADDED:
            return None
        return Stamp(entry.value.to_bytes(entry.nbytes, "big"))

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} pending={self._pending} unclaimed={self._unclaimed} "
            f"timeout={self._timeout} buckets={len(self._buckets)} high_water={self.high_water}>"
        )

    # -- listeners -------------------------------------------------------------

    @overload
    def on(self, event: Literal["acked"], listener: AckedListener) -> AckedListener: ...
    @overload
    def on(self, event: Literal["failed"], listener: FailedListener) -> FailedListener: ...
    def on(
        self, event: str, listener: AckedListener | FailedListener
    ) -> AckedListener | FailedListener:
        """Call ``listener(tag)`` on ``"acked"``, ``listener(tag, reason)`` on ``"failed"``.

        Listeners run after the tracker has forgotten the chain, in the order they
        were added.  If one raises, the others still run, then the exception is
        raised to whoever caused the event (``stamp``, ``add``, ``fail`` or
        ``tick``); several become an ``ExceptionGroup``.  The chain is finished
        either way.
        """
        if not callable(listener):
            raise TypeError(f"listener must be callable, not {listener!r}")
        if event == "acked":
            self._acked_listeners = (*self._acked_listeners, listener)  # type: ignore[arg-type]
        elif event == "failed":
            self._failed_listeners = (*self._failed_listeners, listener)  # type: ignore[arg-type]
        else:
            raise ValueError(f'event must be "acked" or "failed", not {event!r}')
        return listener

    def off(self, event: Literal["acked", "failed"], listener: Callable[..., object]) -> bool:
        """Remove one registration of ``listener``; False if it was not registered."""
        if event == "acked":
            listeners: tuple[Callable[..., object], ...] = self._acked_listeners
        elif event == "failed":
            listeners = self._failed_listeners
        else:
            raise ValueError(f'event must be "acked" or "failed", not {event!r}')
        for i, registered in enumerate(listeners):
            if registered == listener:
                remaining = listeners[:i] + listeners[i + 1 :]
                if event == "acked":
                    self._acked_listeners = remaining
                else:
                    self._failed_listeners = remaining
                return True
        return False

    def _emit_acked(self, tag: str) -> None:
        raise_errors(call_all(self._acked_listeners, (tag,)), "acked")

    def _emit_failed(self, events: Iterable[tuple[str, FailReason]]) -> None:
        errors: list[Exception] | None = None
        for tag, reason in events:
            errors = call_all(self._failed_listeners, (tag, reason), errors)
        raise_errors(errors, "failed")

    # -- bookkeeping shared by the slow paths ----------------------------------

    def _insert(self, tag: str, entry: EntryLike) -> None:
        self._chains[tag] = entry
        buckets = self._buckets
        buckets[entry.gen % len(buckets)][tag] = entry

    def _remove(self, tag: str, entry: EntryLike) -> None:
        del self._chains[tag]
        buckets = self._buckets
        buckets[entry.gen % len(buckets)].pop(tag, None)

    def _full(self) -> bool:
        return 0 <= self._high_water <= len(self._chains)

    def _complete(self, tag: str, entry: EntryLike) -> None:
        """The chain's state is zero: forget it, count it, tell the listeners."""
        self._remove(tag, entry)
        elapsed = _perf_counter() - entry.t_added
        self._acked += 1
        self._pending -= 1
        self._ack_time_total += elapsed
        if elapsed > self._ack_time_max:
            self._ack_time_max = elapsed
        self._emit_acked(tag)

    def _add_slow(self, tag: object, stamp: object) -> bool:
        tag, value, nbytes = _checked(tag, stamp)
        entry = self._chains.get(tag)
        if entry is None:
            self._added += 1
            if self._full():
                self._overflowed += 1
                self._emit_failed([(tag, FailReason.OVERFLOW)])
                return False
            self._insert(tag, self._entry_type(value, nbytes, self._gen, _perf_counter(), ADDED))
            self._pending += 1
            return False
        if entry.flags & ADDED:
            raise TagExists(tag)
        if entry.nbytes and entry.nbytes != nbytes:
            raise BufferLengthsUnequal()
        # The add of a chain whose stamps or fail came first: claim the entry.
        value ^= entry.value
        flags = entry.flags | ADDED
        self._remove(tag, entry)
        self._unclaimed -= 1
        self._added += 1
        self._pending += 1
        claimed = self._entry_type(value, nbytes, self._gen, _perf_counter(), flags)
        self._insert(tag, claimed)
        if value == 0:  # zero wins over an early fail, as in Storm
            self._complete(tag, claimed)
            return True
        if flags & FAILED:
            self._finish_failed(tag, claimed)
        return False

    def _stamp_slow(self, tag: object, stamp: object) -> bool:
        tag, value, nbytes = _checked(tag, stamp)
        entry = self._chains.get(tag)
        if entry is None:
            # Before its add (or after its chain finished): keep it, unclaimed.
            if self._full():
                self._dropped += 1
                return False
            self._insert(tag, self._entry_type(value, nbytes, self._gen, 0.0, 0))
            self._unclaimed += 1
            return False
        if entry.nbytes == 0:
            # Only a fail came before: now the length is known.
            self._remove(tag, entry)
            self._insert(tag, self._entry_type(value, nbytes, entry.gen, 0.0, entry.flags))
            return False
        if entry.nbytes != nbytes:
            raise BufferLengthsUnequal()
        value ^= entry.value
        if value == 0 and entry.flags & ADDED:
            self._complete(tag, entry)
            return True
        entry.value = value
        return False

    def _finish_failed(self, tag: str, entry: EntryLike) -> None:
        self._remove(tag, entry)
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
        tag = _check_tag(tag)
        entry = self._chains.get(tag)
        if entry is None:
            if self._full():
                self._dropped += 1
                return False
            self._insert(tag, self._entry_type(0, 0, self._gen, 0.0, FAILED))
            self._unclaimed += 1
            return False
        if entry.flags & ADDED:
            self._finish_failed(tag, entry)
            return True
        entry.flags |= FAILED
        return False

    def reset_timeout(self, tag: str) -> bool:
        """Restart the timeout of ``tag`` (Storm's ``resetTimeout``); False if unknown.

        For a chain that is slow but alive: it gets a whole timeout again from now.
        """
        tag = _check_tag(tag)
        entry = self._chains.get(tag)
        if entry is None:
            return False
        gen = self._gen
        if entry.gen != gen:
            buckets = self._buckets
            del buckets[entry.gen % len(buckets)][tag]
            entry.gen = gen
            buckets[gen % len(buckets)][tag] = entry
        return True

    def tick(self) -> int:
        """Expire the oldest timeout generation; returns how many chains timed out.

        Timed-out chains fail with ``"timeout"``; unclaimed entries in the
        generation are dropped (``stats.orphaned``).  Every expired chain is
        forgotten before the first listener runs.
        """
        self._gen += 1
        buckets = self._buckets
        bucket = buckets[self._gen % len(buckets)]
        if not bucket:
            return 0
        expired = list(bucket.items())
        bucket.clear()
        chains = self._chains
        timed_out: list[tuple[str, FailReason]] = []
        for tag, entry in expired:
            if chains.get(tag) is entry:
                del chains[tag]
            if entry.flags & ADDED:
                timed_out.append((tag, FailReason.TIMEOUT))
            else:
                self._unclaimed -= 1
                self._orphaned += 1
        self._pending -= len(timed_out)
        self._expired += len(timed_out)
        self._emit_failed(timed_out)
        return len(timed_out)

    def ticking(self, interval: float | None = None) -> Ticker:
        """An asyncio task that calls :meth:`tick` every ``interval`` seconds.

        ``interval`` defaults to :attr:`tick_interval`.  Use ``async with
        ack.ticking(): ...`` or ``ticker.start()`` / ``await ticker.stop()``.
        """
        if interval is None:
            if self._tick_interval is None:
                raise ValueError("give ticking() an interval, or the Ack a timeout")
            interval = self._tick_interval
        return Ticker(self.tick, _positive_seconds("interval", interval))


class Ticker:
    """Calls ``tick()`` every ``interval`` seconds from an asyncio task.

    Missed ticks (a blocked event loop) are skipped, not caught up in a burst:
    chains whose completions were stuck behind the same blockage get their
    time.  An exception from a listener during a tick goes to the loop's
    exception handler and ticking goes on.
    """

    def __init__(self, tick: Callable[[], object], interval: float) -> None:
        self._tick = tick
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start ticking (needs a running event loop)."""
        if self.running:
            raise RuntimeError("the ticker is already running")
        self._task = asyncio.get_running_loop().create_task(self._run(), name="xor-ack-ticker")

    async def stop(self) -> None:
        """Stop ticking and wait for the task to end."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise

    async def __aenter__(self) -> Ticker:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + self.interval
        while True:
            await asyncio.sleep(max(0.0, due - loop.time()))
            try:
                self._tick()
            except Exception as exc:
                loop.call_exception_handler(
                    {"message": "an Ack listener raised during tick()", "exception": exc}
                )
            due += self.interval
            now = loop.time()
            if due <= now:  # fell behind: skip the missed ticks
                due = now + self.interval


class PyAck(_AckMethods):
    """:class:`Ack` in pure Python: the fallback when the C extension is absent.

    Same semantics, same tests; only slower.
    """

    __slots__ = (
        "_ack_time_max",
        "_ack_time_total",
        "_acked",
        "_acked_listeners",
        "_added",
        "_buckets",
        "_chains",
        "_gen",
        "_high_water",
        "_pending",
        *_PYTHON_SLOTS,
    )

    implementation: ClassVar[str] = "python"
    _entry_type = _PyEntry

    def add(self, tag: str, stamp: BytesLike) -> bool:
        """Start the chain ``tag`` with ``stamp``; True if the add completed it.

        ``TagExists`` if ``tag`` is pending.  Completes at once only when stamps
        for ``tag`` arrived before the add and XOR to ``stamp``.
        """
        if type(tag) is str and tag and type(stamp) is bytes:
            chains = self._chains
            if tag not in chains and (self._high_water < 0 or len(chains) < self._high_water):
                value = _from_bytes(stamp, "big")
                if value:
                    gen = self._gen
                    buckets = self._buckets
                    entry = _PyEntry(value, len(stamp), gen, _perf_counter(), ADDED)
                    chains[tag] = entry
                    buckets[gen % len(buckets)][tag] = entry
                    self._added += 1
                    self._pending += 1
                    return False
        return self._add_slow(tag, stamp)

    def stamp(self, tag: str, stamp: BytesLike) -> bool:
        """XOR ``stamp`` into the chain ``tag``; True if this stamp completed it.

        A stamp for a tag that is not pending is kept for its add (see the
        module docstring).
        """
        entry = self._chains.get(tag) if type(tag) is str else None
        if (
            entry is not None
            and type(stamp) is bytes
            and entry.flags & ADDED
            and entry.nbytes == len(stamp)
        ):
            value = _from_bytes(stamp, "big")
            if value:
                value ^= entry.value
                if value:
                    entry.value = value
                    return False
                # _complete(), inlined: this is most of the pure-Python cost.
                del self._chains[tag]
                buckets = self._buckets
                buckets[entry.gen % len(buckets)].pop(tag, None)
                elapsed = _perf_counter() - entry.t_added
                self._acked += 1
                self._pending -= 1
                self._ack_time_total += elapsed
                if elapsed > self._ack_time_max:
                    self._ack_time_max = elapsed
                listeners = self._acked_listeners
                if len(listeners) == 1:
                    listeners[0](tag)  # nothing else to run if it raises
                else:
                    raise_errors(call_all(listeners, (tag,)), "acked")
                return True
        return self._stamp_slow(tag, stamp)


def _load_c_ack() -> type[_AckMethods] | None:
    if os.environ.get("XOR_ACK_NO_EXTENSIONS"):
        return None
    try:
        from ._ackcore import Core, Entry
    except ImportError:
        return None

    class CAck(_AckMethods, Core):
        """:class:`Ack` with its hot path (``add``, ``stamp``) in C."""

        __slots__ = _PYTHON_SLOTS

        implementation: ClassVar[str] = "c"
        _entry_type = Entry

    CAck.__doc__ = Ack_doc
    CAck.__module__ = __name__
    return CAck


Ack_doc = """In-memory XOR ack tracker with events, timeouts and a high-water mark.

``Ack(timeout=None, *, buckets=3, high_water=None)``; verbs ``add``, ``stamp``,
``fail``, ``reset_timeout``, ``tick``; events ``on("acked", fn(tag))`` and
``on("failed", fn(tag, reason))``; counters in ``stats``.  See the module
docstring for the semantics.
"""

#: The C-accelerated class, or None when the extension is not built (or
#: ``XOR_ACK_NO_EXTENSIONS`` is set).
CAck = _load_c_ack()

if TYPE_CHECKING:
    Ack = PyAck
else:
    Ack = CAck if CAck is not None else PyAck
