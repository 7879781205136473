"""With ``retry=None``, StaleLocalData means a write landed between this call's read and write.

A client remembers the last state it saw of each chain so an uncontended stamp is
one request.  When another client has written since, that memory is old: the
first write's condition fails although no write raced *this* call.  The refusal
returns the item, and the stamp is planned again on it, once, without counting a
lost race.  Only a write that lands between that fresh state and the next write
is a lost race, which ``retry=None`` reports at once.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.errors import StaleLocalData
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client
from .hooks import Trigger, hooked_client

pytestmark = pytest.mark.ddblocal


def _other(local: tuple[str, TableSpec]) -> SyncXorAckDynamoDB:
    raw = boto3.client("dynamodb", endpoint_url=local[0], region_name="us-east-1")
    return SyncXorAckDynamoDB(raw, table=local[1].name)


async def test_a_stale_cache_is_refreshed_not_refused(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    a, b, c = new_stamp(), new_stamp(), new_stamp()
    other = _other(local)
    async with open_client(kind, local[0], local[1].name, retry=None) as seedlike:
        await seedlike.create("foo", xor(a, b, c))  # remembers version 1
        other.stamp("foo", a)  # version 2: the memory is old, but nobody races
        assert await seedlike.stamp("foo", b) == c
        assert seedlike.stats.cache_refreshes == 1 and seedlike.stats.conflicts == 0
        assert seedlike.stats.requests["UpdateItem"] == 3  # create, stale write, write
        other.stamp("foo", new_stamp())  # old again, for the next stamp too
        await seedlike.stamp("foo", new_stamp())
        assert seedlike.stats.cache_refreshes == 2
    state = other.get("foo")
    assert state is not None and state.version == 5


async def test_stale_caches_of_many_chains_are_refreshed_in_a_transaction(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    other = _other(local)
    kids = {f"t{i}": (new_stamp(), new_stamp()) for i in range(5)}
    async with open_client(kind, local[0], local[1].name, retry=None) as seedlike:
        await seedlike.create_many({tag: xor(x, y) for tag, (x, y) in kids.items()})
        other.stamp_many({tag: x for tag, (x, _) in kids.items()})  # every memory is old
        done = await seedlike.stamp_many({tag: y for tag, (_, y) in kids.items()}, transact=True)
        assert all(state.acked for state in done.values())
        assert seedlike.stats.cache_refreshes == 5 and seedlike.stats.conflicts == 0


async def test_a_write_between_the_fresh_state_and_the_write_is_stale_local_data(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    a, b = new_stamp(), new_stamp()
    other = _other(local)
    intrude = Trigger(lambda params: other.stamp("foo", new_stamp()), times=0)
    before: dict[str, Any] = {"update_item": intrude}
    async with hooked_client(kind, local[0], local[1].name, before=before, retry=None) as ack:
        await ack.create("foo", xor(a, b))
        # Another client writes just before each of our next two writes: the first one was
        # planned on the remembered state (planned again), the second on the item that the
        # refusal returned, which is this call's own fresh state: a lost race.
        intrude.arm(2)
        with pytest.raises(StaleLocalData) as info:
            await ack.stamp("foo", a)
        assert info.value.attempts == 1
        assert ack.stats.cache_refreshes == 1 and ack.stats.conflicts == 1
    async with hooked_client(
        kind, local[0], local[1].name, before=before, retry=None, cache_size=0
    ) as cold:
        intrude.arm(1)  # no memory: this call reads, then another write lands before ours
        with pytest.raises(StaleLocalData):
            await cold.stamp("foo", a)
        assert cold.stats.cache_refreshes == 0 and cold.stats.requests["GetItem"] == 1
    state = other.get("foo")
    assert state is not None and state.version == 4  # create + three intruders, none of ours


@pytest.mark.parametrize("transact", [False, True])
async def test_a_token_remembered_from_an_earlier_generation_still_stamps_the_new_chain(
    kind: str, local: tuple[str, TableSpec], transact: bool
) -> None:
    a, b, c, d = new_stamp(), new_stamp(), new_stamp(), new_stamp()
    other = _other(local)
    async with open_client(kind, local[0], local[1].name) as worker:
        await worker.create_many({"foo": xor(a, b), "bar": xor(c, d)})
        await worker.stamp_many({"foo": a, "bar": c}, tokens={"foo": "t", "bar": "t"})
        # Another client fails both chains and replays them: new chains under the same tags,
        # whose same work carries the same tokens; this worker still remembers the old ones.
        for tag, root in (("foo", xor(a, b)), ("bar", xor(c, d))):
            other.fail(tag)
            other.create(tag, root)
        done = await worker.stamp_many(
            {"foo": a, "bar": c}, tokens={"foo": "t", "bar": "t"}, transact=transact
        )
        assert done == {"foo": b, "bar": d}
    for tag, left in (("foo", b), ("bar", d)):
        state = other.get(tag)
        assert state is not None and state.version == 2 and state.stamp == left


@pytest.mark.parametrize("transact", [False, True])
async def test_a_stamp_length_remembered_from_an_earlier_generation_does_not_refuse_the_new_chain(
    kind: str, local: tuple[str, TableSpec], transact: bool
) -> None:
    other = _other(local)
    async with open_client(kind, local[0], local[1].name) as worker:
        await worker.create_many({"foo": new_stamp(16), "bar": new_stamp(16)})
        # Replayed by another client with 8-byte stamps; this worker remembers 16-byte chains.
        roots = {"foo": new_stamp(8), "bar": new_stamp(8)}
        for tag, root in roots.items():
            other.fail(tag)
            other.create(tag, root)
        done = await worker.stamp_many(roots, transact=transact)
        assert all(state.acked for state in done.values())
    for tag in roots:
        state = other.get(tag)
        assert state is not None and state.acked
