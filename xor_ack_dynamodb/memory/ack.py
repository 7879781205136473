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
ack.ticking():`` run an asyncio task that does.  The generations are one
engine, :mod:`xor_ack_dynamodb.memory._generations`, shared with the Storm-style
:class:`~xor_ack_dynamodb.memory.acker.Acker`.

**Speed**: ``add`` and ``stamp`` run in C (``_ackcore``) when the optional
extension is built, else in pure Python (:class:`PyAck`, the same semantics);
``Ack`` is the fastest one available (``Ack.implementation``).  State is kept as
raw bytes (C) or Python ints, never re-created per operation.

Not thread-safe: use one ``Ack`` from one thread or event loop.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, ClassVar

from ._ack_methods import ADDED, PYTHON_SLOTS, _AckMethods
from ._ack_methods import perf_counter as _perf_counter
from ._ack_report import AckStats, FailReason
from ._listeners import call_all, raise_errors
from ._ticker import Ticker

__all__ = ["Ack", "AckStats", "FailReason", "PyAck", "Ticker"]

_from_bytes = int.from_bytes

BytesLike = bytes | bytearray | memoryview


class _PyEntry:
    """One chain of :class:`PyAck` (the C core has ``_ackcore.Entry``)."""

    __slots__ = ("flags", "gen", "nbytes", "t_added", "value")

    def __init__(self, value: int, nbytes: int, gen: int, t_added: float, flags: int) -> None:
        self.value = value
        self.nbytes = nbytes
        self.gen = gen
        self.t_added = t_added
        self.flags = flags


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
        *PYTHON_SLOTS,
    )

    implementation: ClassVar[str] = "python"
    _entry_type = _PyEntry

    def add(self, tag: str, stamp: BytesLike) -> bool:
        """Start the chain ``tag`` with ``stamp``; True if the add completed it.

        ``TagExists`` if ``tag`` is pending.  Completes at once only when stamps
        for ``tag`` arrived before the add and XOR to ``stamp``.
        """
        # Generations.full() and .insert() inlined, as in the C core: the hot path.
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
                # _complete() and Generations.remove(), inlined: the hot path.
                del self._chains[tag]
                buckets = self._buckets
                buckets[entry.gen % len(buckets)].pop(tag, None)
                self._count_ack(entry.t_added)
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

        __slots__ = PYTHON_SLOTS

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
