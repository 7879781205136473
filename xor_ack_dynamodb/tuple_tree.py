"""Tuple-tree helpers: the spout and bolt side of Storm's protocol, over any tracker.

The spout starts a tree; every bolt that processes an input tuple acks it and
anchors the children it emits -- in **one** folded stamp, ``input_id ^ child_1
^ ... ^ child_n``, sent *before* the children are handed on, so no child can be
processed before it is anchored and a tree can never look complete while one of
its children is still on its way.  FsShelter sends one Anchor per child and
then an Ok for the input; Storm folds them, and so does this module.

The same :class:`TupleTree` runs over every tracker, through a small *sink*:

==========================  ===================================================
:class:`AckerSink`          in-process :class:`~xor_ack_dynamodb.acker.Acker`
                            shards (Track / Ok / Fail messages)
:class:`AckSink`            an in-memory :class:`~xor_ack_dynamodb.memory.Ack`
                            (tag = anchor id, stamps = 8-byte ids)
:class:`DynamoDBSink`       :class:`~xor_ack_dynamodb.SyncXorAckDynamoDB`: a tree
                            shared by many processes (workers, Lambda)
:class:`AsyncDynamoDBSink`  :class:`~xor_ack_dynamodb.XorAckDynamoDB`, for
                            :class:`AsyncTupleTree`
==========================  ===================================================

Over DynamoDB the tag of a tree is ``prefix + str(anchor_id)`` and each id is
an 8-byte stamp (int64, two's complement, big-endian, never 0).  With
``deterministic=True`` a bolt's child ids are derived from its input (and the
write carries the input id as idempotency token), so an input processed twice
-- a Lambda retry, a re-delivered message -- produces the same children and the
same stamp, which DynamoDB applies once: the tree still completes exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from .acker import Acked, Acker, IdGenerator, acker_for, check_id
from .dynamodb import XorAckDynamoDB
from .stamps import Stamp
from .sync import SyncXorAckDynamoDB

if TYPE_CHECKING:
    from .memory import PyAck

ClientT = TypeVar("ClientT")

__all__ = [
    "AckSink",
    "AckerSink",
    "AsyncDynamoDBSink",
    "AsyncTreeSink",
    "AsyncTupleTree",
    "DynamoDBSink",
    "Emitted",
    "Started",
    "TreeSink",
    "TupleRef",
    "TupleTree",
    "id_from_stamp",
    "id_stamp",
]

ID_BYTES = 8


def id_stamp(value: int) -> Stamp:
    """An int64 id (or folded value) as an 8-byte stamp: two's complement, big-endian."""
    return Stamp(check_id(value).to_bytes(ID_BYTES, "big", signed=True))


def id_from_stamp(stamp: bytes) -> int:
    """The inverse of :func:`id_stamp`."""
    if len(stamp) != ID_BYTES:
        raise ValueError(f"an id stamp is {ID_BYTES} bytes, not {len(stamp)}")
    return int.from_bytes(stamp, "big", signed=True)


@dataclass(frozen=True, slots=True)
class TupleRef:
    """A tuple of a tree: ``"anchor_id:tuple_id"`` on the wire (FsShelter's encoding)."""

    anchor_id: int
    tuple_id: int

    def __str__(self) -> str:
        return f"{self.anchor_id}:{self.tuple_id}"

    @classmethod
    def parse(cls, text: str) -> TupleRef:
        """Read ``"anchor_id:tuple_id"``; ``ValueError`` for anything else."""
        parts = text.split(":") if isinstance(text, str) else []
        if len(parts) != 2:
            raise ValueError(f'a tuple reference is "anchor_id:tuple_id", not {text!r}')
        try:
            anchor_id, tuple_id = int(parts[0]), int(parts[1])
        except ValueError as exc:
            raise ValueError(f'a tuple reference is "anchor_id:tuple_id", not {text!r}') from exc
        return cls(check_id(anchor_id, "anchor_id"), check_id(tuple_id, "tuple_id"))


@dataclass(frozen=True, slots=True)
class Started:
    """A tree the spout started: emit ``roots``, one per downstream tuple."""

    anchor_id: int
    roots: tuple[TupleRef, ...]
    completed: bool = False


@dataclass(frozen=True, slots=True)
class Emitted:
    """What a bolt's ack returns: the children to emit, and whether the tree completed."""

    children: tuple[TupleRef, ...]
    completed: bool


# -- sinks: where the stamps go ---------------------------------------------------------


class TreeSink(Protocol):
    """A tracker seen from the tuple-tree helpers (blocking)."""

    def init(self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable) -> bool:
        """Start tree ``anchor_id`` with ``value`` (its root ids folded); True if it completed."""
        ...

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        """XOR ``value`` into the tree; True if this completed it."""
        ...

    def fail(self, anchor_id: int) -> None:
        """Fail the tree."""
        ...


class AsyncTreeSink(Protocol):
    """A tracker seen from :class:`AsyncTupleTree`."""

    async def init(
        self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable
    ) -> bool: ...

    async def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool: ...

    async def fail(self, anchor_id: int) -> None: ...


class AckerSink:
    """In-process :class:`Acker` shards; each tree goes to ``acker_for(ackers, anchor_id)``."""

    def __init__(self, ackers: Sequence[Acker]) -> None:
        if not ackers:
            raise ValueError("at least one acker is needed")
        self.ackers = tuple(ackers)

    def init(self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable) -> bool:
        outcome = acker_for(self.ackers, anchor_id).track(task_id, source_id, anchor_id, value)
        return isinstance(outcome, Acked)

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        return isinstance(acker_for(self.ackers, anchor_id).ok(anchor_id, value), Acked)

    def fail(self, anchor_id: int) -> None:
        acker_for(self.ackers, anchor_id).fail(anchor_id)


class AckSink:
    """An in-memory ``Ack``: tag ``prefix + str(anchor_id)``, 8-byte id stamps."""

    def __init__(self, ack: PyAck, prefix: str = "") -> None:
        self.ack = ack
        self.prefix = prefix

    def tag(self, anchor_id: int) -> str:
        return f"{self.prefix}{anchor_id}"

    def init(self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable) -> bool:
        return self.ack.add(self.tag(anchor_id), id_stamp(value))

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        return self.ack.stamp(self.tag(anchor_id), id_stamp(value))

    def fail(self, anchor_id: int) -> None:
        self.ack.fail(self.tag(anchor_id))


class _TableSink(Generic[ClientT]):
    """What both DynamoDB sinks hold: the client, the tag prefix and the chains' TTL."""

    def __init__(self, client: ClientT, prefix: str = "", *, ttl: float | None = None) -> None:
        self.client = client
        self.prefix = prefix
        self.ttl = ttl

    def tag(self, anchor_id: int) -> str:
        return f"{self.prefix}{anchor_id}"


class DynamoDBSink(_TableSink[SyncXorAckDynamoDB]):
    """A DynamoDB table through :class:`~xor_ack_dynamodb.SyncXorAckDynamoDB`.

    ``ttl``: seconds after which a tree that has not completed expires (the
    chain's TTL; a waiter then learns it timed out).  A stamp on a tree that
    failed raises ``ChainFailed``: stop processing its tuples.
    """

    def init(self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable) -> bool:
        return self.client.create(self.tag(anchor_id), id_stamp(value), ttl=self.ttl).acked

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        return self.client.stamp(self.tag(anchor_id), id_stamp(value), token=token).acked

    def fail(self, anchor_id: int) -> None:
        self.client.fail(self.tag(anchor_id))


class AsyncDynamoDBSink(_TableSink[XorAckDynamoDB]):
    """A DynamoDB table through the async :class:`~xor_ack_dynamodb.XorAckDynamoDB`."""

    async def init(
        self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable
    ) -> bool:
        state = await self.client.create(self.tag(anchor_id), id_stamp(value), ttl=self.ttl)
        return state.acked

    async def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        state = await self.client.stamp(self.tag(anchor_id), id_stamp(value), token=token)
        return state.acked

    async def fail(self, anchor_id: int) -> None:
        await self.client.fail(self.tag(anchor_id))


# -- planning: ids and folded values (no I/O) ---------------------------------------------


def _fold(values: Sequence[int]) -> int:
    acc = 0
    for value in values:
        acc ^= value
    return acc


def _derived_id(parent: TupleRef, call: bytes, index: int, salt: int) -> int:
    """A child id derived from its parent and the call: the same input gives the same children."""
    digest = hashlib.blake2b(
        b"%d:%d:%s:%d:%d" % (parent.anchor_id, parent.tuple_id, call, index, salt),
        digest_size=ID_BYTES,
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def _count(value: int, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, not {value!r}")
    return value


class _Planner:
    """Which ids a tree's tuples get and which value each message carries."""

    def __init__(self, next_id: Callable[[], int] | None, deterministic: bool) -> None:
        self.next_id = next_id if next_id is not None else IdGenerator()
        self.deterministic = deterministic

    def _fresh(self) -> int:
        value = check_id(self.next_id(), "generated id")
        if value == 0:
            raise ValueError("the id generator returned 0: ids must never be 0")
        return value

    def start(self, roots: int) -> tuple[int, tuple[TupleRef, ...], int]:
        _count(roots, "roots", 1)
        anchor_id = self._fresh()
        while True:
            ids = [self._fresh() for _ in range(roots)]
            value = _fold(ids)
            if value:  # XOR of several random ids is 0 with chance 2**-64: draw again
                return anchor_id, tuple(TupleRef(anchor_id, i) for i in ids), value

    def children(
        self, parent: TupleRef, n: int, call: bytes, own: int
    ) -> tuple[tuple[TupleRef, ...], int]:
        """``n`` children of ``parent`` and the value ``own ^ children`` (never 0).

        ``call`` names the bolt's call (its ack, or its k-th emit), so that derived
        ids of different calls on one input never coincide.
        """
        _count(n, "children", 0)
        salt = 0
        while True:
            if self.deterministic:
                ids = [_derived_id(parent, call, i, salt) for i in range(n)]
            else:
                ids = [self._fresh() for _ in range(n)]
            value = own ^ _fold(ids)
            if value and all(ids):
                return tuple(TupleRef(parent.anchor_id, i) for i in ids), value
            salt += 1

    def token(self, call: bytes, parent: TupleRef) -> bytes | None:
        """Idempotency token of a bolt's write: only derived children make a re-send equal."""
        if not self.deterministic:
            return None
        return call + parent.tuple_id.to_bytes(ID_BYTES, "big", signed=True)


_ACK_CALL = b"a"
_MAX_OFFSET = 2**32 - 1


def _emit_call(offset: int) -> bytes:
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= _MAX_OFFSET:
        raise ValueError(f"offset must be an int in [0, {_MAX_OFFSET}], not {offset!r}")
    return b"e" + offset.to_bytes(4, "big")


class TupleTree:
    """Spout and bolt helpers over a blocking sink.

    ``next_id``: the task's id generator (default: a fresh :class:`IdGenerator`).
    ``deterministic``: derive a bolt's child ids from its input, and send the
    input id as the write's idempotency token (DynamoDB), so that processing the
    same input again is harmless.
    """

    def __init__(
        self,
        sink: TreeSink,
        next_id: Callable[[], int] | None = None,
        *,
        deterministic: bool = False,
    ) -> None:
        self.sink = sink
        self._plan = _Planner(next_id, deterministic)

    def start(
        self, roots: int = 1, *, task_id: Hashable = None, source_id: Hashable = None
    ) -> Started:
        """Spout: start a tree whose ``roots`` tuples are about to be emitted (one message)."""
        anchor_id, refs, value = self._plan.start(roots)
        completed = self.sink.init(anchor_id, value, task_id=task_id, source_id=source_id)
        return Started(anchor_id, refs, completed)

    def ack(self, input: TupleRef, children: int = 0) -> Emitted:
        """Bolt: ``input`` is processed and ``children`` tuples are to be emitted.

        One stamp acks the input and anchors every child; emit the returned
        children only after this returns.
        """
        refs, value = self._plan.children(input, children, _ACK_CALL, input.tuple_id)
        token = self._plan.token(_ACK_CALL, input)
        completed = self.sink.xor(input.anchor_id, value, token=token)
        return Emitted(refs, completed)

    def emit(self, input: TupleRef, children: int, *, offset: int = 0) -> tuple[TupleRef, ...]:
        """Bolt: anchor ``children`` more tuples to ``input``'s tree before ``input`` is acked.

        For a bolt that emits while it works; one stamp per call.  With
        ``deterministic``, give each call of one input a distinct ``offset``.
        """
        _count(children, "children", 1)
        call = _emit_call(offset)
        refs, value = self._plan.children(input, children, call, 0)
        self.sink.xor(input.anchor_id, value, token=self._plan.token(call, input))
        return refs

    def fail(self, input: TupleRef) -> None:
        """Bolt: processing ``input`` failed; the whole tree fails."""
        self.sink.fail(input.anchor_id)


class AsyncTupleTree:
    """:class:`TupleTree` over an async sink (:class:`AsyncDynamoDBSink`)."""

    def __init__(
        self,
        sink: AsyncTreeSink,
        next_id: Callable[[], int] | None = None,
        *,
        deterministic: bool = False,
    ) -> None:
        self.sink = sink
        self._plan = _Planner(next_id, deterministic)

    async def start(
        self, roots: int = 1, *, task_id: Hashable = None, source_id: Hashable = None
    ) -> Started:
        anchor_id, refs, value = self._plan.start(roots)
        completed = await self.sink.init(anchor_id, value, task_id=task_id, source_id=source_id)
        return Started(anchor_id, refs, completed)

    async def ack(self, input: TupleRef, children: int = 0) -> Emitted:
        refs, value = self._plan.children(input, children, _ACK_CALL, input.tuple_id)
        token = self._plan.token(_ACK_CALL, input)
        completed = await self.sink.xor(input.anchor_id, value, token=token)
        return Emitted(refs, completed)

    async def emit(
        self, input: TupleRef, children: int, *, offset: int = 0
    ) -> tuple[TupleRef, ...]:
        _count(children, "children", 1)
        call = _emit_call(offset)
        refs, value = self._plan.children(input, children, call, 0)
        await self.sink.xor(input.anchor_id, value, token=self._plan.token(call, input))
        return refs

    async def fail(self, input: TupleRef) -> None:
        await self.sink.fail(input.anchor_id)
