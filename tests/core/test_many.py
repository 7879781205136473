"""Many chains per request: get_many, create_many and stamp_many(transact=True).

Every behaviour runs on the async client and its sync twin.  What the server
decides (conditions, cancellation reasons, ALL_OLD) runs on moto and on
DynamoDB Local; what needs hundreds of chains runs on DynamoDB Local only
(moto deep-copies the table once per item of a transaction, so it takes
seconds there), and so do the races (moto's server does not make a
conditional write atomic under concurrent requests).  Lost responses run on
both: DynamoDB Local honours ``ClientRequestToken``, so botocore's re-sent
transaction is answered as the first one was; moto ignores it, so the re-send
is cancelled and only the write tokens in the items can tell that it landed.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.errors import (
    BufferLengthsUnequal,
    ChainFailed,
    CreateManyFailed,
    InvalidStamp,
    InvalidTag,
    InvalidToken,
    StampManyFailed,
    TagExists,
    TagNotFound,
    TransactionItemRejected,
    UnsettledWrite,
    ZeroBufferNoOp,
)
from xor_ack_dynamodb.retry import RetryPolicy
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client
from .hooks import (
    Trigger,
    assert_applied_once,
    client_error,
    hooked_client,
    raising,
)
from .lossy_proxy import LossyProxy, drop_first

PATIENT = RetryPolicy(max_attempts=500, base_delay=0.002, max_delay=0.05, max_elapsed=60)


@pytest.fixture
async def other(backend: tuple[str, TableSpec]) -> AsyncIterator[Any]:
    """A second client on the same table, with its own cache (the world changing behind us)."""
    endpoint, spec = backend
    async with open_client("sync", endpoint, spec.name) as client:
        yield client


@pytest.fixture
async def local_ack(kind: str, local: tuple[str, TableSpec]) -> AsyncIterator[Any]:
    async with open_client(kind, local[0], local[1].name) as client:
        yield client


@pytest.fixture
async def local_other(local: tuple[str, TableSpec]) -> AsyncIterator[Any]:
    async with open_client("sync", local[0], local[1].name) as client:
        yield client


def on_moto(request: pytest.FixtureRequest) -> bool:
    return bool(request.node.callspec.params.get("backend") == "moto")


def requests(ack: Any) -> Counter[str]:
    return Counter(dict(ack.stats.requests))


def sent_since(ack: Any, before: Counter[str]) -> dict[str, int]:
    """Requests per operation sent since ``before`` (only the operations that were sent)."""
    return dict(requests(ack) - before)


def expire(raw: Any, table: str, tag: str) -> None:
    """Put the chain's TTL in the past, as if DynamoDB had not swept it yet."""
    raw.update_item(
        TableName=table,
        Key={"tagID": {"S": tag}},
        UpdateExpression="SET expires_at = :e",
        ExpressionAttributeValues={":e": {"N": str(int(time.time()) - 10)}},
    )


# -- get_many ------------------------------------------------------------------


async def test_get_many_over_100_tags_with_missing_duplicates_and_closed_chains(
    ack: Any, other: Any, raw: Any, backend: tuple[str, TableSpec]
) -> None:
    tags = [f"g{i:03d}" for i in range(250)]
    exist = tags[::6]  # 42 chains spread over all three requests; the other 208 never exist
    roots = {tag: new_stamp() for tag in exist}
    await other.create_many(roots)
    acked, failed, expired, live = exist[:4], exist[4:8], exist[8:12], exist[12:]
    await other.stamp_many({tag: roots[tag] for tag in acked}, transact=True)
    for tag in failed:
        await other.fail(tag, reason="boom")
    for tag in expired:
        expire(raw, backend[1].name, tag)
    query = tags + tags[200:] + tags[:40] + tags[100:130]  # 120 duplicates
    random.Random(7).shuffle(query)

    before = ack.stats.snapshot()
    found = await ack.get_many(query)
    after = ack.stats.snapshot()
    assert after["requests.BatchGetItem"] - before.get("requests.BatchGetItem", 0) == 3
    assert after["requests"] - before["requests"] == 3  # nothing read one by one

    assert list(found) == list(dict.fromkeys(query))  # duplicates collapsed, first order kept
    # The same as get(), tag by tag: every chain, and missing tags from each request.
    sample = exist + [tag for tag in tags[1::25] if tag not in exist]
    one_by_one = await asyncio.gather(*(ack.get(tag) for tag in sample))
    assert {tag: found[tag] for tag in sample} == dict(zip(sample, one_by_one, strict=True))
    assert all(found[tag] is None for tag in tags if tag not in exist)
    assert all(found[tag] is None for tag in expired)  # expired counts as absent
    assert all(found[tag].acked for tag in acked)
    assert all(found[tag].failed and found[tag].reason == "boom" for tag in failed)
    for tag in live:
        state = found[tag]
        assert state is not None and state.live and state.stamp == roots[tag]
        assert state.version == 1 and state.tag == tag

    before = ack.stats.snapshot()
    assert await ack.get_many([]) == {}
    assert ack.stats.snapshot()["requests"] == before["requests"]
    with pytest.raises(InvalidTag):
        await ack.get_many(["fine", ""])


class Withholding:
    """An ``after`` hook for BatchGetItem: each ``stubborn`` key comes back unprocessed the
    first ``times`` times it is asked for, as DynamoDB does under throttling."""

    def __init__(self, stubborn: set[str], times: int) -> None:
        self.stubborn = stubborn
        self.times = times
        self.withheld: Counter[str] = Counter()

    def __call__(self, params: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
        ((table, ask),) = params["RequestItems"].items()
        assert ask["ConsistentRead"] is True
        names = {
            name
            for key in ask["Keys"]
            if (name := key["tagID"]["S"]) in self.stubborn and self.withheld[name] < self.times
        }
        if not names:
            return response
        self.withheld.update(names)
        items = response.get("Responses", {}).get(table, [])
        response["Responses"] = {table: [i for i in items if i["tagID"]["S"] not in names]}
        held = [key for key in ask["Keys"] if key["tagID"]["S"] in names]
        response["UnprocessedKeys"] = {table: {"Keys": held, "ConsistentRead": True}}
        return response


def cancelled(reasons: list[dict[str, Any]]) -> ClientError:
    return client_error(
        "TransactWriteItems", "TransactionCanceledException", CancellationReasons=reasons
    )


@pytest.mark.parametrize("times", [2, 1000])
async def test_get_many_asks_unprocessed_keys_again_then_reads_them_one_by_one(
    kind: str, local: tuple[str, TableSpec], local_other: Any, times: int
) -> None:
    endpoint, spec = local
    tags = [f"u{i:03d}" for i in range(120)]
    roots = {tag: new_stamp() for tag in tags[:105]}
    await local_other.create_many(roots)
    if times == 2:  # in both requests, chains that exist and one that does not
        stubborn = {tags[3], tags[50], tags[101], tags[110]}
    else:  # in the second request only (the backoff before giving up costs ~0.3 s)
        stubborn = {tags[101], tags[102], tags[110]}
    hook = Withholding(stubborn, times)
    async with hooked_client(kind, endpoint, spec.name, after={"batch_get_item": hook}) as ack:
        found = await ack.get_many(tags)
        sent = dict(ack.stats.requests)
    assert found == await local_other.get_many(tags)
    assert found[tags[101]] is not None and found[tags[101]].stamp == roots[tags[101]]
    assert found[tags[110]] is None
    if times == 2:  # each request asked three times, the last answered in full
        assert sent == {"BatchGetItem": 6}
    else:  # 1 + 8 rounds, then each stubborn key read on its own
        assert sent == {"BatchGetItem": 9, "GetItem": 3}


# -- create_many ---------------------------------------------------------------


async def test_create_many_starts_250_chains_in_3_transactions(
    local_ack: Any, local_other: Any
) -> None:
    ack, other = local_ack, local_other
    stamps = {f"c{i:03d}": new_stamp() for i in range(250)}
    before = requests(ack)
    assert await ack.create_many(stamps) == stamps
    assert sent_since(ack, before) == {"TransactWriteItems": 3}
    found = await other.get_many(stamps)
    for tag, stamp in stamps.items():
        state = found[tag]
        assert state is not None and state.live and state.stamp == stamp and state.version == 1
    assert len({found[tag].chain_id for tag in stamps}) == 250  # a new chain each
    with pytest.raises(CreateManyFailed) as info:
        await ack.create_many(stamps)
    assert info.value.results == {}
    assert set(info.value.errors) == set(stamps)
    assert all(isinstance(e, TagExists) for e in info.value.errors.values())
    assert await other.get_many(stamps) == found  # the refused calls changed nothing


async def test_create_many_refuses_live_tags_and_creates_the_rest(
    ack: Any, other: Any, raw: Any, backend: tuple[str, TableSpec]
) -> None:
    old = {f"o{i:02d}": new_stamp() for i in range(12)}
    await other.create_many(old)
    live = list(old)[:4]
    acked, failed, expired = list(old)[4:7], list(old)[7:10], list(old)[10:12]
    await other.stamp_many({tag: old[tag] for tag in acked}, transact=True)
    for tag in failed:
        await other.fail(tag)
    for tag in expired:
        expire(raw, backend[1].name, tag)
    was = await other.get_many(old)
    closed = {tag: raw_state.chain_id for tag in acked + failed if (raw_state := was[tag])}
    assert len(closed) == 6

    new = {tag: new_stamp() for tag in old} | {f"n{i:02d}": new_stamp() for i in range(8)}
    with pytest.raises(CreateManyFailed) as info:
        await ack.create_many(new)
    assert set(info.value.errors) == set(live)
    for tag, error in info.value.errors.items():
        assert isinstance(error, TagExists) and error.tag == tag
    assert info.value.results == {tag: s for tag, s in new.items() if tag not in live}

    now = await other.get_many(new)
    for tag in live:  # untouched: same chain, same stamp, same version
        assert now[tag] == was[tag]
    for tag in new.keys() - set(live):  # closed or expired tags start again, like create()
        state = now[tag]
        assert state is not None and state.live and state.stamp == new[tag]
        assert state.version == 1 and state.expires_at is None
        assert state.acked_at is None and state.failed_at is None and state.reason is None
        assert state.chain_id != closed.get(tag)
    # Re-created chains are normal live chains.
    assert (await ack.stamp(acked[0], new[acked[0]])).acked
    assert (await other.stamp(failed[0], new[failed[0]])).acked


async def test_create_many_with_one_tag_left_after_a_refusal(ack: Any, other: Any) -> None:
    """The live tag leaves the transaction; the one chain left goes through plain create."""
    await other.create("taken", new_stamp())
    free = new_stamp()
    before = requests(ack)
    with pytest.raises(CreateManyFailed) as info:
        await ack.create_many({"taken": new_stamp(), "free": free})
    assert list(info.value.errors) == ["taken"]
    assert isinstance(info.value.errors["taken"], TagExists)
    assert info.value.results == {"free": free}
    sent = sent_since(ack, before)
    assert sent.get("TransactWriteItems") == 1 and sent.get("UpdateItem") == 1
    assert (await other.get("free")).stamp == free
    # A single chain never needs a transaction.
    before = requests(ack)
    assert await ack.create_many({"solo": free}) == {"solo": free}
    assert sent_since(ack, before) == {"UpdateItem": 1}
    assert await ack.create_many({}) == {}


async def test_create_many_with_ttl(ack: Any, other: Any) -> None:
    stamps = {f"ttl{i}": new_stamp() for i in range(5)}
    start = time.time()
    await ack.create_many(stamps, ttl=600)
    for state in (await other.get_many(stamps)).values():
        assert state is not None and start + 599 <= state.expires_at <= time.time() + 601


async def test_create_many_bad_input_is_refused_before_anything_is_sent(
    ack: Any, other: Any
) -> None:
    # 210 good chains: the bad one, last, would sit in the third transaction.
    good = {f"v{i:03d}": new_stamp() for i in range(210)}
    bad_inputs: list[tuple[dict[Any, Any], type[Exception]]] = [
        ({"": new_stamp()}, InvalidTag),
        ({42: new_stamp()}, InvalidTag),
        ({"x" * 2049: new_stamp()}, InvalidTag),
        ({"zero": bytes(16)}, ZeroBufferNoOp),
        ({"empty": b""}, InvalidStamp),
        ({"text": "not bytes"}, InvalidStamp),
    ]
    before = ack.stats.total_requests
    for bad, error in bad_inputs:
        with pytest.raises(error):
            await ack.create_many(good | bad)
    for ttl in (0, -5.0):
        with pytest.raises(ValueError):
            await ack.create_many(good, ttl=ttl)
    with pytest.raises(ValueError):
        await ack.create_many(good, concurrency=0)
    assert ack.stats.total_requests == before
    assert ack.stats.writes == 0
    assert all(state is None for state in (await other.get_many(good)).values())


# -- stamp_many(transact=True) -----------------------------------------------------


async def test_stamp_many_transact_completes_250_chains_exactly_without_cache(
    kind: str, local: tuple[str, TableSpec], local_other: Any
) -> None:
    endpoint, spec = local
    first = {f"s{i:03d}": new_stamp() for i in range(250)}
    second = {tag: new_stamp() for tag in first}
    await local_other.create_many({tag: xor(first[tag], second[tag]) for tag in first})
    async with open_client(kind, endpoint, spec.name, cache_size=0) as ack:
        before = requests(ack)
        done = await ack.stamp_many(first, transact=True)
        assert sent_since(ack, before) == {"BatchGetItem": 3, "TransactWriteItems": 3}
        assert done == second and not any(s.acked for s in done.values())
        assert all(type(s) is Stamp for s in done.values())
        assert ack.stats.stamps == 250

        before = requests(ack)
        done = await ack.stamp_many(second, transact=True)
        assert sent_since(ack, before) == {"BatchGetItem": 3, "TransactWriteItems": 3}
        assert set(done) == set(first) and all(s.acked for s in done.values())
        assert ack.stats.stamps == 500

        with pytest.raises(StampManyFailed) as info:  # completed chains take no more stamps
            await ack.stamp_many({tag: new_stamp() for tag in first}, transact=True)
        assert info.value.results == {}
        assert set(info.value.errors) == set(first)
        assert all(isinstance(e, TagNotFound) for e in info.value.errors.values())
        assert ack.stats.stamps == 500
    for state in (await local_other.get_many(first)).values():
        assert state is not None and state.acked and state.version == 3


async def test_stamp_many_transact_with_a_warm_cache_reads_nothing(
    local_ack: Any, local_other: Any
) -> None:
    ack = local_ack
    first = {f"h{i:03d}": new_stamp() for i in range(250)}
    second = {tag: new_stamp() for tag in first}
    before = requests(ack)
    await ack.create_many({tag: xor(first[tag], second[tag]) for tag in first})
    assert await ack.stamp_many(first, transact=True) == second
    done = await ack.stamp_many(second, transact=True)
    assert all(s.acked for s in done.values())
    assert sent_since(ack, before) == {"TransactWriteItems": 9}
    assert all(s is not None and s.acked for s in (await local_other.get_many(first)).values())


@pytest.mark.parametrize("goods", [1, 6])
async def test_stamp_many_transact_mixed_batch(
    kind: str, backend: tuple[str, TableSpec], other: Any, goods: int
) -> None:
    """Failed, acked, missing and wrong-length chains leave the batch; the rest lands.

    A cold client learns it from its BatchGetItem before writing; a client whose
    cache went stale learns it from the cancelled transaction (``ALL_OLD`` in the
    ``CancellationReasons``) and sends the rest again.  With one chain left, the
    rest goes as a plain write.
    """
    endpoint, spec = backend
    for stale in (False, True):
        p = "stale-" if stale else "cold-"
        a = {f"{p}good{i}": new_stamp() for i in range(goods)}
        b = {tag: new_stamp() for tag in a}
        k_root, w_root = new_stamp(), new_stamp()
        roots = {tag: xor(a[tag], b[tag]) for tag in a}
        roots |= {f"{p}failed": new_stamp(), f"{p}acked": k_root, f"{p}wrong": w_root}
        roots |= {f"{p}missing": new_stamp()}
        async with open_client(kind, endpoint, spec.name) as ack:
            await (ack if stale else other).create_many(roots)  # ack's cache: all live
            await other.fail(f"{p}failed", reason="poison")
            await other.stamp(f"{p}acked", k_root)
            await other.delete(f"{p}missing")
            batch = a | {
                f"{p}failed": new_stamp(),
                f"{p}acked": new_stamp(),
                f"{p}missing": new_stamp(),
                f"{p}wrong": new_stamp(8),
            }
            before = requests(ack)
            with pytest.raises(StampManyFailed) as info:
                await ack.stamp_many(batch, transact=True)
            sent = sent_since(ack, before)
        errors = info.value.errors
        assert set(errors) == {f"{p}failed", f"{p}acked", f"{p}missing", f"{p}wrong"}
        failed = errors[f"{p}failed"]
        assert isinstance(failed, ChainFailed) and failed.reason == "poison"
        for tag in (f"{p}acked", f"{p}missing"):
            gone = errors[tag]
            assert isinstance(gone, TagNotFound) and gone.tag == tag
        assert isinstance(errors[f"{p}wrong"], BufferLengthsUnequal)
        assert info.value.results == b
        now = await other.get_many([*roots])
        for tag in a:
            state = now[tag]
            assert state is not None and state.stamp == b[tag] and state.version == 2
        assert now[f"{p}wrong"].stamp == w_root and now[f"{p}wrong"].version == 1
        assert now[f"{p}failed"].failed and now[f"{p}failed"].version == 2
        assert now[f"{p}acked"].acked and now[f"{p}acked"].version == 2
        assert now[f"{p}missing"] is None
        writes = sent.get("TransactWriteItems", 0), sent.get("UpdateItem", 0)
        if stale:  # the first transaction met the changed chains and was cancelled, whole
            assert writes == ((2, 0) if goods > 1 else (1, 1)), sent
        else:
            assert sent.get("BatchGetItem") == 1, sent
            assert writes == ((1, 0) if goods > 1 else (0, 1)), sent
        # The chains that landed close with their remaining stamps.
        assert all(s.acked for s in (await other.stamp_many(b, transact=True)).values())


async def test_stamp_many_transact_with_tokens_applies_once(
    ack: Any, other: Any, backend: tuple[str, TableSpec], request: pytest.FixtureRequest
) -> None:
    endpoint, spec = backend
    # More than one transaction's worth on DynamoDB Local; a few chains on moto.
    a = {f"k{i:03d}": new_stamp() for i in range(12 if on_moto(request) else 120)}
    b = {tag: new_stamp() for tag in a}
    await ack.create_many({tag: xor(a[tag], b[tag]) for tag in a})
    tokens = {tag: f"a-{tag}" for tag in a}
    done = await ack.stamp_many(a, tokens=tokens, transact=True)
    assert done == b
    after_first = await other.get_many(a)
    stamps = ack.stats.stamps
    assert await ack.stamp_many(a, tokens=tokens, transact=True) == done  # warm cache
    assert ack.stats.stamps == stamps
    async with open_client("sync", endpoint, spec.name, cache_size=0) as cold:
        assert await cold.stamp_many(a, tokens=tokens, transact=True) == done
        assert cold.stats.stamps == 0 and cold.stats.writes == 0
        tag = next(iter(a))  # the plain path knows the token as well
        assert await cold.stamp(tag, a[tag], token=tokens[tag]) == b[tag]
    assert await other.get_many(a) == after_first

    closing = {tag: f"b-{tag}".encode() for tag in a}
    done = await ack.stamp_many(b, tokens=closing, transact=True)
    assert all(s.acked for s in done.values())
    after_close = await other.get_many(a)
    assert all(s is not None and s.acked for s in after_close.values())
    # Sent again once the chains completed: reported as before, nothing applied.
    stamps = ack.stats.stamps
    assert await ack.stamp_many(b, tokens=closing, transact=True) == done
    assert await other.stamp_many(b, tokens=closing, transact=True) == done
    assert ack.stats.stamps == stamps
    assert await other.get_many(a) == after_close
    # A new stamp with a new token is refused: the chains are complete.
    with pytest.raises(StampManyFailed) as info:
        await ack.stamp_many(b, tokens=dict.fromkeys(a, b"new"), transact=True)
    assert all(isinstance(e, TagNotFound) for e in info.value.errors.values())


async def test_stamp_many_transact_bad_input_is_refused_before_anything_is_sent(
    ack: Any, other: Any
) -> None:
    a = {f"x{i:03d}": new_stamp() for i in range(150)}  # the bad ones sit in the 2nd piece
    await other.create_many({tag: a[tag] for tag in ("x000", "x001", "x149")})
    was = await other.get_many(a)
    before = ack.stats.total_requests
    bad_inputs: list[tuple[dict[Any, Any], type[Exception]]] = [
        ({"": new_stamp()}, InvalidTag),
        ({7: new_stamp()}, InvalidTag),
        ({"x120": bytes(16)}, ZeroBufferNoOp),
        ({"x130": "text"}, InvalidStamp),
        ({"x140": b""}, InvalidStamp),
    ]
    for bad, error in bad_inputs:
        with pytest.raises(error):
            await ack.stamp_many(a | bad, transact=True)
    with pytest.raises(InvalidToken):
        await ack.stamp_many(a, tokens={"nobody": b"t"}, transact=True)
    with pytest.raises(InvalidToken):
        await ack.stamp_many(a, tokens={"x149": b"t" * 17}, transact=True)
    with pytest.raises(ValueError):
        await ack.stamp_many(a, concurrency=0, transact=True)
    assert ack.stats.total_requests == before
    assert await other.get_many(a) == was
    assert await ack.stamp_many({}, transact=True) == {}


# -- races (DynamoDB Local) ------------------------------------------------------


@pytest.mark.ddblocal
@pytest.mark.parametrize("callers", [2, 4])
async def test_concurrent_transact_stamp_many_from_separate_clients(
    ddb_local_endpoint: str, ddb_table: TableSpec, callers: int
) -> None:
    tags = [f"r{i:03d}" for i in range(120)]  # two transactions each, overlapping
    stamps = {tag: {c: new_stamp() for c in range(callers)} for tag in tags}
    roots = {tag: xor(*parts.values()) for tag, parts in stamps.items()}
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                open_client(
                    "async" if c % 2 else "sync", ddb_local_endpoint, ddb_table.name, retry=PATIENT
                )
            )
            for c in range(callers)
        ]
        await clients[0].create_many(roots)
        await asyncio.gather(*(c.get_many(tags) for c in clients))  # every cache warm

        def mine(c: int) -> dict[str, Stamp]:
            order = list(tags)
            random.Random(c).shuffle(order)  # their transactions overlap differently
            return {tag: stamps[tag][c] for tag in order}

        results = await asyncio.gather(
            *(client.stamp_many(mine(c), transact=True) for c, client in enumerate(clients))
        )
        final = await clients[0].get_many(tags)
    for tag in tags:
        seen = {c: results[c][tag] for c in range(callers)}
        assert sum(s.acked for s in seen.values()) == 1  # acked once, across all callers
        assert_applied_once(roots[tag], stamps[tag], seen)
        state = final[tag]
        assert state is not None and state.acked and state.version == 1 + callers
    assert sum(c.stats.stamps for c in clients) == callers * len(tags)
    assert all(c.stats.resent_writes_recognised == 0 for c in clients)
    # Every lost race was retried (whether any happened depends on the timing).
    assert all(c.stats.retries == c.stats.conflicts for c in clients)


@pytest.mark.ddblocal
async def test_plain_stamps_race_a_transact_stamp_many(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    tags = [f"m{i:03d}" for i in range(60)]
    names = ("tx", "plain", "many")
    parts = {tag: {name: new_stamp() for name in names} for tag in tags}
    roots = {tag: xor(*p.values()) for tag, p in parts.items()}
    async with (
        open_client("async", ddb_local_endpoint, ddb_table.name, retry=PATIENT) as tx,
        open_client("async", ddb_local_endpoint, ddb_table.name, retry=PATIENT) as plain,
        open_client("sync", ddb_local_endpoint, ddb_table.name, retry=PATIENT) as many,
    ):
        await tx.create_many(roots)
        await asyncio.gather(tx.get_many(tags), plain.get_many(tags), many.get_many(tags))
        on = {name: {tag: parts[tag][name] for tag in tags} for name in names}

        async def one_by_one() -> dict[str, Stamp]:
            outcomes = await asyncio.gather(*(plain.stamp(t, s) for t, s in on["plain"].items()))
            return dict(zip(on["plain"], outcomes, strict=True))

        seen_tx, seen_plain, seen_many = await asyncio.gather(
            tx.stamp_many(on["tx"], transact=True),
            one_by_one(),
            many.stamp_many(on["many"], transact=False, concurrency=16),
        )
        final = await tx.get_many(tags)
    for tag in tags:
        seen = {"tx": seen_tx[tag], "plain": seen_plain[tag], "many": seen_many[tag]}
        assert sum(s.acked for s in seen.values()) == 1
        assert_applied_once(roots[tag], parts[tag], seen)
        state = final[tag]
        assert state is not None and state.acked and state.version == 4


# -- what only DynamoDB itself does, injected --------------------------------------
# DynamoDB Local runs one request at a time: it never cancels a transaction for a
# conflict, never refuses a write to an item a transaction holds, and never throttles.
# The hooks raise DynamoDB's errors in front of it, before (nothing written) or after
# (written, answer lost) the request.


def none_reasons(n: int, at: int, reason: dict[str, Any]) -> list[dict[str, Any]]:
    reasons: list[dict[str, Any]] = [{"Code": "None"} for _ in range(n)]
    reasons[at] = reason
    return reasons


async def chains_ab(client: Any, prefix: str, n: int) -> tuple[dict[str, Stamp], dict[str, Stamp]]:
    """``n`` chains, each closed by its ``a`` stamp then its ``b`` stamp."""
    a = {f"{prefix}{i}": new_stamp() for i in range(n)}
    b = {tag: new_stamp() for tag in a}
    await client.create_many({tag: xor(a[tag], b[tag]) for tag in a})
    return a, b


@pytest.mark.parametrize(
    "reason", ["TransactionConflict", "ThrottlingError", "ConditionalCheckFailed"]
)
async def test_transaction_cancelled_for_a_retryable_reason_is_sent_again(
    kind: str, local: tuple[str, TableSpec], local_other: Any, reason: str
) -> None:
    """A conflict or throttling of one item: the whole transaction again, after a backoff.
    A failed condition without ``Item`` (a server that ignores ALL_OLD): read, then again."""
    endpoint, spec = local
    a, b = await chains_ab(local_other, "q", 6)
    reasons = none_reasons(6, 2, {"Code": reason, "Message": "injected"})
    hook = Trigger(raising(cancelled(reasons)))
    async with hooked_client(
        kind, endpoint, spec.name, before={"transact_write_items": hook}
    ) as ack:
        await ack.get_many(a)
        before = requests(ack)
        assert await ack.stamp_many(a, transact=True) == b
        sent = sent_since(ack, before)
        stats = ack.stats.snapshot()
    expected = {"TransactWriteItems": 2}
    if reason == "ConditionalCheckFailed":
        expected["BatchGetItem"] = 1
    assert sent == expected
    assert stats["conflicts"] == 1 and stats["retries"] == 1 and stats["stamps"] == 6
    for tag, state in (await local_other.get_many(a)).items():
        assert state is not None and state.stamp == b[tag] and state.version == 2


async def test_item_rejected_in_a_transaction_leaves_it_and_the_rest_lands(
    kind: str, local: tuple[str, TableSpec], local_other: Any
) -> None:
    endpoint, spec = local
    a, b = await chains_ab(local_other, "j", 5)
    rejected = {"Code": "ValidationError", "Message": "Item size has exceeded the maximum"}
    hook = Trigger(raising(cancelled(none_reasons(5, 1, rejected))))
    async with hooked_client(
        kind, endpoint, spec.name, before={"transact_write_items": hook}
    ) as ack:
        with pytest.raises(StampManyFailed) as info:
            await ack.stamp_many(a, transact=True)
        assert ack.stats.conflicts == 0  # nothing to wait for: sent again at once
        hook.arm()
        fresh = {f"jn{i}": new_stamp() for i in range(5)}
        with pytest.raises(CreateManyFailed) as created:
            await ack.create_many(fresh)
        sent = dict(ack.stats.requests)
    assert sent["TransactWriteItems"] == 4
    (tag,) = info.value.errors
    error = info.value.errors[tag]
    assert tag == "j1" and isinstance(error, TransactionItemRejected)
    assert (
        error.tag == "j1"
        and error.reason == "ValidationError"
        and error.code == ("TransactionItemRejected")
    )
    assert info.value.results == {t: s for t, s in b.items() if t != "j1"}
    now = await local_other.get_many(a)
    assert now["j1"].stamp == xor(a["j1"], b["j1"]) and now["j1"].version == 1
    assert all(now[t].stamp == b[t] and now[t].version == 2 for t in a if t != "j1")
    assert list(created.value.errors) == ["jn1"]
    assert isinstance(created.value.errors["jn1"], TransactionItemRejected)
    assert created.value.results == {t: s for t, s in fresh.items() if t != "jn1"}
    made = await local_other.get_many(fresh)
    assert made["jn1"] is None
    assert all(made[t].stamp == fresh[t] for t in fresh if t != "jn1")


async def test_transport_error_after_the_transaction_landed_is_settled_by_a_read(
    kind: str, local: tuple[str, TableSpec], local_other: Any
) -> None:
    """botocore gave up (its last send's answer lost): a read shows the tokens, so the
    stamps and creates are reported as landed, once."""
    endpoint, spec = local
    a, b = await chains_ab(local_other, "t", 6)
    lost = Trigger(raising(ConnectionClosedError(endpoint_url=endpoint)))
    async with hooked_client(
        kind, endpoint, spec.name, after={"transact_write_items": lost}
    ) as ack:
        before = requests(ack)
        assert await ack.stamp_many(a, transact=True) == b
        assert sent_since(ack, before) == {"BatchGetItem": 2, "TransactWriteItems": 1}
        assert ack.stats.resent_writes_recognised == 6 and ack.stats.stamps == 6
        lost.arm()
        fresh = {f"tn{i}": new_stamp() for i in range(6)}
        assert await ack.create_many(fresh) == fresh
        assert ack.stats.resent_writes_recognised == 12
    now = await local_other.get_many([*a, *fresh])
    assert all(now[t].stamp == b[t] and now[t].version == 2 for t in a)
    assert all(now[t].stamp == fresh[t] and now[t].version == 1 for t in fresh)


async def test_transport_error_before_the_transaction_reached_the_table_is_reported(
    kind: str, local: tuple[str, TableSpec], local_other: Any
) -> None:
    """Nothing landed, and a read proves it: the caller gets the error for every chain,
    and sending the same call again (same tokens) applies each stamp once."""
    endpoint, spec = local
    a, b = await chains_ab(local_other, "e", 6)
    tokens = {tag: f"job-{tag}" for tag in a}
    dead = Trigger(raising(ConnectionClosedError(endpoint_url=endpoint)))
    async with hooked_client(
        kind, endpoint, spec.name, before={"transact_write_items": dead}
    ) as ack:
        with pytest.raises(StampManyFailed) as info:
            await ack.stamp_many(a, tokens=tokens, transact=True)
        assert info.value.results == {} and set(info.value.errors) == set(a)
        assert all(isinstance(e, ConnectionClosedError) for e in info.value.errors.values())
        assert all(s.version == 1 for s in (await local_other.get_many(a)).values())
        assert await ack.stamp_many(a, tokens=tokens, transact=True) == b
        dead.arm()
        fresh = {f"en{i}": new_stamp() for i in range(6)}
        with pytest.raises(CreateManyFailed) as created:
            await ack.create_many(fresh)
        assert all(isinstance(e, ConnectionClosedError) for e in created.value.errors.values())
        assert all(s is None for s in (await local_other.get_many(fresh)).values())
        assert await ack.create_many(fresh) == fresh
    now = await local_other.get_many(a)
    assert all(now[t].stamp == b[t] and now[t].version == 2 for t in a)


async def test_transaction_answer_and_settling_read_both_lost_is_unsettled_per_chain(
    kind: str, local: tuple[str, TableSpec], local_other: Any
) -> None:
    """The transaction landed, its answer was lost, and the read that would tell failed:
    every chain's error says its write may have landed (never the read's bare transport
    error, which reads as "not landed"); the same call again lands each stamp once."""
    endpoint, spec = local
    a, b = await chains_ab(local_other, "u", 6)
    tokens = {tag: f"job-{tag}" for tag in a}
    lost = Trigger(raising(ConnectionClosedError(endpoint_url=endpoint)))
    unread = Trigger(raising(ConnectionClosedError(endpoint_url=endpoint)), times=0)
    async with hooked_client(
        kind,
        endpoint,
        spec.name,
        after={"transact_write_items": lost},
        before={"batch_get_item": unread},
    ) as ack:
        await ack.get_many(a)  # the states the transaction is planned on
        unread.arm(99)
        with pytest.raises(StampManyFailed) as info:
            await ack.stamp_many(a, tokens=tokens, transact=True)
        errors = info.value.errors
        assert set(errors) == set(a) and info.value.results == {}
        assert all(isinstance(e, UnsettledWrite) and e.tag == t for t, e in errors.items())
        assert all(isinstance(e.__cause__, ConnectionClosedError) for e in errors.values())
        assert all(s.version == 2 for s in (await local_other.get_many(a)).values())  # landed
        unread.left = 0
        assert await ack.stamp_many(a, tokens=tokens, transact=True) == b
    now = await local_other.get_many(a)
    assert all(now[t].stamp == b[t] and now[t].version == 2 for t in a)


@pytest.mark.parametrize("transact", [False, True])
async def test_plain_write_refused_by_a_transaction_holding_the_item_is_a_lost_race(
    kind: str, local: tuple[str, TableSpec], local_other: Any, transact: bool
) -> None:
    """DynamoDB refuses an UpdateItem on an item that a transaction (another client's
    ``stamp_many(transact=True)``) holds: nothing was written, so it is retried."""
    endpoint, spec = local
    a, b = await chains_ab(local_other, "c", 1)
    held = Trigger(raising(client_error("UpdateItem", "TransactionConflictException")), 2)
    async with hooked_client(kind, endpoint, spec.name, before={"update_item": held}) as ack:
        await ack.get_many(a)
        # One chain: stamp_many goes through the plain write either way.
        assert await ack.stamp_many(a, transact=transact) == b
        assert ack.stats.conflicts == 2 and ack.stats.requests["UpdateItem"] == 3
    (state,) = (await local_other.get_many(a)).values()
    assert state is not None and state.stamp == b["c0"] and state.version == 2


# -- a token another client applied (a re-run task) ---------------------------------


@pytest.mark.parametrize("transact", [False, True], ids=["plain", "transact"])
async def test_stale_client_sending_a_stamp_whose_token_landed_gets_the_current_state(
    kind: str, local: tuple[str, TableSpec], local_other: Any, transact: bool
) -> None:
    """A re-run task sends a stamp (same token) that its first run applied through another
    client, after a further stamp landed.  The stamp is not applied again and, as with any
    token the chain holds, the caller gets the chain's current state.

    The plain write's condition fails on the newer version and the item holds the token:
    that is not proof that *this* write landed (it did not), so the caller must not get
    the state planned on the stale cache (``x ^ y``, not ``y``) nor count a stamp or a
    recognised re-send that never happened.
    """
    endpoint, spec = local
    tags = ["d0", "d1"]
    a, x, y = ({t: new_stamp() for t in tags} for _ in range(3))
    await local_other.create_many({t: xor(a[t], x[t], y[t]) for t in tags})
    tokens = {t: f"first-{t}" for t in tags}
    async with open_client(kind, endpoint, spec.name) as stale:
        await stale.get_many(tags)  # caches version 1
        await local_other.stamp_many(a, tokens=tokens)  # the first run
        await local_other.stamp_many(x)  # later work on the same chains
        got = await stale.stamp_many(a, tokens=tokens, transact=transact)
        planned_on_stale_cache = {t: xor(x[t], y[t]) for t in tags}
        assert got != planned_on_stale_cache, "returned the state planned on the stale cache"
        assert got == y
        assert stale.stats.stamps == 0 and stale.stats.resent_writes_recognised == 0
    for t, state in (await local_other.get_many(tags)).items():
        assert state is not None and state.stamp == y[t] and state.version == 3


async def test_merged_write_is_not_taken_as_landed_from_another_clients_token(
    local: tuple[str, TableSpec],
) -> None:
    """Two stamp_many calls on one chain, both with tokens, merged into one write; before it
    goes out another client applies one of them (a re-run task).  The write's condition
    fails; the item holds that token but not the other: the other stamp did not land and
    must be sent again (it then completes the chain).

    Guards a false ack: a write that carries only caller tokens has no token of its own,
    and taking the one token another client applied as proof would report both stamps
    applied (the second as acked) while the table still holds s2 and never completes.
    (Async client: its merging of concurrent calls is deterministic under one event loop.)
    """
    endpoint, spec = local
    s0, s1, s2 = (new_stamp() for _ in range(3))
    direct = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1"),
        table=spec.name,
    )
    direct.create("hot", xor(s0, s1, s2))
    updates: list[str] = []

    def before_update(params: dict[str, Any]) -> None:
        updates.append(params["Key"]["tagID"]["S"])
        if len(updates) == 2:  # the merged write of s2 and s1 is about to go out
            assert direct.stamp("hot", s1, token=b"task-1") == s2  # the re-run task

    async with hooked_client(
        "async", endpoint, spec.name, before={"update_item": before_update}
    ) as ack:
        await ack.get("hot")
        results = await asyncio.gather(
            ack.stamp_many({"hot": s0}),  # in flight while the next two queue up
            ack.stamp_many({"hot": s2}, tokens={"hot": b"task-2"}),
            ack.stamp_many({"hot": s1}, tokens={"hot": b"task-1"}),
        )
    told_acked = [i for i, r in enumerate(results) if r["hot"].acked]
    state = direct.get("hot")
    assert state is not None
    assert state.acked, f"stamp reported applied never landed; told acked: {told_acked}"
    assert told_acked == [1]  # s2's call completed it; s1's call got the state it found


# -- lost responses ------------------------------------------------------------


@pytest.fixture(params=[pytest.param("ddblocal", marks=pytest.mark.ddblocal), "moto"])
def lossy_backend(request: pytest.FixtureRequest) -> tuple[str, str, TableSpec]:
    """(backend name, endpoint, fresh table) to put the lossy proxy in front of."""
    name = str(request.param)
    if name == "ddblocal":
        endpoint, table = "ddb_local_endpoint", "ddb_table"
    else:
        endpoint, table = "moto_endpoint", "moto_table"
    return name, request.getfixturevalue(endpoint), request.getfixturevalue(table)


@pytest.mark.parametrize("completing", [False, True], ids=["midway", "completing"])
async def test_lost_transact_stamp_response_is_applied_once(
    kind: str, lossy_backend: tuple[str, str, TableSpec], completing: bool
) -> None:
    name, endpoint, spec = lossy_backend
    n = 12
    a = {f"l{i:02d}": new_stamp() for i in range(n)}
    b = {tag: new_stamp() for tag in a}
    c = {tag: new_stamp() for tag in a}
    async with open_client(kind, endpoint, spec.name) as direct:
        if completing:
            await direct.create_many(a)
        else:
            await direct.create_many({tag: xor(a[tag], b[tag], c[tag]) for tag in a})
        with LossyProxy(endpoint, drop_first("TransactWriteItems")) as proxy:
            async with open_client(kind, proxy.endpoint_url, spec.name) as ack:
                done = await ack.stamp_many(a, transact=True)
                assert proxy.dropped == ["TransactWriteItems"]  # the first send landed, unanswered
                assert proxy.forwarded.count("TransactWriteItems") == 1  # botocore's re-send
                assert ack.stats.stamps == n
                recognised = ack.stats.resent_writes_recognised
        if name == "moto":  # the re-send was cancelled: every chain's token told it landed
            assert recognised == n
        else:  # DynamoDB Local answered the re-send from its ClientRequestToken
            assert recognised == 0
        if completing:
            assert set(done) == set(a) and all(s.acked for s in done.values())
            now = await direct.get_many(a)
            assert all(s is not None and s.acked and s.version == 2 for s in now.values())
            return
        assert done == {tag: xor(b[tag], c[tag]) for tag in a}
        now = await direct.get_many(a)
        for tag in a:
            assert now[tag] is not None and now[tag].stamp == done[tag] and now[tag].version == 2
        # The chains hold each stamp exactly once: they close at the last one, not before.
        assert not any(s.acked for s in (await direct.stamp_many(b, transact=True)).values())
        assert all(s.acked for s in (await direct.stamp_many(c, transact=True)).values())


async def test_lost_create_many_response_is_not_a_false_tag_exists(
    kind: str, lossy_backend: tuple[str, str, TableSpec]
) -> None:
    name, endpoint, spec = lossy_backend
    stamps = {f"lc{i:02d}": new_stamp() for i in range(12)}
    with LossyProxy(endpoint, drop_first("TransactWriteItems")) as proxy:
        async with open_client(kind, proxy.endpoint_url, spec.name) as ack:
            assert await ack.create_many(stamps) == stamps
            assert proxy.dropped == ["TransactWriteItems"]
            assert proxy.forwarded.count("TransactWriteItems") == 1
            assert ack.stats.resent_writes_recognised == (len(stamps) if name == "moto" else 0)
            # A genuine second create still conflicts, for every chain.
            with pytest.raises(CreateManyFailed) as info:
                await ack.create_many(stamps)
            assert set(info.value.errors) == set(stamps)
            assert all(isinstance(e, TagExists) for e in info.value.errors.values())
    async with open_client(kind, endpoint, spec.name) as direct:
        for tag, state in (await direct.get_many(stamps)).items():
            assert state is not None and state.stamp == stamps[tag] and state.version == 1
        assert all(s.acked for s in (await direct.stamp_many(stamps, transact=True)).values())


# -- property: random partitions of each chain's stamps among calls --------------


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    calls = draw(st.integers(min_value=2, max_value=3), label="calls")
    chains = draw(st.integers(min_value=1, max_value=6), label="chains")
    # Which calls stamp each chain (one stamp per call and chain: stamp_many takes a dict).
    members = [
        sorted(draw(st.sets(st.integers(0, calls - 1), min_size=1, max_size=calls)))
        for _ in range(chains)
    ]
    order = draw(st.permutations(range(calls)), label="order")
    transact = draw(st.lists(st.booleans(), min_size=calls, max_size=calls), label="transact")
    tokens = draw(st.lists(st.booleans(), min_size=calls, max_size=calls), label="tokens")
    return {"members": members, "order": order, "transact": transact, "tokens": tokens}


async def run_plan(ack: Any, plan: dict[str, Any]) -> None:
    run = new_stamp(8).hex()
    stamps: dict[str, dict[int, Stamp]] = {
        f"p-{run}-{i}": {c: new_stamp(8) for c in calls} for i, calls in enumerate(plan["members"])
    }
    roots = {
        tag: xor(*s.values()) if len(s) > 1 else next(iter(s.values())) for tag, s in stamps.items()
    }
    await ack.create_many(roots)
    state = dict(roots)
    left = {tag: len(s) for tag, s in stamps.items()}
    for c in plan["order"]:
        mine = {tag: s[c] for tag, s in stamps.items() if c in s}
        if not mine:
            continue
        tokens = {tag: f"call-{c}" for tag in mine} if plan["tokens"][c] else None
        done = await ack.stamp_many(mine, tokens=tokens, transact=plan["transact"][c])
        for tag in mine:
            state[tag] = xor(state[tag], mine[tag])
            left[tag] -= 1
            assert done[tag] == state[tag]
            assert done[tag].acked == (left[tag] == 0)  # zero exactly at the last stamp
        if tokens:  # the same call sent again, by either path, changes nothing
            again = await ack.stamp_many(mine, tokens=tokens, transact=not plan["transact"][c])
            assert again == done
    final = await ack.get_many(stamps)
    for tag, s in stamps.items():
        got = final[tag]
        assert got is not None and got.acked and got.version == 1 + len(s)


@pytest.mark.ddblocal
def test_random_partitions_close_every_chain_at_its_last_stamp(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """One client and one event loop for all examples (each example has its own tags)."""
    loop = asyncio.new_event_loop()
    opened = open_client(kind, ddb_local_endpoint, ddb_table.name)
    ack = loop.run_until_complete(opened.__aenter__())
    try:

        @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(plan=plans())
        def check(plan: dict[str, Any]) -> None:
            loop.run_until_complete(run_plan(ack, plan))

        check()
    finally:
        loop.run_until_complete(opened.__aexit__(None, None, None))
        loop.close()


async def test_stamp_on_many_with_a_wrong_length_stamp_writes_nothing(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    endpoint, spec = local
    root, a = new_stamp(), new_stamp()
    async with open_client(kind, endpoint, spec.name) as ack:
        await ack.create("job", xor(root, a))
        read = await ack.get("job")
        with pytest.raises(BufferLengthsUnequal):
            await ack.stamp_on_many(read, [(a, "a"), (new_stamp(8), "b")])
        # "Several (stamp, token) written on state in one write, or none of them":
        # the refused call must have written nothing.
        after = await ack.get("job")
        assert after.version == read.version, "a refused stamp_on_many wrote part of its stamps"
        assert after.stamp == read.stamp


async def test_create_many_reports_an_unsettled_create_per_tag_not_as_the_whole_calls_error(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    from botocore.exceptions import EndpointConnectionError

    from xor_ack_dynamodb.errors import CreateManyFailed, TagExists, UnsettledWrite

    from .hooks import Trigger, hooked_client, raising

    endpoint, spec = local
    lost = Trigger(raising(EndpointConnectionError(endpoint_url=endpoint)), times=0)
    read_fails = Trigger(raising(EndpointConnectionError(endpoint_url=endpoint)), times=0)
    async with hooked_client(
        kind, endpoint, spec.name, before={"get_item": read_fails}, after={"update_item": lost}
    ) as ack:
        await ack.create("a", new_stamp())  # a live chain: "a" leaves the transaction
        lost.arm()  # "b", then written alone: it lands, its answer is lost...
        read_fails.arm(10)  # ...and the read that would settle it fails
        with pytest.raises(CreateManyFailed) as failed:
            await ack.create_many({"a": new_stamp(), "b": new_stamp()})
        # Documented: CreateManyFailed with the created stamps and an error per tag.
        assert isinstance(failed.value.errors["a"], TagExists)
        assert isinstance(failed.value.errors["b"], UnsettledWrite)


async def test_stamp_many_without_coalescing_reports_a_read_error_per_tag(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    from xor_ack_dynamodb.errors import StampManyFailed

    from .hooks import client_error, hooked_client

    endpoint, spec = local
    ra, rb = new_stamp(), new_stamp()
    async with open_client(kind, endpoint, spec.name) as setup:
        await setup.create_many({"a": ra, "b": rb})

    def refuse_b(params: dict[str, Any]) -> None:
        if params["Key"]["tagID"]["S"] == "b":
            raise client_error("GetItem", "ProvisionedThroughputExceededException")

    async with hooked_client(
        kind, endpoint, spec.name, before={"get_item": refuse_b}, coalesce=False
    ) as ack:
        # As with coalesce=True (the default): StampManyFailed, "a"'s landed state in
        # .results, "b"'s error in .errors -- never the bare error of one chain, which
        # hides that "a" landed (a caller retrying the call would apply "a" twice).
        with pytest.raises(StampManyFailed) as failed:
            await ack.stamp_many({"a": ra, "b": rb}, concurrency=1)
        assert failed.value.results["a"].acked
        assert "b" in failed.value.errors
