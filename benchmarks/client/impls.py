"""The seed's algorithm and ``XorAckDynamoDB`` behind one face (``Impl``)."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Protocol

from seed_baseline import SeedXorAck

from xor_ack_dynamodb import Stamp, XorAckDynamoDB, xor
from xor_ack_dynamodb.dynamodb._core.effects import Call, Entry
from xor_ack_dynamodb.dynamodb._core.many import Chains

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
        # As connect() makes it: the chain requests on the direct path, counted there too.
        self.ack = XorAckDynamoDB(
            client,
            table=table,
            retry=RACE_RETRY,
            coalesce=coalesce,
            batch_writes=batch_writes,
            direct=True,
        )
        if self.ack._direct is not None:
            counter.install_direct(self.ack._direct)

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


class TemplateImpl:
    """A reference, not a client: ours' three requests of a short chain sent from templates.

    The create and the stamps are the ``UpdateItem`` requests the core builds (rendered
    once, here), with only the key, the stamp, the version and a fresh write token put in
    per request: what sending exactly these requests costs the client with no client
    logic at all (no cache, no plan, no validation, no proof of a lost response).  It
    reads nothing and handles no failure; ``--short-chains --decompose`` runs it beside
    the two algorithms to say what ours' CPU above it is made of.
    """

    def __init__(self, client: Any, table: str, counter: RequestCounter) -> None:
        self.name = "floor: ours' requests from templates"
        self.counter = counter
        self._client = client
        self._table = table
        core = Chains(table=table)
        create = core.create("template", Stamp(b"\1" * 16))
        self._create = next(create).params
        with contextlib.suppress(StopIteration):
            create.send({})
        templates: list[dict[str, Any]] = []
        for value in (Stamp(b"\2" * 16), Stamp(b"\3" * 16)):  # a stamp, then the one that acks
            stamp = core.stamp_batch("template", [Entry(value)])
            call = next(stamp)
            assert isinstance(call, Call)
            templates.append(call.params)
            with contextlib.suppress(StopIteration):
                stamp.send({})
        self._stamp, self._ack = templates
        self._key = core.partition_key
        self._chains: dict[str, tuple[bytes, int]] = {}

    def _request(self, template: dict[str, Any], tag: str, **values: Any) -> dict[str, Any]:
        params = dict(template)
        params["Key"] = {self._key: {"S": tag}}
        params["ExpressionAttributeValues"] = {**template["ExpressionAttributeValues"], **values}
        return params

    async def create(self, tag: str, stamp: Stamp) -> Stamp:
        token = {"B": os.urandom(8)}
        await self._client.update_item(
            **self._request(self._create, tag, **{":s": {"B": bytes(stamp)}, ":t": token})
        )
        self._chains[tag] = (bytes(stamp), 1)
        return stamp

    async def stamp(self, tag: str, stamp: Stamp) -> Stamp:
        old, version = self._chains[tag]
        new = xor(old, stamp)
        values = {
            ":s": {"B": bytes(new)},
            ":v": {"N": str(version + 1)},
            ":old": {"N": str(version)},
            ":t": {"B": os.urandom(8)},
        }
        template = self._ack if new.acked else self._stamp
        await self._client.update_item(**self._request(template, tag, **values))
        self._chains[tag] = (bytes(new), version + 1)
        return new

    async def closed(self, tag: str) -> bool:
        response = await self._client.get_item(
            TableName=self._table, Key={self._key: {"S": tag}}, ConsistentRead=True
        )
        item = response.get("Item", {})
        return "acked_at" in item and not any(item.get("stamp", {}).get("B", b"\1"))

    def stats(self) -> dict[str, int]:
        return {}

    def cold(self) -> Impl:
        return self
