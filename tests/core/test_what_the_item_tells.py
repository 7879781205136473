"""What the item read back tells, where a reply alone said too little: a transaction's
stamps on a chain replayed under its tag (planned again), on a chain whose token another
copy landed first (applied before), beside one chain that lost its race (only it is told);
a fail whose answer was lost after it landed (settled by its reason and time); a create that
met another client's transaction (a race, not an error).  And an ``idle_timeout`` DynamoDB
cannot store, refused before any write.

Everything runs on DynamoDB Local, on the async client and on its sync twin.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ConnectionClosedError

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.errors import InvalidTimeout, StaleLocalData, StampManyFailed
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client
from .hooks import Trigger, client_error, hooked_client, raising


def _other(local: tuple[str, TableSpec]) -> SyncXorAckDynamoDB:
    raw = boto3.client("dynamodb", endpoint_url=local[0], region_name="us-east-1")
    return SyncXorAckDynamoDB(raw, table=local[1].name)


async def test_an_idle_timeout_dynamodb_cannot_store_is_refused_before_any_write(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """``check_timeout`` takes any number in (0, a year]; ``idle_timeout`` is then stored
    as ``str(float)``.  Below 1e-130 DynamoDB refuses the number (underflow): a raw
    botocore ``ValidationException`` from ``create`` instead of ``InvalidTimeout``."""
    async with open_client(kind, local[0], local[1].name) as ack:
        with pytest.raises(InvalidTimeout):
            await ack.create("tiny", new_stamp(), idle_timeout=1e-300)


async def test_transact_stamps_replan_on_a_remembered_chain_replayed_under_its_tag(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """A remembered chain that was failed and created again elsewhere (a replay) is an old
    cache, not a lost race: ``stamp`` (and ``stamp_many`` without ``transact``) plan again on
    the new chain, also with ``retry=None``.  ``stamp_many(transact=True)`` counts it as a
    race (``_moved`` wants the same ``chain_id``) and raises ``StaleLocalData``."""
    other = _other(local)
    async with open_client(kind, local[0], local[1].name, retry=None) as worker:
        await worker.create_many({"foo": new_stamp(), "bar": new_stamp()})  # remembered
        roots = {"foo": new_stamp(), "bar": new_stamp()}
        for tag, root in roots.items():  # replayed by another client: a new generation
            other.fail(tag)
            other.create(tag, root)
        done = await worker.stamp_many(roots, transact=True)
        assert all(state.acked for state in done.values())


async def test_transact_stamp_whose_token_lands_first_elsewhere_is_applied_before(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """A re-run of the same work (same stamp, same token) lands on "a" between this call's
    read and its transaction.  Single writes report "a" applied before and land "b" and
    "c"; the transaction (``retry=None``) reports all three as ``StaleLocalData``."""
    other = _other(local)
    parts = {t: (new_stamp(), new_stamp()) for t in ("a", "b", "c")}
    other.create_many({t: xor(x, y) for t, (x, y) in parts.items()})
    rerun = Trigger(lambda params: other.stamp("a", parts["a"][0], token="work-a"), times=1)
    async with hooked_client(
        kind,
        local[0],
        local[1].name,
        before={"transact_write_items": rerun},
        retry=None,
        cache_size=0,
    ) as ack:
        done = await ack.stamp_many(
            {t: x for t, (x, _) in parts.items()}, tokens={"a": "work-a"}, transact=True
        )
    assert done == {t: y for t, (_, y) in parts.items()}


async def test_transact_lost_race_on_one_chain_is_not_told_to_the_others(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """``retry=None``: a lost race on "a" only.  Single writes: "a" gets ``StaleLocalData``,
    "b" and "c" land.  In a transaction, "b" and "c" (cancellation reason None: nobody
    touched them) are told ``StaleLocalData`` too and are never written."""
    other = _other(local)
    parts = {t: (new_stamp(), new_stamp()) for t in ("a", "b", "c")}
    extra = new_stamp()
    other.create_many(
        {t: xor(x, y, extra) if t == "a" else xor(x, y) for t, (x, y) in parts.items()}
    )
    race = Trigger(lambda params: other.stamp("a", extra), times=1)
    async with hooked_client(
        kind,
        local[0],
        local[1].name,
        before={"transact_write_items": race},
        retry=None,
        cache_size=0,
    ) as ack:
        with pytest.raises(StampManyFailed) as failed:
            await ack.stamp_many({t: x for t, (x, _) in parts.items()}, transact=True)
    assert set(failed.value.errors) == {"a"}, failed.value.errors
    assert isinstance(failed.value.errors["a"], StaleLocalData)
    assert failed.value.results == {"b": parts["b"][1], "c": parts["c"][1]}


async def test_a_fail_whose_answer_was_lost_after_it_landed_is_settled(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """The fail write lands and its answer is lost (botocore gives up on the connection).
    A stamp in the same spot is settled by a read; ``fail`` raises the bare transport error
    ("fail is never re-read"), and the caller's retry is then told ``ChainFailed`` with
    ``failed_by_this_call=False`` and its reason "not written", though it was."""

    def lose(params: dict[str, Any]) -> None:
        raise ConnectionClosedError(endpoint_url=local[0])

    lost = Trigger(lose, times=0)
    async with hooked_client(kind, local[0], local[1].name, after={"update_item": lost}) as ack:
        await ack.create("f", new_stamp())
        lost.arm(1)  # the next write lands, and its answer is lost
        state = await ack.fail("f", "bad input")
        assert state.failed and state.reason == "bad input"


async def test_create_meeting_a_transaction_conflict_is_a_race_not_an_error(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """Another client's transaction (``create_many``/``stamp_many(transact=True)``) holds the
    item when ``create``'s UpdateItem arrives: DynamoDB answers TransactionConflict, which
    botocore does not retry.  ``stamp`` re-reads and goes on, ``create_many`` retries it as a
    contended item; ``create`` raises the raw ``ClientError`` (REPLY_STEP's REFUSE row)."""
    conflict = Trigger(raising(client_error("UpdateItem", "TransactionConflictException")))
    stamp = new_stamp()
    async with hooked_client(
        kind, local[0], local[1].name, before={"update_item": conflict}
    ) as ack:
        assert await ack.create("k", stamp) == stamp
