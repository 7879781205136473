"""create / stamp / delete / fail / get / wait on both clients, against moto and DynamoDB Local."""

from __future__ import annotations

import asyncio
import math
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import (
    AppliedBefore,
    Stamp,
    SyncXorAckDynamoDB,
    XorAckDynamoDB,
    new_stamp,
    xor,
)
from xor_ack_dynamodb.dynamodb import item as I
from xor_ack_dynamodb.errors import (
    BufferLengthsUnequal,
    ChainFailed,
    ClientClosed,
    InvalidArgument,
    InvalidStamp,
    InvalidTag,
    InvalidToken,
    StampManyFailed,
    TagExists,
    TagNotFound,
    WaitTimeout,
    ZeroBufferNoOp,
)
from xor_ack_dynamodb.retry import RetryPolicy, botocore_config
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client

H = bytes.fromhex


async def test_seed_walkthrough_value_by_value(ack: Any) -> None:
    tag = "database/file13"
    file_stamp, w1, w2, w3 = H("29"), H("25"), H("a9"), H("e9")
    s = await ack.create(tag, file_stamp)
    assert s == H("29") and not s.acked
    s = await ack.stamp(tag, H("4c"))  # fileStamp ^ w1 ^ w2 ^ w3
    assert s == H("65") and not s.acked
    s = await ack.stamp(tag, w1)
    assert s == H("40")
    s = await ack.stamp(tag, w2)
    assert s == H("e9")
    s = await ack.stamp(tag, w3)
    assert s == H("00") and s.acked
    assert isinstance(s, Stamp)


async def test_seed_usage_with_64_byte_stamps(ack: Any) -> None:
    tag = "database/file13"
    file_stamp = new_stamp(64)
    s = await ack.create(tag, file_stamp)
    assert not s.acked
    words = [new_stamp(64) for _ in range(3)]
    s = await ack.stamp(tag, ack.xor(file_stamp, *words))
    assert not s.acked
    s = await ack.stamp(tag, xor(*words))
    assert s.acked


async def test_create_existing_tag_raises_tag_exists(ack: Any) -> None:
    await ack.create("foo", new_stamp())
    with pytest.raises(TagExists) as info:
        await ack.create("foo", new_stamp())
    assert str(info.value) == '"foo" already exists'
    assert info.value.code == "TagExists" and info.value.tag == "foo"


async def test_stamp_missing_tag_raises_tag_not_found(ack: Any) -> None:
    with pytest.raises(TagNotFound) as info:
        await ack.stamp("foo", new_stamp())
    assert str(info.value) == '"foo" does not exist'
    assert info.value.code == "TagNotFound" and info.value.tag == "foo"


async def test_delete(ack: Any) -> None:
    await ack.create("foo", new_stamp())
    await ack.delete("foo")
    assert await ack.get("foo") is None
    with pytest.raises(TagNotFound) as info:
        await ack.delete("foo")
    assert str(info.value) == '"foo" does not exist'


async def test_bad_input_is_refused_before_any_request(ack: Any, raw: Any, backend: Any) -> None:
    stamp = new_stamp()
    await ack.create("foo", stamp)
    before = ack.stats.total_requests
    with pytest.raises(ZeroBufferNoOp):
        await ack.create("bar", bytes(16))
    with pytest.raises(ZeroBufferNoOp) as info:
        await ack.stamp("foo", bytes(16))
    # The seed's error, said in a client's words: what to give instead (its bare words,
    # "Buffer is all zeros", stay xor()'s and as_stamp()'s)
    assert "all zeros" in str(info.value) and "new_stamp()" in str(info.value)
    with pytest.raises(InvalidTag):
        await ack.stamp("", new_stamp())
    with pytest.raises(InvalidTag):
        await ack.create(42, new_stamp())
    with pytest.raises(InvalidStamp):
        await ack.stamp("foo", "not bytes")
    with pytest.raises(InvalidToken):
        await ack.stamp("foo", new_stamp(), token=b"x" * 17)
    with pytest.raises(ValueError):
        await ack.fail("foo", reason="")
    assert ack.stats.total_requests == before
    state = await ack.get("foo")
    assert state.stamp == stamp and state.version == 1


async def test_wrong_length_changes_nothing(ack: Any) -> None:
    stamp = new_stamp(16)
    await ack.create("foo", stamp)
    writes = ack.stats.writes
    with pytest.raises(BufferLengthsUnequal):
        await ack.stamp("foo", new_stamp(8))
    assert ack.stats.writes == writes
    assert (await ack.get("foo")).stamp == stamp


async def test_acked_chain_is_a_tombstone_then_reusable(ack: Any) -> None:
    a = new_stamp()
    await ack.create("foo", a)
    assert (await ack.stamp("foo", a)).acked
    state = await ack.get("foo")
    assert state.acked and state.acked_at is not None
    assert state.expires_at is not None and state.expires_at > time.time() + 3600
    with pytest.raises(TagNotFound):
        await ack.stamp("foo", a)
    b = new_stamp()
    assert await ack.create("foo", b) == b  # a completed tag can start again
    assert (await ack.get("foo")).live


async def test_item_layout_and_foreign_attributes_survive(ack: Any, raw: Any, backend: Any) -> None:
    spec: TableSpec = backend[1]
    a, b = new_stamp(), new_stamp()
    await ack.create("foo", a)
    raw.update_item(
        TableName=spec.name,
        Key={"tagID": {"S": "foo"}},
        UpdateExpression="SET job_owner = :o",
        ExpressionAttributeValues={":o": {"S": "job-7"}},
    )
    await ack.stamp("foo", xor(a, b))
    item = raw.get_item(TableName=spec.name, Key={"tagID": {"S": "foo"}}, ConsistentRead=True)[
        "Item"
    ]
    assert item["job_owner"] == {"S": "job-7"}
    assert set(item) >= {
        "tagID",
        I.STAMP,
        I.CHAIN_ID,
        I.VERSION,
        I.TOKENS,
        I.CREATED_AT,
        I.UPDATED_AT,
    }
    assert item[I.STAMP]["B"] == b and item[I.VERSION]["N"] == "2"
    assert len(item[I.TOKENS]["B"]) == 16  # two 8-byte write tokens


async def test_custom_partition_key(kind: str, backend: Any) -> None:
    from tests.conftest import _table_factory

    endpoint, _ = backend
    spec = _table_factory(endpoint)(partition_key="pk")
    async with open_client(kind, endpoint, spec.name, partition_key="pk") as ack:
        a = new_stamp()
        await ack.create("x", a)
        assert (await ack.stamp("x", a)).acked


async def test_token_makes_a_stamp_idempotent(ack: Any) -> None:
    a, b = new_stamp(), new_stamp()
    await ack.create("foo", xor(a, b))
    first = await ack.stamp("foo", a, token=b"task-1")
    again = await ack.stamp("foo", a, token=b"task-1")
    assert first == again == b
    assert (await ack.get("foo")).stamp == b
    assert (await ack.stamp("foo", b, token="task-2")).acked


async def test_a_stamp_sent_again_after_another_completed_the_chain_is_not_told_acked(
    ack: Any, backend: tuple[str, TableSpec]
) -> None:
    """Exactly one caller learns a chain's ack, also when stamps are sent again after it
    completed (a lost response, a re-run task): only the one that completed it is told."""
    endpoint, spec = backend
    a, b = new_stamp(), new_stamp()
    await ack.create("foo", xor(a, b))
    assert not (await ack.stamp("foo", a, token="task-a")).acked
    done = await ack.stamp("foo", b, token="task-b")
    assert done.acked
    async with open_client("sync", endpoint, spec.name, cache_size=0) as fresh:
        for client in (ack, fresh):
            again = await client.stamp("foo", a, token="task-a")
            assert isinstance(again, AppliedBefore) and not again.acked and not any(again)
            assert (await client.stamp("foo", b, token="task-b")).acked
            many = await client.stamp_many({"foo": a}, tokens={"foo": "task-a"}, transact=True)
            assert not many["foo"].acked
            many = await client.stamp_many({"foo": b}, tokens={"foo": "task-b"}, transact=True)
            assert many["foo"].acked
    assert (await ack.get("foo")).version == 3  # nothing applied again


@pytest.mark.parametrize("last_has_token", [True, False])
async def test_in_one_write_of_several_stamps_only_the_completing_one_is_told_acked_again(
    ack: Any, last_has_token: bool
) -> None:
    """A write of several stamps, some without a token, keeps the completing stamp's token
    last: sent again, it is told acked, and the others are not."""
    a, b = new_stamp(), new_stamp()
    state = await ack.create("foo", xor(a, b))
    state = await ack.get("foo")
    first, last = ("task-a", None) if not last_has_token else (None, "task-b")
    out = await ack.stamp_on_many(state, [(a, first), (b, last)])
    assert [s.acked for s in out] == [False, True]
    if last_has_token:
        assert (await ack.stamp("foo", b, token="task-b")).acked
    else:
        assert not (await ack.stamp("foo", a, token="task-a")).acked


async def test_stamp_many_reports_what_landed_and_what_did_not(ack: Any) -> None:
    stamps = {f"t{i}": new_stamp() for i in range(5)}
    for tag, s in stamps.items():
        await ack.create(tag, s)
    done = await ack.stamp_many(stamps, concurrency=3)
    assert set(done) == set(stamps) and all(s.acked for s in done.values())
    again = {"t0": new_stamp(), "missing": new_stamp()}
    await ack.create("t0", again["t0"])
    with pytest.raises(StampManyFailed) as info:
        await ack.stamp_many(again)
    assert info.value.results["t0"].acked
    assert isinstance(info.value.errors["missing"], TagNotFound)


async def test_fail_closes_a_chain_and_zero_wins(ack: Any) -> None:
    a, b = new_stamp(), new_stamp()
    await ack.create("foo", xor(a, b))
    await ack.stamp("foo", a)
    state = await ack.fail("foo", reason="worker lost")
    assert state.failed and state.reason == "worker lost" and not state.acked
    with pytest.raises(ChainFailed) as info:
        await ack.stamp("foo", b)
    assert info.value.reason == "worker lost"
    with pytest.raises(ChainFailed):
        await ack.wait("foo", timeout=1)
    with pytest.raises(ChainFailed) as again:  # failing twice changes nothing, and says so
        await ack.fail("foo", "operator gave up")
    assert again.value.reason == "worker lost"
    assert again.value.requested_reason == "operator gave up"
    assert not again.value.failed_by_this_call and "was not written" in str(again.value)
    assert (await ack.get("foo")).reason == "worker lost"

    await ack.create("bar", a)
    await ack.stamp("bar", a)
    late = await ack.fail("bar")  # a late fail does not undo a completed chain
    assert late.acked and not late.failed
    with pytest.raises(TagNotFound):
        await ack.fail("missing")
    await ack.create("foo", b)  # a failed tag can start again
    assert (await ack.get("foo")).live


async def test_wait(ack: Any) -> None:
    a = new_stamp()
    await ack.create("foo", a)
    with pytest.raises(WaitTimeout) as info:
        await ack.wait("foo", timeout=0.3, poll_interval=0.1)
    assert info.value.tag == "foo"
    await ack.stamp("foo", a)
    assert (await ack.wait("foo", timeout=1)).acked
    with pytest.raises(TagNotFound):
        await ack.wait("missing", timeout=1)


async def test_expired_chain_counts_as_absent(ack: Any, raw: Any, backend: Any) -> None:
    spec: TableSpec = backend[1]
    a = new_stamp()
    await ack.create("foo", a, ttl=3600)
    assert (await ack.get("foo")).expires_at > time.time()
    raw.update_item(
        TableName=spec.name,
        Key={"tagID": {"S": "foo"}},
        UpdateExpression="SET expires_at = :e",
        ExpressionAttributeValues={":e": {"N": str(int(time.time()) - 10)}},
    )
    assert await ack.get("foo") is None
    with pytest.raises(TagNotFound):
        await ack.stamp("foo", a)
    await ack.create("foo", a)  # an expired tag is free again
    assert (await ack.get("foo")).expires_at is None


async def test_uncontended_stamp_is_one_request(ack: Any) -> None:
    root = new_stamp()
    children = [new_stamp() for _ in range(10)]
    await ack.create("foo", xor(root, *children))
    ack.stats.requests.clear()
    for child in children[:-1]:
        await ack.stamp("foo", child)
    assert dict(ack.stats.requests) == {"UpdateItem": 9}


async def test_lost_race_seed_behaviour_and_retry(kind: str, backend: Any) -> None:
    endpoint, spec = backend
    a, b, c = new_stamp(), new_stamp(), new_stamp()
    async with (
        open_client(kind, endpoint, spec.name, retry=None) as seedlike,
        open_client(kind, endpoint, spec.name) as other,
    ):
        await seedlike.create("foo", xor(a, b, c))  # seedlike now caches version 1
        await other.stamp("foo", a)  # ... which is stale from here on, but nobody races
        # The refusal of the stale write brings back the item: planned again, not a lost race.
        assert (await seedlike.stamp("foo", b)) == c
        assert seedlike.stats.cache_refreshes == 1 and seedlike.stats.conflicts == 0
        await other.stamp("foo", new_stamp())  # makes seedlike stale again
    async with (
        open_client(kind, endpoint, spec.name) as retrying,
        open_client(kind, endpoint, spec.name) as other,
    ):
        await retrying.create("bar", xor(a, b))
        await other.stamp("bar", a)  # retrying's memory of "bar" is old
        retrying.stats.requests.clear()
        assert (await retrying.stamp("bar", b)).acked
        assert retrying.stats.cache_refreshes == 1 and retrying.stats.conflicts == 0
        # failed write + write; a server that omits ALL_OLD costs one read more
        assert retrying.stats.requests["UpdateItem"] == 2
        assert retrying.stats.requests["GetItem"] <= 1


@pytest.mark.parametrize(
    "options",
    [
        {"table": ""},
        {"partition_key": ""},
        {"token_window": 1},
        {"token_window": "32"},
        {"tombstone_ttl": 0},
        {"tombstone_ttl": math.nan},
        {"tombstone_ttl": math.inf},
        {"write_slots": 0, "batch_writes": True},
        {"cache_size": "many"},
        {"retry": 3},
    ],
    ids=repr,
)
async def test_a_client_option_it_cannot_take_is_invalid_argument_at_construction(
    kind: str, backend: Any, options: dict[str, Any]
) -> None:
    given = dict(options)
    table = given.pop("table", backend[1].name)
    with pytest.raises(InvalidArgument, match="|".join(given) or "table"):
        async with open_client(kind, backend[0], table, **given):
            pass


@pytest.mark.parametrize(
    "options", [{"max_attempts": 0}, {"base_delay": -1.0}, {"max_elapsed": math.nan}], ids=repr
)
def test_a_retry_policy_it_cannot_take_is_invalid_argument(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument, match="|".join(options)):
        RetryPolicy(**options)


async def test_a_call_option_it_cannot_take_is_invalid_argument_before_any_request(
    ack: Any,
) -> None:
    s = new_stamp()
    calls = [
        lambda: ack.create_many({"foo": s}, concurrency=0),
        lambda: ack.create_many({"foo": s}, concurrency="4"),
        lambda: ack.create_many({"foo": s}, via="sql"),
        lambda: ack.stamp_many({"foo": s}, concurrency=0),
        lambda: ack.stamp_many({"foo": s}, concurrency=None, transact=True),
        lambda: ack.stamp_on_each([], concurrency=0),
    ]
    for call in calls:
        with pytest.raises(InvalidArgument, match=r"concurrency|via"):
            await call()
    assert ack.stats.total_requests == 0


def test_docs_api_md_says_how_often_botocore_sends_a_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_RETRY_MODE", raising=False)
    monkeypatch.delenv("AWS_MAX_ATTEMPTS", raising=False)
    client = boto3.client("dynamodb", region_name="us-east-1", config=botocore_config())
    sends = client.meta.config.retries["total_max_attempts"]  # the first included
    text = " ".join((Path(__file__).parents[2] / "docs" / "api.md").read_text().split())
    assert f"({sends - 1} retries after the first attempt: {sends} sends in all)" in text


async def test_stamp_on_an_acked_chain_says_it_was_acked_not_that_it_does_not_exist(
    ack: Any,
) -> None:
    """`stamp` after the chain acked (a late duplicate, the commonest mistake) raised
    TagNotFound('"t" does not exist') although `get(t)` returns the acked chain: the
    message is false and says nothing of what to do.  The CLI rewrites it ("has no live
    chain: ... acked ...", tests/infra/test_cli_words.py); the Python API does not."""
    tag, s = f"acked-{uuid.uuid4().hex[:8]}", new_stamp()
    await ack.create(tag, s)
    assert (await ack.stamp(tag, s)).acked
    assert (await ack.get(tag)).acked  # it exists, readable, acked
    with pytest.raises(TagNotFound) as caught:
        await ack.stamp(tag, s)
    said = str(caught.value)
    assert "does not exist" not in said, said
    assert "acked" in said, said


async def test_fail_with_another_generations_chain_id_does_not_say_the_live_tag_is_absent(
    ack: Any,
) -> None:
    """`fail(tag, chain_id=<an old generation's>)` while a live chain holds the tag raised
    TagNotFound('"t" does not exist'): a live chain is right there; the message should say
    another generation holds the tag (as docs/api.md's table does)."""
    tag = f"gen-{uuid.uuid4().hex[:8]}"
    s = new_stamp()
    await ack.create(tag, s)
    old = await ack.get(tag)
    await ack.stamp(tag, s)  # acked: the tag is free again
    await ack.create(tag, new_stamp())  # a new generation
    with pytest.raises(TagNotFound) as caught:
        await ack.fail(tag, reason="stop", chain_id=old.chain_id)
    said = str(caught.value)
    assert "does not exist" not in said, said
    # touch(chain_id=) is the dashboard's: the same words (it said "does not exist")
    with pytest.raises(TagNotFound) as touched:
        await ack.touch(tag, timeout=600, chain_id=old.chain_id)
    assert str(touched.value) == said, str(touched.value)
    assert (await ack.get(tag)).live


async def test_refusals_of_the_python_api_say_why_and_what_to_do(ack: Any) -> None:
    """The API's bare words: BufferLengthsUnequal "Buffer lengths are not equal" (no tag,
    no lengths), ZeroBufferNoOp "Buffer is all zeros" (nothing about new_stamp()).  The
    CLI said lengths and "non-zero"; a Python caller got the bare words.  (TagExists
    keeps the seed's '"t" already exists': test_create_existing_tag_raises_tag_exists.)"""
    tag = f"words-{uuid.uuid4().hex[:8]}"
    await ack.create(tag, new_stamp())
    with pytest.raises(BufferLengthsUnequal) as wrong_length:
        await ack.stamp(tag, new_stamp(8))
    assert "16" in str(wrong_length.value) and "8" in str(wrong_length.value), str(
        wrong_length.value
    )
    with pytest.raises(ZeroBufferNoOp) as zeros:
        await ack.stamp(tag, bytes(16))
    assert "non-zero" in str(zeros.value) or "new_stamp" in str(zeros.value), str(zeros.value)


async def test_async_client_used_after_connect_exits_raises_a_typed_error(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """After `async with XorAckDynamoDB.connect(...) as ack:` ends, `await ack.get(t)` /
    `stamp` / `create` still work: aiobotocore silently opens a new HTTP session that
    nobody closes ("Unclosed client session" at exit).  A closed client should refuse with
    a typed XorAckError saying to use it inside its `async with`."""
    async with XorAckDynamoDB.connect(
        table=ddb_table.name, endpoint_url=ddb_local_endpoint, region_name="us-east-1"
    ) as ack:
        tag = f"closed-{uuid.uuid4().hex[:8]}"
        await ack.create(tag, new_stamp())
    with pytest.raises(ClientClosed, match="inside that block"):
        await ack.get(tag)


def test_sync_client_used_after_connect_exits_raises_a_typed_error(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """The same with `SyncXorAckDynamoDB.connect`: after the `with`, the client writes on."""
    with SyncXorAckDynamoDB.connect(
        table=ddb_table.name, endpoint_url=ddb_local_endpoint, region_name="us-east-1"
    ) as ack:
        tag = f"closed-{uuid.uuid4().hex[:8]}"
        ack.create(tag, new_stamp())
    with pytest.raises(ClientClosed, match="inside that block"):
        ack.create(f"after-{tag}", new_stamp())


async def test_a_wait_running_when_the_connect_block_ends_stops_at_its_next_read(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """A wait in a task of its own when the block ends: its next poll is not sent on the
    closed pool (it went on polling to its timeout, then said ``WaitTimeout``)."""
    async with XorAckDynamoDB.connect(
        table=ddb_table.name, endpoint_url=ddb_local_endpoint, region_name="us-east-1"
    ) as ack:
        tag = f"closed-{uuid.uuid4().hex[:8]}"
        await ack.create(tag, new_stamp())
        waiter = asyncio.create_task(ack.wait(tag, timeout=5, poll_interval=0.05))
        await asyncio.sleep(0.2)
    reads = ack.stats.requests["GetItem"]
    started = time.monotonic()
    with pytest.raises(ClientClosed, match="had written nothing") as closed:
        await waiter
    assert time.monotonic() - started < 1 and not closed.value.wrote
    assert ack.stats.requests["GetItem"] <= reads + 1  # the one in flight, if any


def test_a_sync_wait_running_in_a_thread_when_the_block_ends_stops_too(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    failed: list[BaseException] = []

    def wait(ack: SyncXorAckDynamoDB, tag: str) -> None:
        try:
            ack.wait(tag, timeout=5, poll_interval=0.05)
        except BaseException as exc:
            failed.append(exc)

    with SyncXorAckDynamoDB.connect(
        table=ddb_table.name, endpoint_url=ddb_local_endpoint, region_name="us-east-1"
    ) as ack:
        tag = f"closed-{uuid.uuid4().hex[:8]}"
        ack.create(tag, new_stamp())
        thread = threading.Thread(target=wait, args=(ack, tag))
        thread.start()
        time.sleep(0.2)
    started = time.monotonic()
    thread.join(5)
    assert time.monotonic() - started < 1
    assert [type(e) for e in failed] == [ClientClosed]


async def test_a_call_stopped_by_the_block_says_whether_it_wrote(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """What was sent before decides the message: a write may have landed, a read not."""
    async with XorAckDynamoDB.connect(
        table=ddb_table.name, endpoint_url=ddb_local_endpoint, region_name="us-east-1"
    ) as ack:
        pass

    def op() -> Any:
        yield None

    for sent, wrote, said in (
        (["get_item", "query"], False, "had written nothing"),
        (["get_item", "update_item"], True, "may have landed"),
        ([], False, "sent nothing more"),
    ):
        with pytest.raises(ClientClosed, match=said) as closed:
            ack._refuse_closed(op(), sent)
        assert closed.value.wrote is wrote
    with pytest.raises(ClientClosed, match="nothing was sent"):
        ack._refuse_closed(op())
