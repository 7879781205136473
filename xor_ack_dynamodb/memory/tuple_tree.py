"""Tuple-tree helpers: the spout and bolt side of Storm's protocol, over any tracker.

The spout starts a tree; every bolt that processes an input tuple acks it and
anchors the children it emits -- in **one** folded stamp, ``input_id ^ child_1
^ ... ^ child_n``, sent *before* the children are handed on, so no child can be
processed before it is anchored and a tree can never look complete while one of
its children is still on its way.  FsShelter sends one Anchor per child and
then an Ok for the input; Storm folds them, and so does this module.

The same :class:`TupleTree` runs over every tracker, through a small *sink*:

==========================  ===================================================
:class:`AckerSink`          in-process :class:`~xor_ack_dynamodb.memory.acker.Acker`
                            shards (Track / Ok / Fail messages)
:class:`AckSink`            an in-memory :class:`~xor_ack_dynamodb.memory.ack.Ack`
                            (tag = anchor id, stamps = 8-byte ids)
:class:`DynamoDBSink`       a DynamoDB table (``xor_ack_dynamodb.tuple_tree``, which
:class:`AsyncDynamoDBSink`  sits above both trackers): a tree shared by processes
==========================  ===================================================

Over DynamoDB the tag of a tree is ``prefix + str(anchor_id)`` and each id is
an 8-byte stamp (int64, two's complement, big-endian, never 0).  With
``deterministic=True`` a bolt's child ids are derived from its input (and the
write carries the input id as idempotency token), so an input processed twice
-- a Lambda retry, a re-delivered message -- produces the same children and the
same stamp, which DynamoDB applies once: the tree still completes exactly.

**One core, two drivers.**  :class:`TupleTree` (blocking) and
:class:`AsyncTupleTree` share a sans-I/O core, :class:`~._tree_plan.TreePlan`:
for each call it makes every decision (ids, the folded value, the idempotency
token, validation) and returns a *step* -- the one request to send and how the
sink's answer becomes the result.  A driver only sends the request, blocking or
awaited (``_send``), and states the public signature.  Generating the async
class from the sync one (unasync) was not chosen: it needs a build step, and the
generated source is what mypy and readers would have to trust without seeing it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, ClassVar, Generic, Protocol, TypeVar

from ..errors import InvalidArgument
from ..stamps import Stamp
from ._applied_tokens import tokens_of as _tokens_of
from ._tree_plan import (
    ID_BYTES,
    Emitted,
    Init,
    Started,
    Step,
    TreePlan,
    TupleRef,
    Xor,
)
from .acker import Acked, Acker, acker_for, check_id

if TYPE_CHECKING:
    from .ack import PyAck

SinkT = TypeVar("SinkT")
R = TypeVar("R")

__all__ = [
    "AckSink",
    "AckerSink",
    "AsyncTreeSink",
    "AsyncTupleTree",
    "Emitted",
    "Started",
    "TreeSink",
    "TupleRef",
    "TupleTree",
    "id_from_stamp",
    "id_stamp",
]


def id_stamp(value: int) -> Stamp:
    """An int64 id (or folded value) as an 8-byte stamp: two's complement, big-endian."""
    return Stamp(check_id(value).to_bytes(ID_BYTES, "big", signed=True))


def id_from_stamp(stamp: bytes | bytearray | memoryview) -> int:
    """The inverse of :func:`id_stamp`; ``InvalidArgument`` for anything but 8 bytes.

    A memoryview counts by its bytes (``nbytes``), whatever its format, as stamps do.
    """
    if isinstance(stamp, (bytearray, memoryview)):
        try:
            stamp = bytes(stamp)
        except ValueError as exc:  # a released memoryview
            raise InvalidArgument(f"an id stamp cannot be read: {exc}") from exc
    elif not isinstance(stamp, bytes):
        raise InvalidArgument(
            f"an id stamp is {ID_BYTES} bytes (bytes, bytearray or memoryview), "
            f"not {type(stamp).__name__}"
        )
    if len(stamp) != ID_BYTES:
        raise InvalidArgument(f"an id stamp is {ID_BYTES} bytes, not {len(stamp)}")
    return int.from_bytes(stamp, "big", signed=True)


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

    def __init__(self, ackers: Iterable[Acker]) -> None:
        try:
            self.ackers = tuple(ackers)  # an iterator counts by what it yields
        except TypeError:
            raise InvalidArgument(
                f"AckerSink(ackers={ackers!r}): give a list of Acker, e.g. [Acker()]"
            ) from None
        if not self.ackers:
            raise InvalidArgument("AckerSink(ackers): at least one Acker is needed")
        for acker in self.ackers:
            if not isinstance(acker, Acker):
                raise InvalidArgument(
                    f"AckerSink(ackers=[..., {acker!r}, ...]): each one must be an Acker"
                )

    def init(self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable) -> bool:
        acker = acker_for(self.ackers, anchor_id)
        _tokens_of(acker).ended(anchor_id)  # a new tree: none of an old one's tokens
        return isinstance(acker.track(task_id, source_id, anchor_id, value), Acked)

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        acker = acker_for(self.ackers, anchor_id)
        return _tokens_of(acker).once(
            anchor_id, token, lambda: isinstance(acker.ok(anchor_id, value), Acked)
        )

    def fail(self, anchor_id: int) -> None:
        acker = acker_for(self.ackers, anchor_id)
        _tokens_of(acker).ended(anchor_id)
        acker.fail(anchor_id)


class AckSink:
    """An in-memory ``Ack``: tag ``prefix + str(anchor_id)``, 8-byte id stamps."""

    def __init__(self, ack: PyAck, prefix: str = "") -> None:
        from ._ack_methods import _AckMethods

        if not isinstance(ack, _AckMethods):
            hint = ": an Acker goes in AckerSink([...])" if isinstance(ack, Acker) else ""
            raise InvalidArgument(f"AckSink(ack={ack!r}) needs an Ack (Ack(), PyAck()){hint}")
        self.ack = ack
        self.prefix = prefix
        self.tokens = _tokens_of(ack)

    def tag(self, anchor_id: int) -> str:
        return f"{self.prefix}{anchor_id}"

    def init(self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable) -> bool:
        self.tokens.ended(self.tag(anchor_id))  # a new tree: none of an old one's tokens
        return self.ack.add(self.tag(anchor_id), id_stamp(value))

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        tag = self.tag(anchor_id)
        return self.tokens.once(tag, token, lambda: self.ack.stamp(tag, id_stamp(value)))

    def fail(self, anchor_id: int) -> None:
        self.tokens.ended(self.tag(anchor_id))
        self.ack.fail(self.tag(anchor_id))


# -- the drivers: one request per call, sent blocking or awaited ---------------------------


class _Driver(Generic[SinkT]):
    """What both drivers hold: the sink and the plan (see :mod:`._tree_plan`).

    A driver takes only a sink of its kind (``_awaits``: async), checked before anything
    is sent: a blocking driver would take an async sink's coroutines for answers (a
    truthy "completed", nothing written), an async one would write, then fail to await.
    """

    _awaits: ClassVar[bool]
    _other: ClassVar[str]

    def __init__(
        self,
        sink: SinkT,
        next_id: Callable[[], int] | None = None,
        *,
        deterministic: bool = False,
    ) -> None:
        for verb in ("init", "xor", "fail"):
            if not callable(getattr(sink, verb, None)):
                raise InvalidArgument(
                    f"{type(self).__name__} needs a sink with init, xor and fail methods "
                    f"(AckerSink, AckSink, DynamoDBSink, ...); {type(sink).__name__} has no {verb}"
                )
            if inspect.iscoroutinefunction(getattr(sink, verb, None)) != self._awaits:
                kind, other = ("async", "blocking") if self._awaits else ("blocking", "async")
                raise InvalidArgument(
                    f"{type(self).__name__} needs a sink whose init, xor and fail are {kind}; "
                    f"{type(sink).__name__}.{verb} is {other}: use {self._other} for it"
                )
        if next_id is not None and not callable(next_id):
            raise InvalidArgument(
                f"{type(self).__name__}(next_id={next_id!r}): give a function that returns a "
                "new id, e.g. IdGenerator(), or None"
            )
        self.sink = sink
        self._plan = TreePlan(next_id, deterministic)


def _refuse_awaitable(sink: object, answer: object) -> None:
    """A blocking sink's answer that is an awaitable (plain methods that return an async
    sink's coroutines) did nothing, and would read as "completed": refused, and closed."""
    if inspect.isawaitable(answer):
        close = getattr(answer, "close", None)
        if callable(close):
            close()  # never run: no "never awaited" warning
        raise InvalidArgument(
            f"TupleTree needs a blocking sink: {type(sink).__name__}'s methods return "
            "awaitables (nothing was written): use AsyncTupleTree for it"
        )


class TupleTree(_Driver[TreeSink]):
    """Spout and bolt helpers over a blocking sink.

    ``next_id``: the task's id generator (default: a fresh :class:`IdGenerator`).
    ``deterministic``: derive a bolt's child ids from its input, and send the
    input id as the write's idempotency token (DynamoDB), so that processing the
    same input again is harmless.
    """

    _awaits = False
    _other = "AsyncTupleTree"

    def _send(self, step: Step[R]) -> R:
        request = step.request
        if isinstance(request, Init):
            completed = self.sink.init(
                request.anchor_id,
                request.value,
                task_id=request.task_id,
                source_id=request.source_id,
            )
        elif isinstance(request, Xor):
            completed = self.sink.xor(request.anchor_id, request.value, token=request.token)
        else:
            failing: Callable[[int], object] = self.sink.fail  # an adapter's returns a coroutine
            _refuse_awaitable(self.sink, failing(request.anchor_id))
            completed = False
        _refuse_awaitable(self.sink, completed)
        return step.finish(completed)

    def start(
        self, roots: int = 1, *, task_id: Hashable = None, source_id: Hashable = None
    ) -> Started:
        """Spout: start a tree whose ``roots`` tuples are about to be emitted (one message)."""
        return self._send(self._plan.start(roots, task_id, source_id))

    def ack(self, input: TupleRef, children: int = 0) -> Emitted:
        """Bolt: ``input`` is processed and ``children`` tuples are to be emitted.

        One stamp acks the input and anchors every child; emit the returned
        children only after this returns.
        """
        return self._send(self._plan.ack(input, children))

    def emit(self, input: TupleRef, children: int, *, offset: int = 0) -> tuple[TupleRef, ...]:
        """Bolt: anchor ``children`` more tuples to ``input``'s tree before ``input`` is acked.

        For a bolt that emits while it works; one stamp per call.  With
        ``deterministic``, give each call of one input a distinct ``offset``.
        """
        return self._send(self._plan.emit(input, children, offset))

    def fail(self, input: TupleRef) -> None:
        """Bolt: processing ``input`` failed; the whole tree fails."""
        self._send(self._plan.fail(input))


class AsyncTupleTree(_Driver[AsyncTreeSink]):
    """:class:`TupleTree` over an async sink (:class:`AsyncDynamoDBSink`): the same calls."""

    _awaits = True
    _other = "TupleTree"

    async def _send(self, step: Step[R]) -> R:
        request = step.request
        if isinstance(request, Init):
            completed = await self.sink.init(
                request.anchor_id,
                request.value,
                task_id=request.task_id,
                source_id=request.source_id,
            )
        elif isinstance(request, Xor):
            completed = await self.sink.xor(request.anchor_id, request.value, token=request.token)
        else:
            await self.sink.fail(request.anchor_id)
            completed = False
        return step.finish(completed)

    async def start(
        self, roots: int = 1, *, task_id: Hashable = None, source_id: Hashable = None
    ) -> Started:
        return await self._send(self._plan.start(roots, task_id, source_id))

    async def ack(self, input: TupleRef, children: int = 0) -> Emitted:
        return await self._send(self._plan.ack(input, children))

    async def emit(
        self, input: TupleRef, children: int, *, offset: int = 0
    ) -> tuple[TupleRef, ...]:
        return await self._send(self._plan.emit(input, children, offset))

    async def fail(self, input: TupleRef) -> None:
        await self._send(self._plan.fail(input))
