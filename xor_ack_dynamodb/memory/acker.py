"""Storm's acker (seed: FsShelter's acker algorithm): tuple trees tracked by XOR over int64 ids.

A spout starts a *tuple tree* under a random ``anchor_id``; every tuple of the
tree has a random non-zero int64 ``tuple_id``.  The acker keeps one XOR value per
anchor: each tuple id goes in twice -- when it is anchored (created) and when it
is acked (processed) -- so the value returns to zero exactly when every tuple of
the tree has been processed.

Messages (the seed's ``AckerMsg``), one :class:`Acker` state machine per acker
task::

    Track(task_id, source_id, anchor_id, value=0)   start a tree (value: its root ids)
    Anchor(anchor_id, tuple_id)                      a tuple was created in the tree
    Ok(anchor_id, tuple_id)                          a tuple was processed
    Fail(anchor_id, tuple_id)                        a tuple failed: the whole tree fails
    ResetTimeout(anchor_id)                          Storm's resetTimeout

    [*] --Track--> Pending --Anchor/Ok (v != 0)--> Pending
                   Pending --Ok (v == 0)---------> Complete: Acked(task, source) sent, forgotten
                   Pending --Fail / tick expiry--> Nacked(task, source, reason), forgotten

What Storm does and FsShelter does not, kept here:

- ``Track`` may carry the XOR of all the spout's root tuple ids, so starting a
  tree with N roots is one message, not 1 + N;
- an ``Anchor`` / ``Ok`` / ``Fail`` that overtakes its ``Track`` (acker messages
  travel on different paths) is kept, *untracked*, and applied when the Track
  arrives; a zero value then wins over a fail that came first;
- :meth:`Acker.reset_timeout` keeps a slow but living tree from expiring.

Timeouts are FsShelter's rotating buckets, the same engine as the in-memory
``Ack``'s (:mod:`xor_ack_dynamodb.memory._generations`): with ``buckets`` generations
and a tick every T seconds, a tree lives between ``(buckets - 1) * T`` and
``buckets * T``.  ``high_water`` bounds the trees held:
a Track beyond it is nacked at once with ``"overflow"``.

Trees are sharded over N ackers by :func:`acker_index` (``abs(anchor_id % N)``,
as FsShelter computes it with .NET's truncated remainder), so every message of
a tree reaches the same acker.  The spout and bolt helpers are in
:mod:`xor_ack_dynamodb.memory.tuple_tree`.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable, Hashable, Sequence
from typing import ClassVar, TypeVar

from ..errors import InvalidArgument, InvalidMessage, TagExists, ZeroBufferNoOp
from ..errors._refusals import shown
from ._ack_report import counters_of
from ._acker_messages import (
    Acked,
    AckerMsg,
    AckerStats,
    Anchor,
    Fail,
    Nacked,
    Ok,
    Outcome,
    Pending,
    ResetTimeout,
    Track,
)
from ._generations import Generations, GenerationsConfig
from ._listeners import Listeners, call_all, raise_errors
from .ack import FailReason

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "Acked",
    "Acker",
    "AckerMsg",
    "AckerStats",
    "Anchor",
    "Fail",
    "IdGenerator",
    "Nacked",
    "Ok",
    "Pending",
    "ResetTimeout",
    "Track",
    "acker_for",
    "acker_index",
    "check_id",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

T = TypeVar("T")


def check_id(value: object, what: str = "id") -> int:
    """``value`` as an int64 (Storm's and FsShelter's id type); ``InvalidArgument`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not INT64_MIN <= value <= INT64_MAX:
        raise InvalidArgument(f"{what} must be an int64, not {shown(value)}")
    return value


class IdGenerator:
    """Random non-zero int64 ids, one generator per task (FsShelter's ``mkIdGenerator``).

    Zero is never returned: ``x ^ 0 == x``, so a zero id would be invisible to
    the XOR.  ``seed`` makes the sequence reproducible (tests); without it each id
    comes from the OS's random source, so that copies of one generator (a process
    forked after it was made, a pickled copy in a task's closure) never draw the
    same ids: two equal child ids cancel in the XOR, and a tree would read acked
    while both children are pending.
    """

    def __init__(self, seed: int | None = None) -> None:
        self._random = None if seed is None else random.Random(seed)

    def __call__(self) -> int:
        while True:
            bits = secrets.randbits(64) if self._random is None else self._random.getrandbits(64)
            value = bits + INT64_MIN
            if value:
                return value


def acker_index(anchor_id: int, ackers: int) -> int:
    """Which of ``ackers`` ackers owns ``anchor_id``: FsShelter's ``abs(anchor % n)``.

    .NET's ``%`` truncates toward zero, so ``abs(anchor % n)`` is ``abs(anchor) % n``;
    Python's ``%`` floors (``-7 % 3 == 2``, .NET gives -1), hence the explicit form.
    """
    if isinstance(ackers, bool) or not isinstance(ackers, int) or ackers < 1:
        raise InvalidArgument(f"ackers must be an int >= 1, not {shown(ackers)}")
    return abs(check_id(anchor_id, "anchor_id")) % ackers


def acker_for(ackers: Sequence[T], anchor_id: int) -> T:
    """The acker of ``ackers`` that owns ``anchor_id``."""
    return ackers[acker_index(anchor_id, len(ackers))]


class _Tree:
    __slots__ = ("failed", "gen", "source_id", "task_id", "tracked", "value", "xored")

    def __init__(self) -> None:
        self.value = 0
        self.gen = 0  # set by Generations.insert
        self.tracked = False
        self.failed = False
        self.xored = False
        self.task_id: Hashable = None
        self.source_id: Hashable = None


AckedListener = Callable[[Acked], object]
NackedListener = Callable[[Nacked], object]


class Acker(GenerationsConfig, Listeners[AckedListener, NackedListener]):
    """One acker task: tuple trees by anchor id, with timeouts and a high-water mark.

    Feed it messages with :meth:`handle` (or the verb methods); it reports each
    tree's end to the ``"acked"`` / ``"failed"`` listeners (``fn(Acked)`` /
    ``fn(Nacked)``) and returns it from the call that caused it.  Call
    :meth:`tick` every tick interval.  Not thread-safe: one acker, one thread
    (shard trees over several ackers with :func:`acker_for`).
    """

    _event_adapters: ClassVar[tuple[str, str]] = ("AckerAcked", "AckerFailed")

    def __init__(self, *, buckets: int = 3, high_water: int | None = None) -> None:
        self._generations: Generations[int, _Tree] = Generations(buckets, high_water)
        self._trees = self._generations.entries
        self._acked_listeners: tuple[AckedListener, ...] = ()
        self._failed_listeners: tuple[NackedListener, ...] = ()
        self._tracked = self._acked = self._failed = self._expired = self._overflowed = 0
        self._untracked = self._orphaned = self._dropped = 0

    # -- listeners ----------------------------------------------------------------

    # -- inspection -------------------------------------------------------------------

    @property
    def stats(self) -> AckerStats:
        pending = len(self._trees) - self._untracked
        return counters_of(AckerStats, self, pending=pending)

    def state(self, anchor_id: int) -> Pending | None:
        """The tree ``anchor_id`` as the acker holds it, or None (never seen, or ended)."""
        tree = self._trees.get(check_id(anchor_id, "anchor_id"))
        if tree is None:
            return None
        return Pending(
            anchor_id=anchor_id,
            task_id=tree.task_id,
            source_id=tree.source_id,
            value=tree.value,
            tracked=tree.tracked,
            failed=tree.failed,
        )

    def __len__(self) -> int:
        """The number of trees held (pending and untracked)."""
        return len(self._trees)

    # -- the messages -------------------------------------------------------------------

    def handle(self, msg: AckerMsg) -> Outcome | None:
        """Apply one message; the tree's outcome if this message ended it."""
        if isinstance(msg, Track):
            return self.track(msg.task_id, msg.source_id, msg.anchor_id, msg.value)
        if isinstance(msg, Anchor):
            return self.anchor(msg.anchor_id, msg.tuple_id)
        if isinstance(msg, Ok):
            return self.ok(msg.anchor_id, msg.tuple_id)
        if isinstance(msg, Fail):
            return self.fail(msg.anchor_id, msg.tuple_id)
        if isinstance(msg, ResetTimeout):
            self.reset_timeout(msg.anchor_id)
            return None
        raise InvalidMessage(
            f"handle() takes an acker message (Track, Anchor, Ok, Fail or ResetTimeout), "
            f"not {msg!r}"
        )

    def track(
        self, task_id: Hashable, source_id: Hashable, anchor_id: int, value: int = 0
    ) -> Outcome | None:
        """Start tree ``anchor_id`` (``TagExists`` if it is already tracked)."""
        check_id(anchor_id, "anchor_id")
        check_id(value, "value")
        tree = self._trees.get(anchor_id)
        if tree is None:
            self._tracked += 1
            if self._generations.full():
                self._overflowed += 1
                return self._nack(anchor_id, task_id, source_id, FailReason.OVERFLOW)
            tree = self._insert(anchor_id)
        elif tree.tracked:
            raise TagExists(str(anchor_id))
        else:
            # Messages of this tree overtook its Track: they count from now on.
            self._untracked -= 1
            self._tracked += 1
        tree.tracked = True
        tree.task_id = task_id
        tree.source_id = source_id
        tree.value ^= value
        # Zero completes the tree -- and wins over a Fail that came first, as in
        # Storm -- once some tuple id went in.  A Track with value 0 and nothing
        # before it (FsShelter sends the root ids as Anchors after it) is no work yet.
        if tree.value == 0 and (value or tree.xored):
            return self._complete(anchor_id, tree)
        if tree.failed:
            return self._fail_tree(anchor_id, tree)
        return None

    def anchor(self, anchor_id: int, tuple_id: int) -> Outcome | None:
        """Tuple ``tuple_id`` was created in tree ``anchor_id``."""
        return self._xor(anchor_id, tuple_id)

    def ok(self, anchor_id: int, tuple_id: int) -> Outcome | None:
        """Tuple ``tuple_id`` (or a folded ``input ^ children`` value) was processed."""
        return self._xor(anchor_id, tuple_id)

    def fail(self, anchor_id: int, tuple_id: int = 0) -> Outcome | None:
        """A tuple of tree ``anchor_id`` failed: nack the tree (kept if it is untracked)."""
        check_id(anchor_id, "anchor_id")
        check_id(tuple_id, "tuple_id")
        tree = self._trees.get(anchor_id)
        if tree is None:
            tree = self._untracked_tree(anchor_id)
            if tree is not None:
                tree.failed = True
            return None
        if tree.tracked:
            return self._fail_tree(anchor_id, tree)
        tree.failed = True
        return None

    def reset_timeout(self, anchor_id: int) -> bool:
        """Restart the timeout of tree ``anchor_id``; False if the acker does not hold it."""
        return self._generations.renew(check_id(anchor_id, "anchor_id"))

    def tick(self) -> list[Nacked]:
        """Expire the oldest generation of trees (the seed's Tick); returns the nacks sent."""
        nacks: list[Nacked] = []
        for anchor_id, tree in self._generations.tick():
            if tree.tracked:
                nacks.append(Nacked(anchor_id, tree.task_id, tree.source_id, FailReason.TIMEOUT))
            else:
                self._untracked -= 1
                self._orphaned += 1
        self._expired += len(nacks)
        errors = None
        for nack in nacks:
            errors = call_all(self._failed_listeners, (nack,), errors)
        raise_errors(errors, "failed")
        return nacks

    # -- internals ---------------------------------------------------------------------------

    def _insert(self, anchor_id: int) -> _Tree:
        tree = _Tree()
        self._generations.insert(anchor_id, tree)
        return tree

    def _untracked_tree(self, anchor_id: int) -> _Tree | None:
        """A new entry for a message that overtook its Track, or None when full."""
        if self._generations.full():
            self._dropped += 1
            return None
        self._untracked += 1
        return self._insert(anchor_id)

    def _xor(self, anchor_id: int, tuple_id: int) -> Outcome | None:
        check_id(anchor_id, "anchor_id")
        if check_id(tuple_id, "tuple_id") == 0:
            raise ZeroBufferNoOp("a zero tuple id changes nothing: ids are never 0")
        tree = self._trees.get(anchor_id)
        if tree is None:
            tree = self._untracked_tree(anchor_id)
            if tree is not None:
                tree.value = tuple_id
                tree.xored = True
            return None
        tree.value ^= tuple_id
        tree.xored = True
        if tree.tracked and tree.value == 0:
            return self._complete(anchor_id, tree)
        return None

    def _complete(self, anchor_id: int, tree: _Tree) -> Acked:
        self._generations.remove(anchor_id, tree)
        self._acked += 1
        acked = Acked(anchor_id, tree.task_id, tree.source_id)
        raise_errors(call_all(self._acked_listeners, (acked,)), "acked")
        return acked

    def _fail_tree(self, anchor_id: int, tree: _Tree) -> Nacked:
        self._generations.remove(anchor_id, tree)
        self._failed += 1
        return self._nack(anchor_id, tree.task_id, tree.source_id, FailReason.FAILED)

    def _nack(
        self, anchor_id: int, task_id: Hashable, source_id: Hashable, reason: FailReason
    ) -> Nacked:
        nacked = Nacked(anchor_id, task_id, source_id, reason)
        raise_errors(call_all(self._failed_listeners, (nacked,)), "failed")
        return nacked
