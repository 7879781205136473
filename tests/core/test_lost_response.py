"""A write that landed but whose response was lost is recognised, never applied twice.

A real proxy in front of DynamoDB Local forwards the write, lets it land, and
drops the connection; botocore re-sends it and its condition fails.  A naive
client would then re-read and XOR the stamp in again.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ConnectionClosedError

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.errors import (
    AmbiguousWrite,
    NotAChain,
    TagExists,
    TagNotFound,
    UnsettledWrite,
)
from xor_ack_dynamodb.retry import botocore_config
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client
from .hooks import hooked_client
from .lossy_proxy import LossyProxy, drop_first

pytestmark = pytest.mark.ddblocal


async def test_lost_stamp_response_is_not_applied_twice(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    root, a, b = new_stamp(), new_stamp(), new_stamp()
    async with open_client(kind, ddb_local_endpoint, ddb_table.name) as direct:
        await direct.create("file", root)
        rule = drop_first("UpdateItem")
        with LossyProxy(ddb_local_endpoint, rule) as proxy:
            async with open_client(kind, proxy.endpoint_url, ddb_table.name) as ack:
                state = await ack.stamp("file", xor(root, a, b))
                assert proxy.dropped == ["UpdateItem"]  # the first send landed, unanswered
                assert proxy.forwarded.count("UpdateItem") == 1  # botocore's re-send
                assert state == xor(a, b)
                assert ack.stats.resent_writes_recognised == 1
                assert ack.stats.stamps == 1
        # The chain holds the stamp exactly once: the two children close it.
        assert (await direct.get("file")).stamp == xor(a, b)
        await direct.stamp("file", a)
        assert (await direct.stamp("file", b)).acked


async def test_lost_completing_response_still_reports_acked(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    root = new_stamp()
    async with open_client(kind, ddb_local_endpoint, ddb_table.name) as direct:
        await direct.create("file", root)
        with LossyProxy(ddb_local_endpoint, drop_first("UpdateItem")) as proxy:
            async with open_client(kind, proxy.endpoint_url, ddb_table.name) as ack:
                assert (await ack.stamp("file", root)).acked  # exactly one caller learns it
                assert proxy.dropped == ["UpdateItem"]
        assert (await direct.get("file")).acked


async def test_lost_create_response_is_not_a_false_tag_exists(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    stamp = new_stamp()
    with LossyProxy(ddb_local_endpoint, drop_first("UpdateItem")) as proxy:
        async with open_client(kind, proxy.endpoint_url, ddb_table.name) as ack:
            assert await ack.create("file", stamp) == stamp
            assert proxy.dropped == ["UpdateItem"]
            assert ack.stats.resent_writes_recognised == 1
            with pytest.raises(TagExists):  # a genuine second create still conflicts
                await ack.create("file", stamp)


async def test_lost_response_while_others_write_in_between(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """Another writer lands between the lost send and botocore's re-send: the re-send's
    condition fails on a newer version, and the token in the item still proves ours landed."""
    root, a, b = new_stamp(), new_stamp(), new_stamp()
    other = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1"),
        table=ddb_table.name,
    )
    other.create("file", xor(root, a, b))
    lost: list[str] = []

    def rule(target: str, body: bytes) -> bool:
        if target == "UpdateItem" and not lost:
            lost.append(target)
            other.stamp("file", a)  # lands after our write, before the re-send
            return True
        return False

    with LossyProxy(ddb_local_endpoint, rule) as proxy:
        async with open_client(kind, proxy.endpoint_url, ddb_table.name) as ack:
            await ack.get("file")  # warm the cache: the stamp is a single write
            assert await ack.stamp("file", root) == xor(a, b)  # the state it made
            assert proxy.dropped == ["UpdateItem"]
            assert ack.stats.resent_writes_recognised == 1
    state = other.get("file")
    assert state is not None and state.stamp == b and state.version == 3
    assert other.stamp("file", b).acked


async def test_transport_error_after_the_write_landed_is_settled_by_a_read(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """With botocore's re-sends off, the lost response surfaces as a transport error; the
    client settles it with a consistent read instead of guessing."""
    root, a = new_stamp(), new_stamp()
    async with open_client(kind, ddb_local_endpoint, ddb_table.name) as direct:
        await direct.create("file", xor(root, a))
        config = botocore_config(retries={"mode": "standard", "max_attempts": 1})
        with LossyProxy(ddb_local_endpoint, drop_first("UpdateItem")) as proxy:
            async with open_client(kind, proxy.endpoint_url, ddb_table.name, config=config) as ack:
                assert await ack.stamp("file", root) == a
                assert proxy.dropped == ["UpdateItem"]
                assert ack.stats.requests["GetItem"] >= 1
        assert (await direct.stamp("file", a)).acked


async def test_write_that_never_reached_the_table_is_reported_not_guessed(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """Every send of the write lost: the error reaches the caller and nothing was applied
    twice; retrying with the same token is then safe."""
    root, a = new_stamp(), new_stamp()
    async with open_client(kind, ddb_local_endpoint, ddb_table.name) as direct:
        await direct.create("file", xor(root, a))
        config = botocore_config(retries={"mode": "standard", "max_attempts": 1})
        with LossyProxy(ddb_local_endpoint, drop_first("UpdateItem", count=99)) as proxy:
            async with open_client(kind, proxy.endpoint_url, ddb_table.name, config=config) as ack:
                await ack.get("file")
                # The write lands (the proxy forwards it) but its answer is lost, and the
                # settling read goes through: the stamp is reported applied, exactly once.
                assert await ack.stamp("file", root, token=b"job-1") == a
                assert await ack.stamp("file", root, token=b"job-1") == a  # duplicate: no-op
        assert (await direct.get("file")).stamp == a
        with LossyProxy(ddb_local_endpoint, lambda t, b: True) as dead:
            async with open_client(kind, dead.endpoint_url, ddb_table.name, config=config) as ack:
                with pytest.raises(ConnectionClosedError):  # the read before the write
                    await ack.stamp("file", a, token=b"job-2")
                assert set(dead.dropped) == {"GetItem"}  # nothing written
        reads: list[str] = []

        def all_but_the_first_read(target: str, body: bytes) -> bool:
            reads.append(target)
            return reads != ["GetItem"]

        with LossyProxy(ddb_local_endpoint, all_but_the_first_read) as dead:
            async with open_client(kind, dead.endpoint_url, ddb_table.name, config=config) as ack:
                # The write's answer lost, and the settling read's: the write may have
                # landed, and the caller is told so, not handed the read's transport error.
                with pytest.raises(UnsettledWrite) as unsettled:
                    await ack.stamp("file", a, token=b"job-2")
                assert isinstance(unsettled.value, AmbiguousWrite)
                assert isinstance(unsettled.value.__cause__, ConnectionClosedError)
                assert unsettled.value.tag == "file" and "same token" in str(unsettled.value)
                assert dead.forwarded == ["GetItem"] and "UpdateItem" in dead.dropped
        # Sent again with the same token, as the error says: it lands once, and the caller
        # whose stamp completed the chain is told so.
        assert (await direct.stamp("file", a, token=b"job-2")).acked
        assert (await direct.get("file")).version == 3


async def test_more_writes_than_the_window_between_makes_it_ambiguous_not_guessed(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """If more writes than the token window land between the lost send and the re-send,
    the client cannot prove either way, and says so instead of guessing."""
    root = new_stamp()
    others = [new_stamp() for _ in range(6)]
    window = 4
    other = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1"),
        table=ddb_table.name,
        token_window=window,
    )
    other.create("file", new_stamp())  # unrelated stamps: the chain never reaches zero here
    lost: list[str] = []

    def rule(target: str, body: bytes) -> bool:
        if target == "UpdateItem" and not lost:
            lost.append(target)
            for s in others:  # six writes push our token out of a window of four
                other.stamp("file", s)
            return True
        return False

    with LossyProxy(ddb_local_endpoint, rule) as proxy:
        async with open_client(
            kind, proxy.endpoint_url, ddb_table.name, token_window=window
        ) as ack:
            await ack.get("file")
            with pytest.raises(AmbiguousWrite) as info:
                await ack.stamp("file", root)
            assert info.value.code == "AmbiguousWrite" and info.value.window == window
            assert proxy.dropped == ["UpdateItem"]


async def test_a_writer_of_a_smaller_window_in_between_never_gets_a_stamp_applied_twice(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """Another client keeps a window of 4 and lands 4 writes between the lost send and
    the re-send: they cut the token list to 4, pushing this write's token out, though
    the list is far shorter than this client's window.  The stamp is in the chain once,
    so the client cannot prove it landed, and says so instead of writing it again."""
    root, mine = new_stamp(), new_stamp()
    theirs = [new_stamp() for _ in range(4)]
    other = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1"),
        table=ddb_table.name,
        token_window=4,
    )
    other.create("file", root)
    lost: list[str] = []

    def rule(target: str, body: bytes) -> bool:
        if target == "UpdateItem" and not lost:
            lost.append(target)
            for s in theirs:  # land after ours, before the re-send
                other.stamp("file", s)
            return True
        return False

    with LossyProxy(ddb_local_endpoint, rule) as proxy:
        async with open_client(kind, proxy.endpoint_url, ddb_table.name) as ack:
            await ack.get("file")
            with pytest.raises(AmbiguousWrite):
                await ack.stamp("file", mine)
            assert proxy.dropped == ["UpdateItem"]
    state = other.get("file")
    assert state is not None and state.stamp == xor(root, mine, *theirs)  # applied once


async def test_a_tag_created_again_before_the_re_send_is_left_alone(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """The stamp lands (and acks the chain), its answer is lost, and another client
    creates the tag again before the re-send: the proof went with the first chain, so
    the client cannot tell, says so, and writes nothing to the new one."""
    root, again = new_stamp(), new_stamp()
    other = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1"),
        table=ddb_table.name,
    )
    other.create("file", root)

    lost: list[str] = []

    def rule(target: str, body: bytes) -> bool:
        if target == "UpdateItem" and not lost:
            lost.append(target)
            other.create("file", again)  # ours acked the chain: the tag is free
            return True
        return False

    with LossyProxy(ddb_local_endpoint, rule) as proxy:
        async with open_client(kind, proxy.endpoint_url, ddb_table.name) as ack:
            await ack.get("file")
            with pytest.raises(AmbiguousWrite):
                await ack.stamp("file", root)
            assert proxy.dropped == ["UpdateItem"]
    state = other.get("file")
    assert state is not None and state.stamp == again  # the new chain is untouched


async def test_a_re_sent_delete_leaves_a_chain_created_since_alone(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """The delete lands, its answer is lost, and another client creates the tag again
    before botocore re-sends it: the re-send, conditioned on the generation read, finds
    that generation gone (so this delete landed) and leaves the new chain alone."""
    other = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1"),
        table=ddb_table.name,
    )
    theirs = new_stamp()

    def drop(target: str, body: bytes) -> bool:
        if target == "DeleteItem" and not other.get("job"):
            other.create("job", theirs)  # the first delete landed: the tag is free
            return True
        return False

    async with open_client(kind, ddb_local_endpoint, ddb_table.name) as direct:
        await direct.create("job", new_stamp())
        with LossyProxy(ddb_local_endpoint, drop) as proxy:
            async with open_client(kind, proxy.endpoint_url, ddb_table.name) as ack:
                await ack.delete("job")  # landed: no error
                assert proxy.dropped == ["DeleteItem"]
                assert proxy.forwarded.count("DeleteItem") == 1  # botocore's re-send
    state = other.get("job")
    assert state is not None and state.stamp == theirs
    assert other.stamp("job", theirs).acked


async def test_a_delete_whose_item_was_replaced_by_another_programs_leaves_it(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """delete() reads a chain; before its write, another program puts its own item (none
    of a chain's attributes) under the key.  The delete's condition fails, and the read
    after it finds no chain: NotAChain, and that item is left as it is."""
    raw = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    other = SyncXorAckDynamoDB(raw, table=ddb_table.name)
    other.create("job", new_stamp())
    theirs = {"tagID": {"S": "job"}, "name": {"S": "Ada Lovelace"}}

    def replace_first(params: dict[str, Any]) -> None:
        raw.put_item(TableName=ddb_table.name, Item=theirs)

    async with hooked_client(
        kind, ddb_local_endpoint, ddb_table.name, before={"delete_item": replace_first}
    ) as ack:
        with pytest.raises(NotAChain):
            await ack.delete("job")
    assert raw.get_item(TableName=ddb_table.name, Key={"tagID": {"S": "job"}})["Item"] == theirs
    raw.delete_item(TableName=ddb_table.name, Key={"tagID": {"S": "job"}})


async def test_a_delete_racing_a_create_over_its_tombstone_returns_and_leaves_it(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """delete() reads an acked chain's tombstone; before its write, another client creates
    the tag again (over the tombstone).  The delete's condition fails: the item it read is
    gone, so it returns (it counts as done before that create), and the new chain stays.
    It used to raise TagNotFound, "does not exist", with a chain under the tag."""
    other = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1"),
        table=ddb_table.name,
    )
    root, theirs = new_stamp(), new_stamp()
    other.create("done", root)
    assert other.stamp("done", root).acked  # a tombstone now

    def create_first(params: dict[str, Any]) -> None:
        other.create("done", theirs)

    async with hooked_client(
        kind, ddb_local_endpoint, ddb_table.name, before={"delete_item": create_first}
    ) as ack:
        await ack.delete("done")
    state = other.get("done")
    assert state is not None and state.live and state.stamp == theirs
    other.delete("done")
    with pytest.raises(TagNotFound):  # nothing under the tag: still TagNotFound
        other.delete("done")


async def test_a_re_sent_create_does_not_reopen_its_own_chain_completed_meanwhile(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """botocore re-sends a create whose response was lost.  If the chain it created was
    completed (or failed) in between, the create's condition lets a closed chain be
    replaced, so the re-send writes the chain again, live, at its first stamp: finished
    work is reported unfinished forever (and a failed chain comes back to life)."""
    import boto3

    from xor_ack_dynamodb import SyncXorAckDynamoDB

    from .lossy_proxy import LossyProxy

    endpoint, spec = local
    root = new_stamp()
    other = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1"),
        table=spec.name,
    )
    left = [1]

    def lose_and_complete(target: str, body: bytes) -> bool:
        if target != "UpdateItem" or not left[0]:
            return False
        left[0] -= 1
        # The create landed upstream; before its re-send, a worker completes the chain.
        assert other.stamp("file", root).acked
        return True  # the creator never hears of the first send

    with LossyProxy(endpoint, lose_and_complete) as proxy:
        async with open_client(kind, proxy.endpoint_url, spec.name) as ack:
            await ack.create("file", root)
            assert proxy.dropped == ["UpdateItem"]
    state = other.get("file")
    assert state is not None
    assert state.acked, f"the completed chain was re-opened by the create's re-send: {state}"


async def test_a_re_sent_fail_leaves_a_chain_created_since_alone(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """fail() reads the chain first, but its write is conditioned on that generation only
    when the caller passes chain_id.  Its first send lands, the answer is lost, the input
    is replayed under the same tag (create over the failed tombstone, as docs/api.md
    advises), and botocore's re-send of the fail then fails the *new* chain."""
    import boto3

    from xor_ack_dynamodb import SyncXorAckDynamoDB

    from .lossy_proxy import LossyProxy

    endpoint, spec = local
    other = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1"),
        table=spec.name,
    )
    other.create("file", new_stamp())
    replayed = new_stamp()
    left = [1]

    def lose_and_replay(target: str, body: bytes) -> bool:
        if target != "UpdateItem" or not left[0]:
            return False
        left[0] -= 1
        other.create("file", replayed)  # the fail landed; the input is replayed at once
        return True

    with LossyProxy(endpoint, lose_and_replay) as proxy:
        async with open_client(kind, proxy.endpoint_url, spec.name) as ack:
            # the generation it read is gone (failed by its own first send, most likely):
            # no live chain of it, and the one created since is not its to fail
            with pytest.raises(TagNotFound):
                await ack.fail("file", "bad input")
            assert proxy.dropped == ["UpdateItem"]
    state = other.get("file")
    assert state is not None and state.stamp == replayed
    assert state.live, f"the replayed chain was failed by the first one's re-sent fail: {state}"


async def test_a_re_sent_create_transaction_is_ours_by_its_chain_ids_past_the_window(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """A transaction of creates lands, its response is lost, and more stamps than the
    token window land on one of its chains before botocore's re-send: the create's
    token is gone from that chain, but its chain id (this attempt's own) is there.
    The chain is ours, created: not ``TagExists`` (someone else's live chain)."""
    window = 4
    roots = {"a": new_stamp(), "b": new_stamp()}
    other = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1"),
        table=ddb_table.name,
        token_window=window,
    )
    lost: list[str] = []

    def rule(target: str, body: bytes) -> bool:
        if target != "TransactWriteItems":
            return False
        if not lost:  # landed: push the create's token out of the window
            for _ in range(window + 2):
                other.stamp("a", new_stamp())
        lost.append(target)
        return True  # every answer lost: botocore gives up, the client reads the items

    with LossyProxy(ddb_local_endpoint, rule) as proxy:
        async with open_client(
            kind, proxy.endpoint_url, ddb_table.name, token_window=window
        ) as ack:
            created = await ack.create_many(roots)
            assert created == roots
            assert set(proxy.dropped) == {"TransactWriteItems"}
