"""The seed's algorithm and ``XorAckDynamoDB`` behind one face (``Impl``)."""

from __future__ import annotations

from typing import Any, Protocol

from seed_baseline import SeedXorAck

from xor_ack_dynamodb import Stamp, XorAckDynamoDB

from .common import RACE_RETRY
from .counting import RequestCounter


class Impl(Protocol):
    name: str
    counter: RequestCounter

    async def create(self, tag: str, stamp: Stamp) -> Stamp: ...
    async def stamp(self, tag: str, stamp: Stamp) -> Stamp: ...
    async def closed(self, tag: str) -> bool: ...
    def stats(self) -> dict[str, int]: ...
    def cold(self) -> Impl: ...


class SeedImpl:
    def __init__(self, client: Any, table: str, counter: RequestCounter) -> None:
        self.name = "seed"
        self.counter = counter
        self._client = client
        self._table = table
        self._seed = SeedXorAck(client, table=table, retry=RACE_RETRY)

    async def create(self, tag: str, stamp: Stamp) -> Stamp:
        return await self._seed.create(tag, stamp)

    async def stamp(self, tag: str, stamp: Stamp) -> Stamp:
        return await self._seed.stamp(tag, stamp)

    async def closed(self, tag: str) -> bool:
        # The seed deletes a chain when it reaches zero.
        response = await self._client.get_item(
            TableName=self._table, Key={"tagID": {"S": tag}}, ConsistentRead=True
        )
        return "Item" not in response

    def stats(self) -> dict[str, int]:
        return {"conflicts": self._seed.conflicts}

    def cold(self) -> Impl:
        return self  # the seed keeps no state: every stamp reads


class OursImpl:
    def __init__(
        self,
        client: Any,
        table: str,
        counter: RequestCounter,
        *,
        coalesce: bool = True,
        batch_writes: bool = False,
    ) -> None:
        self.name = "ours" if coalesce else "ours (coalescing off)"
        if batch_writes:
            self.name += " (batch_writes)"
        self.counter = counter
        self._client = client
        self._table = table
        self._coalesce = coalesce
        self._batch_writes = batch_writes
        self.ack = XorAckDynamoDB(
            client, table=table, retry=RACE_RETRY, coalesce=coalesce, batch_writes=batch_writes
        )

    async def create(self, tag: str, stamp: Stamp) -> Stamp:
        return await self.ack.create(tag, stamp)

    async def stamp(self, tag: str, stamp: Stamp) -> Stamp:
        return await self.ack.stamp(tag, stamp)

    async def closed(self, tag: str) -> bool:
        # Ours keeps a completed chain as an acked tombstone.
        state = await self.ack.get(tag)
        return state is not None and state.acked

    def stats(self) -> dict[str, int]:
        return self.ack.stats.snapshot()

    def cold(self) -> Impl:
        """Another client object on the same connection: its state cache is empty."""
        return OursImpl(
            self._client,
            self._table,
            self.counter,
            coalesce=self._coalesce,
            batch_writes=self._batch_writes,
        )
