"""Rotating timeout generations with a high-water mark: the engine under ``Ack`` and ``Acker``.

Storm's and FsShelter's timeouts without a clock: entries sit in the newest of
``buckets`` generations, and each :meth:`Generations.tick` expires the oldest
generation and opens a new one, so with a tick every T seconds an entry lives
between ``(buckets - 1) * T`` and ``buckets * T``.  Every operation is O(1); a
tick touches only what expires.

Sans-I/O: no clock, no events, no counters -- the trackers decide what an
expired entry means (a ``"timeout"`` failure, an orphan) and tell their
listeners.  The engine decides *where* an entry sits and *when* it expires:

==============================  =========================================================
``insert(key, entry)``          into the newest generation (sets ``entry.gen``)
``replace(key, entry)``         swap an entry, keeping the generation of the one it replaces
``remove(key, entry)``          forget it (a completed or failed chain)
``renew(key)``                  move it to the newest generation (Storm's ``resetTimeout``)
``tick()``                      expire the oldest generation; returns what expired
``full()``                      the high-water check: ``high_water`` entries already held
==============================  =========================================================

An entry of generation ``gen`` is in ``buckets[gen % len(buckets)]`` and in
``entries``.  ``memory.Ack`` hands these two containers to its C core, whose
fast path (``add``, ``stamp``) reads and writes them directly; that is why they
are plain ``dict`` / ``list`` attributes and why ``gen`` is a plain int the
core mirrors (``Ack`` copies it after each :meth:`tick`, the only call that
changes it).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Generic, Protocol, TypeVar

from ..errors import InvalidArgument
from ..errors._refusals import shown

__all__ = ["Entry", "Generations", "GenerationsConfig", "check_buckets", "check_high_water"]


class Entry(Protocol):
    """What the engine needs of an entry: the generation it sits in."""

    gen: int


K = TypeVar("K", bound=Hashable)
E = TypeVar("E", bound=Entry)


#: The most generations a tracker keeps: each is a dict made up front, and more than a
#: few cut a timeout no finer than a tick already does (Storm keeps 3).
MAX_BUCKETS = 1024


def check_buckets(value: object) -> int:
    """``value`` as a number of generations (an int from 2 to ``MAX_BUCKETS``); else
    ``InvalidArgument``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= MAX_BUCKETS:
        raise InvalidArgument(f"buckets must be an int from 2 to {MAX_BUCKETS}, not {shown(value)}")
    return value


def check_high_water(value: object) -> int | None:
    """``value`` as a high-water mark (an int >= 1, or None: no limit); else ``InvalidArgument``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"high_water must be an int >= 1 or None, not {shown(value)}")
    return value


class Generations(Generic[K, E]):
    """Entries by key, each in one of ``buckets`` rotating generations, at most ``high_water``."""

    __slots__ = ("buckets", "entries", "gen", "high_water")

    def __init__(self, buckets: int = 3, high_water: int | None = None) -> None:
        nbuckets = check_buckets(buckets)
        self.high_water = check_high_water(high_water)
        self.entries: dict[K, E] = {}
        self.buckets: list[dict[K, E]] = [{} for _ in range(nbuckets)]
        self.gen = 0  #: the newest generation; only :meth:`tick` advances it

    def __len__(self) -> int:
        return len(self.entries)

    def full(self) -> bool:
        """True if ``high_water`` entries are held: a new one must be refused."""
        return self.high_water is not None and len(self.entries) >= self.high_water

    def insert(self, key: K, entry: E) -> None:
        """Hold ``entry`` under the new ``key``, in the newest generation."""
        entry.gen = gen = self.gen
        self.entries[key] = entry
        self.buckets[gen % len(self.buckets)][key] = entry

    def replace(self, key: K, entry: E) -> None:
        """Hold ``entry`` instead of ``key``'s entry, in the same generation (no new timeout)."""
        old = self.entries[key]
        self.remove(key, old)
        self.entries[key] = entry
        entry.gen = old.gen
        self.buckets[old.gen % len(self.buckets)][key] = entry

    def remove(self, key: K, entry: E) -> None:
        """Forget ``key``, whose entry is ``entry``."""
        del self.entries[key]
        self.buckets[entry.gen % len(self.buckets)].pop(key, None)

    def renew(self, key: K) -> bool:
        """Move ``key``'s entry to the newest generation; False if ``key`` is not held."""
        entry = self.entries.get(key)
        if entry is None:
            return False
        gen = self.gen
        if entry.gen != gen:
            buckets = self.buckets
            del buckets[entry.gen % len(buckets)][key]
            entry.gen = gen
            buckets[gen % len(buckets)][key] = entry
        return True

    def tick(self) -> list[tuple[K, E]]:
        """Expire the oldest generation: forget its entries and return them.

        They come in the order they entered the generation; its bucket then
        holds the newest generation, empty.
        """
        self.gen += 1
        bucket = self.buckets[self.gen % len(self.buckets)]
        if not bucket:
            return []
        expired = list(bucket.items())
        bucket.clear()
        entries = self.entries
        for key, entry in expired:
            if entries.get(key) is entry:
                del entries[key]
        return expired


class GenerationsConfig:
    """What a tracker shows of its engine (``self._generations``): ``buckets``, ``high_water``."""

    __slots__ = ()

    _generations: Generations[Any, Any]

    @property
    def buckets(self) -> int:
        """The number of timeout generations."""
        return len(self._generations.buckets)

    @property
    def high_water(self) -> int | None:
        """The most entries held at once (None: no limit)."""
        return self._generations.high_water
