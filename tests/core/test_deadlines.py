"""Deadlines, sweeps and the inventory on moto and DynamoDB Local, both clients.

Every client here runs on an injected clock (``clock=``): DynamoDB conditions
have no "now" of their own, every ``:now`` is the client's, so moving the clock
is moving time for the table, and no test sleeps.  The races (a late stamp vs a
sweeper vs ``fail()``, many sweepers at once, an ack in time vs sweepers whose
clocks are past the deadline) run on DynamoDB Local only: moto's server was
seen letting two concurrent conditional writes on one item both pass.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import ChainState, SyncXorAckDynamoDB, events, new_stamp, xor
from xor_ack_dynamodb.dynamodb import item as I
from xor_ack_dynamodb.errors import (
    ChainFailed,
    ChainTimedOut,
    CorruptItem,
    InvalidListener,
    InvalidListing,
    OnFailedRaised,
    SweepIncomplete,
    XorAckError,
)
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client

T0 = 1_800_000_000.0


class Clock:
    """A settable clock, shared by the clients of one test."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def listed(ack: Any, status: str, **options: Any) -> list[ChainState]:
    """``list_chains`` on either client (the sync one returns a plain iterator)."""
    result = ack.list_chains(status, **options)
    if hasattr(result, "__aiter__"):
        return [state async for state in result]
    return list(await result)


def index_tags(raw: Any, table: str, index: str, shard_key: str) -> set[str]:
    """What an index holds, every shard: to see that it is sparse."""
    tags: set[str] = set()
    for shard in range(I.INVENTORY_SHARDS):
        pages = raw.get_paginator("query").paginate(
            TableName=table,
            IndexName=index,
            KeyConditionExpression="#k = :s",
            ExpressionAttributeNames={"#k": shard_key},
            ExpressionAttributeValues={":s": {"N": str(shard)}},
        )
        tags |= {item["tagID"]["S"] for page in pages for item in page["Items"]}
    return tags


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def ack(kind: str, backend: tuple[str, TableSpec], clock: Clock) -> AsyncIterator[Any]:
    endpoint, spec = backend
    async with open_client(kind, endpoint, spec.name, clock=clock) as client:
        yield client


@pytest.fixture
def raw(backend: tuple[str, TableSpec]) -> Any:
    return boto3.client("dynamodb", endpoint_url=backend[0], region_name="us-east-1")


def get_raw(raw: Any, table: str, tag: str) -> dict[str, Any]:
    item: dict[str, Any] = raw.get_item(
        TableName=table, Key={"tagID": {"S": tag}}, ConsistentRead=True
    )["Item"]
    return item


# -- behaviour, on both backends and both clients ---------------------------------------


async def test_a_late_stamp_is_refused_and_the_chain_failed_once(
    ack: Any, clock: Clock, raw: Any, backend: tuple[str, TableSpec]
) -> None:
    table = backend[1].name
    root, child = new_stamp(), new_stamp()
    await ack.create("late", root, timeout=60)
    await ack.stamp("late", xor(root, child))
    assert float(get_raw(raw, table, "late")["due_at"]["N"]) == T0 + 60
    clock.now = T0 + 61
    with pytest.raises(ChainTimedOut) as caught:
        await ack.stamp("late", child)  # would have acked: too late
    assert caught.value.tag == "late" and caught.value.deadline == T0 + 60
    state = await ack.get("late")
    assert state.failed and state.reason == "timeout" and not state.acked
    item = get_raw(raw, table, "late")
    assert int(item["failed_shard"]["N"]) == I.shard_of("late")
    assert not {"open_shard", "due_at", "deadline"} & set(item)
    assert state.version == 3  # create, stamp, the timeout: nothing else landed
    with pytest.raises(ChainFailed):  # already failed: nothing more is written
        await ack.stamp("late", child)
    with pytest.raises(ChainFailed):
        await ack.touch("late", timeout=10)
    assert (await ack.get("late")).version == 3


@pytest.mark.parametrize(
    "offset", [-0.0003, 0.0, 0.0004], ids=["0.3ms-before", "at", "0.4ms-after"]
)
async def test_in_its_deadline_millisecond_a_chain_is_late_to_stamps_sweeps_and_readers_alike(
    ack: Any, clock: Clock, offset: float
) -> None:
    # Writes are timed to the millisecond (every :now), so the deadline's millisecond is late
    # for a write: then it is late for a reader and a sweep too, and a stamp is not retried.
    root = new_stamp()
    await ack.create("edge-stamp", root, timeout=10)
    await ack.create("edge-sweep", root, timeout=10)
    clock.now = T0 + 10 + offset
    assert (await ack.get("edge-stamp")).overdue(clock.now)
    with pytest.raises(ChainTimedOut) as caught:
        await ack.stamp("edge-stamp", root)
    assert caught.value.failed_by_this_call
    assert [state.tag for state in await listed(ack, "overdue")] == ["edge-sweep"]
    assert [state.tag for state in await ack.sweep()] == ["edge-sweep"]
    assert (await ack.get("edge-sweep")).reason == "timeout"


async def test_idle_timeout_under_steady_progress_never_fires(ack: Any, clock: Clock) -> None:
    root = new_stamp()
    await ack.create("busy", root, idle_timeout=10, ttl=30)
    last = root
    for i in range(20):  # 20 stamps 9 s apart: 180 s, far past the first deadline
        clock.now += 9
        child = new_stamp()
        await ack.stamp("busy", xor(last, child))
        last = child
        if i % 5 == 4:
            assert await ack.sweep() == []
    chain = await ack.get("busy")
    assert chain.live and chain.deadline == pytest.approx(clock.now + 10)
    assert chain.expires_at is not None and chain.expires_at > chain.deadline  # TTL moved along
    clock.now += 9
    assert (await ack.stamp("busy", last)).acked
    clock.now += 100
    assert await ack.sweep() == []
    assert (await ack.get("busy")).acked


async def test_touch_extends_the_deadline(ack: Any, clock: Clock) -> None:
    root = new_stamp()
    await ack.create("slow", root, timeout=10)
    clock.now += 5
    touched = await ack.touch("slow", timeout=30)
    assert touched.deadline == T0 + 35
    clock.now = T0 + 20
    child = new_stamp()
    await ack.stamp("slow", xor(root, child))  # in time thanks to the touch
    clock.now = T0 + 36
    with pytest.raises(ChainTimedOut):
        await ack.touch("slow", timeout=30)  # too late even to touch
    assert (await ack.get("slow")).reason == "timeout"


async def test_touch_decides_on_the_chain_not_on_a_remembered_earlier_generation(
    ack: Any, clock: Clock, backend: tuple[str, TableSpec]
) -> None:
    raw = boto3.client("dynamodb", endpoint_url=backend[0], region_name="us-east-1")
    other = SyncXorAckDynamoDB(raw, table=backend[1].name, clock=clock)
    await ack.create("job", new_stamp())  # remembered by ack: no idle_timeout
    other.fail("job")
    other.create("job", new_stamp(), idle_timeout=10)  # replayed, with an idle timeout
    clock.now += 5
    touched = await ack.touch("job")
    assert touched.deadline == T0 + 15
    state = other.get("job")
    assert state is not None and state.deadline == T0 + 15


async def test_fail_after_the_deadline_is_a_timeout(ack: Any, clock: Clock) -> None:
    await ack.create("f", new_stamp(), timeout=5)
    clock.now += 6
    with pytest.raises(ChainTimedOut):
        await ack.fail("f", "my reason")
    assert (await ack.get("f")).reason == "timeout"


async def test_the_index_lists_exactly_the_open_overdue_and_failed_chains(
    ack: Any, clock: Clock, raw: Any, backend: tuple[str, TableSpec]
) -> None:
    table = backend[1].name
    root = new_stamp()
    await ack.create("no-deadline", new_stamp())
    await ack.create_many({"soon-1": new_stamp(), "soon-2": new_stamp()}, timeout=10)
    await ack.create("later", new_stamp(), timeout=1000)
    await ack.create("acked", root, timeout=10)
    await ack.stamp("acked", root)
    await ack.create("failed", new_stamp())
    await ack.fail("failed", "by hand")
    clock.now += 20
    open_ = {"no-deadline", "soon-1", "soon-2", "later"}
    assert {s.tag for s in await listed(ack, "open")} == open_
    assert {s.tag for s in await listed(ack, "overdue")} == {"soon-1", "soon-2"}
    assert {s.tag for s in await listed(ack, "failed")} == {"failed"}
    # the indexes themselves are sparse: only live chains, only failed tombstones
    assert index_tags(raw, table, I.OPEN_INDEX, I.OPEN_SHARD) == open_
    assert index_tags(raw, table, I.FAILED_INDEX, I.FAILED_SHARD) == {"failed"}
    swept = await ack.sweep(page_size=1)
    assert sorted(s.tag for s in swept) == ["soon-1", "soon-2"]
    assert all(s.reason == "timeout" and s.failed for s in swept)
    assert await listed(ack, "overdue") == []
    assert {s.tag for s in await listed(ack, "failed")} == {"failed", "soon-1", "soon-2"}
    assert index_tags(raw, table, I.OPEN_INDEX, I.OPEN_SHARD) == {"no-deadline", "later"}
    assert len(await listed(ack, "open", limit=1, page_size=1)) == 1
    assert await ack.sweep() == []


async def test_a_sweep_names_a_damaged_overdue_chain_and_fails_the_others(
    ack: Any, clock: Clock, raw: Any, backend: tuple[str, TableSpec]
) -> None:
    table = backend[1].name
    await ack.create("fine", new_stamp(), timeout=10)
    await ack.create("damaged", new_stamp(), timeout=10)
    raw.update_item(  # another program writes a string where the stamp's bytes belong
        TableName=table,
        Key={"tagID": {"S": "damaged"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": I.STAMP},
        ExpressionAttributeValues={":s": {"S": "abc"}},
    )
    clock.now += 11
    for swept in (["fine"], []):  # every sweep names it, until it is repaired or deleted
        with pytest.raises(SweepIncomplete) as caught:
            await ack.sweep(page_size=1)
        assert [state.tag for state in caught.value.failed] == swept
        error = caught.value.errors["damaged"]
        assert isinstance(error, CorruptItem) and error.attribute == I.STAMP
        assert set(caught.value.errors) == {"damaged"}
    assert (await ack.get("fine")).reason == "timeout"
    assert get_raw(raw, table, "damaged")[I.STAMP] == {"S": "abc"}  # left as it was
    await ack.delete("damaged")
    assert await ack.sweep() == []


async def test_an_on_failed_that_raises_stops_no_sweep(
    ack: Any, clock: Clock, raw: Any, backend: tuple[str, TableSpec]
) -> None:
    """A notification that fails once (a network blip) stopped the sweep at its first
    chain: the other overdue chains stayed live.  Each chain on its own: every one is
    failed and told, then ``OnFailedRaised`` says which callbacks raised."""
    tags = [f"job-{i}" for i in range(6)]
    await ack.create_many({tag: new_stamp() for tag in tags}, timeout=10)
    clock.now += 11
    told: list[str] = []

    def notify(state: ChainState) -> None:
        told.append(state.tag)
        if len(told) == 1:
            raise RuntimeError("notification service unavailable")

    with pytest.raises(OnFailedRaised, match="notification service unavailable") as caught:
        await ack.sweep(page_size=2, on_failed=notify)
    assert sorted(told) == sorted(s.tag for s in caught.value.failed) == tags
    assert list(caught.value.errors) == told[:1]
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert all(s is not None and s.failed for s in (await ack.get_many(tags)).values())
    # With a chain the sweep cannot fail, its own error comes first, noting the callback's.
    await ack.create("damaged", new_stamp(), timeout=10)
    await ack.create("late", new_stamp(), timeout=10)
    raw.update_item(
        TableName=backend[1].name,
        Key={"tagID": {"S": "damaged"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": I.STAMP},
        ExpressionAttributeValues={":s": {"S": "abc"}},
    )
    clock.now += 11
    told.clear()
    with pytest.raises(SweepIncomplete) as incomplete:
        await ack.sweep(on_failed=notify)
    assert [s.tag for s in incomplete.value.failed] == ["late"]
    assert any('on_failed also raised for 1 chain(s) (first: "late"' in note
               for note in incomplete.value.__notes__)  # fmt: skip


async def test_an_async_on_failed_is_refused_before_anything_is_written(
    ack: Any, clock: Clock
) -> None:
    """``async def on_failed`` was called and its coroutine dropped: the chains failed, the
    user's code never ran, nothing said."""
    await ack.create("job", new_stamp(), timeout=10)
    clock.now += 11

    async def on_failed(state: ChainState) -> None:
        raise AssertionError("never called")

    with pytest.raises(InvalidListener, match="on_failed"):
        await ack.sweep(on_failed=on_failed)
    assert (await ack.get("job")).live


async def test_bad_listing_arguments_are_refused_before_anything_is_sent(ack: Any) -> None:
    with pytest.raises(XorAckError, match="status"):
        await listed(ack, "done")
    with pytest.raises(XorAckError, match="page_size"):
        await listed(ack, "open", page_size=0)


async def test_list_chains_refuses_bad_arguments_at_the_call_before_any_iteration(
    ack: Any,
) -> None:
    with pytest.raises(InvalidListing):
        listing = ack.list_chains("done")  # the async client: an async iterator, not iterated
        if inspect.isawaitable(listing):  # the sync twin, called in its worker thread
            await listing


# -- races, on DynamoDB Local ---------------------------------------------------------------


@pytest.fixture
async def clients(
    local: tuple[str, TableSpec],
) -> AsyncIterator[Any]:
    """A factory of clients on one DynamoDB Local table, each with its own clock."""
    endpoint, spec = local
    async with AsyncExitStack() as stack:

        async def make(kind: str, now: float) -> Any:
            return await stack.enter_async_context(
                open_client(kind, endpoint, spec.name, clock=Clock(now))
            )

        yield make


async def test_n_sweepers_at_once_fail_each_chain_exactly_once(clients: Any) -> None:
    maker = await clients("async", T0)
    tags = [f"job-{i:02d}" for i in range(30)]
    await maker.create_many({tag: new_stamp() for tag in tags}, timeout=10)
    sweepers = [await clients(kind, T0 + 11) for kind in ("async", "sync") * 3]
    results = await asyncio.gather(*(sweeper.sweep(page_size=7) for sweeper in sweepers))
    reported = [state.tag for result in results for state in result]
    assert sorted(reported) == tags  # each chain reported by exactly one sweeper
    states = await maker.get_many(tags)
    assert all(s is not None and s.reason == "timeout" and s.version == 2 for s in states.values())


async def test_a_late_stamp_a_sweeper_and_fail_race_and_the_chain_fails_once(
    clients: Any,
) -> None:
    maker = await clients("async", T0)
    roots = {f"race-{i:02d}": new_stamp() for i in range(12)}
    await maker.create_many(roots, timeout=10)
    late = await clients("async", T0 + 11)
    failer = await clients("sync", T0 + 11)
    sweeper = await clients("sync", T0 + 12)

    async def outcome(call: Any) -> tuple[str, bool]:
        try:
            await call
        except ChainFailed as exc:
            return exc.code, exc.failed_by_this_call
        return "ok", True

    stamps = [outcome(late.stamp(tag, root)) for tag, root in roots.items()]
    fails = [outcome(failer.fail(tag, "mine")) for tag in roots]
    swept, *seen = await asyncio.gather(sweeper.sweep(), *stamps, *fails)
    late_stamps, late_fails = seen[: len(roots)], seen[len(roots) :]
    # Whoever failed it, every late call is told the same type, and the one whose own
    # write failed the chain (a sweep, a stamp or a fail: exactly one) knows it.
    assert {code for code, _ in late_stamps + late_fails} == {"ChainTimedOut"}
    for i, tag in enumerate(roots):
        mine = [late_stamps[i][1], late_fails[i][1], tag in {s.tag for s in swept}]
        assert mine.count(True) == 1, (tag, mine)
    states = await maker.get_many(list(roots))
    for state in states.values():
        assert state is not None and state.failed and not state.acked
        assert state.reason == "timeout" and state.version == 2  # one write after create


async def test_a_chain_acked_in_time_is_never_failed_by_sweepers_past_its_deadline(
    clients: Any,
) -> None:
    maker = await clients("async", T0)
    roots = {f"ack-{i:02d}": new_stamp() for i in range(12)}
    await maker.create_many(roots, timeout=10)
    await maker.get_many(list(roots))  # cached: each stamp is one write
    in_time = await clients("async", T0 + 9.9)  # its clock: before the deadline
    await in_time.get_many(list(roots))
    sweepers = [await clients("sync", T0 + 10.5) for _ in range(3)]
    results = await asyncio.gather(
        *(in_time.stamp(tag, root) for tag, root in roots.items()),
        *(sweeper.sweep() for sweeper in sweepers),
        return_exceptions=True,
    )
    acks, sweeps = results[: len(roots)], results[len(roots) :]
    failed = {state.tag for result in sweeps for state in result}  # type: ignore[union-attr]
    states = await maker.get_many(list(roots))
    for (tag, state), outcome in zip(states.items(), acks, strict=True):
        assert state is not None and state.version == 2  # exactly one write landed
        assert state.acked != state.failed
        assert state.acked == (not isinstance(outcome, Exception))
        assert (tag in failed) == state.failed


async def test_batched_stamps_carry_the_deadline_condition_to_the_server(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """PartiQL statements: an idle stamp moves the deadline, an ack leaves the open index,
    and a statement whose chain is overdue on the server (not in the client's cache) is
    refused by its own ``deadline > ?`` and leads to the timeout."""
    endpoint, spec = local
    raw = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    clock = Clock()
    options: dict[str, Any] = {"batch_writes": True, "write_slots": 1, "clock": clock}
    async with open_client(kind, endpoint, spec.name, **options) as ack:
        roots = {f"b{i}": new_stamp() for i in range(12)}
        kids = {tag: new_stamp() for tag in roots}
        await ack.create_many(roots, idle_timeout=30)
        clock.now += 20
        await asyncio.gather(*(ack.stamp(t, xor(roots[t], kids[t])) for t in roots))
        assert ack.stats.batched_writes > 0
        assert all(s and s.deadline == T0 + 50 for s in (await ack.get_many(roots)).values())
        late = ["b0", "b1", "b2"]
        for tag in late:  # the deadline moved behind this client's back (same version)
            raw.update_item(
                TableName=spec.name,
                Key={"tagID": {"S": tag}},
                UpdateExpression="SET deadline = :d",
                ExpressionAttributeValues={":d": {"N": str(T0 + 21)}},
            )
        clock.now += 5
        outcomes = await asyncio.gather(
            *(ack.stamp(t, kids[t]) for t in roots), return_exceptions=True
        )
    for tag, outcome in zip(roots, outcomes, strict=True):
        if tag in late:
            assert isinstance(outcome, ChainTimedOut), outcome
        else:
            assert not isinstance(outcome, BaseException) and outcome.acked
    assert index_tags(raw, spec.name, I.OPEN_INDEX, I.OPEN_SHARD) == set()
    assert index_tags(raw, spec.name, I.FAILED_INDEX, I.FAILED_SHARD) == set(late)


def stream_records(endpoint: str, table: str) -> list[dict[str, Any]]:
    """Every record of the table's stream so far (DynamoDB Local serves Streams)."""
    ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    streams = boto3.client("dynamodbstreams", endpoint_url=endpoint, region_name="us-east-1")
    arn = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        ).get("ShardIterator")
        while iterator:
            page = streams.get_records(ShardIterator=iterator)
            records += page["Records"]
            if not page["Records"]:
                break
            iterator = page.get("NextShardIterator")
    return records


async def test_the_stream_shows_one_live_to_failed_record_per_chain_whoever_races(
    clients: Any, local: tuple[str, TableSpec]
) -> None:
    """What an events consumer hears: one transition record into "failed", reason timeout,
    per chain, however many sweepers and late callers raced; stamps are live -> live."""
    maker = await clients("async", T0)
    roots = {f"ev-{i:02d}": new_stamp() for i in range(8)}
    await maker.create_many(roots, timeout=10)
    child = new_stamp()
    await maker.stamp("ev-00", xor(roots["ev-00"], child))  # one intermediate stamp
    racers = [await clients(kind, T0 + 11) for kind in ("async", "sync") * 2]
    await asyncio.gather(
        *(racer.sweep() for racer in racers),
        *(racers[0].stamp(tag, root) for tag, root in roots.items()),
        return_exceptions=True,
    )
    failed: dict[str, int] = {}
    kinds: list[tuple[str, str]] = []
    for record in stream_records(local[0], local[1].name):
        change = record["dynamodb"]
        tag = change["Keys"]["tagID"]["S"]
        old, new = change.get("OldImage", {}), change.get("NewImage", {})
        kinds.append((tag, record["eventName"]))
        if "failed_at" in new and "failed_at" not in old:
            assert new["reason"] == {"S": "timeout"} and "open_shard" not in new
            failed[tag] = failed.get(tag, 0) + 1
    assert failed == dict.fromkeys(roots, 1)
    assert kinds.count(("ev-00", "MODIFY")) == 2  # the stamp (live -> live), the timeout
    assert all(kinds.count((tag, "INSERT")) == 1 for tag in roots)
    # Decoded as a consumer decodes them: per chain, created then timed out, once each.
    heard = [e for r in stream_records(local[0], local[1].name) for e in events.decode(r)]
    assert {type(e) for e in heard} == {events.Created, events.TimedOut}
    for cls in (events.Created, events.TimedOut):
        assert sorted(e.tag for e in heard if isinstance(e, cls)) == sorted(roots)
