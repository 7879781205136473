"""Tuple trees over any tracker: the public path of :mod:`xor_ack_dynamodb.memory.tuple_tree`.

The spout and bolt helpers live with the in-memory tracker
(``memory/tuple_tree.py``); this module adds the two sinks that put a tree in a
DynamoDB table, which is why it sits above both trackers (an integration): the
in-memory tracker never imports the DynamoDB one.

==========================  ===================================================
:class:`DynamoDBSink`       :class:`~xor_ack_dynamodb.SyncXorAckDynamoDB`: a tree
                            shared by many processes (workers, Lambda)
:class:`AsyncDynamoDBSink`  :class:`~xor_ack_dynamodb.XorAckDynamoDB`, for
                            :class:`AsyncTupleTree`
==========================  ===================================================
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable
from typing import Generic, TypeVar, Unpack

from .dynamodb import Lifetime, SyncXorAckDynamoDB, XorAckDynamoDB
from .errors import ChainFailed, InvalidArgument
from .memory import tuple_tree as _tree
from .memory.tuple_tree import *  # noqa: F403 - the spout and bolt helpers, as they are there
from .memory.tuple_tree import id_stamp

__all__ = [*_tree.__all__, "AsyncDynamoDBSink", "DynamoDBSink"]

ClientT = TypeVar("ClientT")


class _TableSink(Generic[ClientT]):
    """What both DynamoDB sinks hold: the client, the tag prefix and each tree's ``create``
    options (``ttl``, ``timeout``, ``idle_timeout``: :class:`~xor_ack_dynamodb.Lifetime`)."""

    #: The client this sink takes, and the sink for the other one.
    _client: type
    _other: str

    def __init__(self, client: ClientT, prefix: str = "", **lifetime: Unpack[Lifetime]) -> None:
        if not isinstance(client, self._client):
            raise InvalidArgument(
                f"{type(self).__name__} needs a {self._client.__name__}, not "
                f"{type(client).__name__}: use {self._other} for it (nothing was written)"
            )
        self.client = client
        self.prefix = prefix
        self.lifetime = lifetime

    @property
    def ttl(self) -> float | None:
        return self.lifetime.get("ttl")

    def tag(self, anchor_id: int) -> str:
        return f"{self.prefix}{anchor_id}"


class DynamoDBSink(_TableSink[SyncXorAckDynamoDB]):
    """A DynamoDB table through :class:`~xor_ack_dynamodb.SyncXorAckDynamoDB`.

    Each tree is created with ``create(tag, root_ids, **lifetime)``.  ``timeout`` (the tree
    must complete by then) or ``idle_timeout`` (each bolt's stamp moves that deadline) make
    a tree whose bolt died end: past its deadline no stamp lands, the next one (or a sweep)
    fails it with ``"timeout"`` and its waiter gets ``ChainTimedOut``.  ``ttl`` only
    collects the item later; it is never a deadline (a waiter of a tree with only a ``ttl``
    gets ``WaitTimeout``, and ``TagNotFound`` once the item expired).  A stamp on a tree
    that failed raises ``ChainFailed`` (``ChainTimedOut`` past its deadline): stop
    processing its tuples.
    """

    _client = SyncXorAckDynamoDB
    _other = "AsyncDynamoDBSink (with AsyncTupleTree)"

    def init(self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable) -> bool:
        return self.client.create(self.tag(anchor_id), id_stamp(value), **self.lifetime).acked

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        return self.client.stamp(self.tag(anchor_id), id_stamp(value), token=token).acked

    def fail(self, anchor_id: int) -> None:
        with contextlib.suppress(ChainFailed):  # failed already (another bolt): it stays so
            self.client.fail(self.tag(anchor_id))


class AsyncDynamoDBSink(_TableSink[XorAckDynamoDB]):
    """A DynamoDB table through the async :class:`~xor_ack_dynamodb.XorAckDynamoDB`; the same
    options as :class:`DynamoDBSink`."""

    _client = XorAckDynamoDB
    _other = "DynamoDBSink (with TupleTree)"

    async def init(
        self, anchor_id: int, value: int, *, task_id: Hashable, source_id: Hashable
    ) -> bool:
        state = await self.client.create(self.tag(anchor_id), id_stamp(value), **self.lifetime)
        return state.acked

    async def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        state = await self.client.stamp(self.tag(anchor_id), id_stamp(value), token=token)
        return state.acked

    async def fail(self, anchor_id: int) -> None:
        with contextlib.suppress(ChainFailed):  # failed already (another bolt): it stays so
            await self.client.fail(self.tag(anchor_id))
