"""Deadlines in the core, against a scripted peer: no server, the clock injected.

What a deadline adds to each write (the open and failed index keys, the
``deadline > :now`` condition, an idle stamp moving the deadline in its own
write), what a late write leads to (the timeout write, once, ``ChainTimedOut``),
``touch``, ``sweep`` and the ``list_chains`` plan.  The rows of the tables
(``Status.OVERDUE``, ``Step.TIME_OUT``, the ``touch`` and ``timeout`` rows) are
walked in ``test_decisions.py``.
"""

from __future__ import annotations

import random
from typing import Any

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xor_ack_dynamodb import xor
from xor_ack_dynamodb.chain import ChainState
from xor_ack_dynamodb.dynamodb import item as I
from xor_ack_dynamodb.dynamodb._core.deadlines import Listing
from xor_ack_dynamodb.dynamodb._core.effects import Entry
from xor_ack_dynamodb.dynamodb._core.many import Chains
from xor_ack_dynamodb.dynamodb.item import decode
from xor_ack_dynamodb.dynamodb.sync import SyncXorAckDynamoDB
from xor_ack_dynamodb.errors import (
    AmbiguousWrite,
    ChainTimedOut,
    CorruptItem,
    InvalidTimeout,
    InvalidTTL,
    InventoryBuilding,
    InventoryMissing,
    StaleLocalData,
    SweepIncomplete,
    SweepStopped,
    TagExists,
)
from xor_ack_dynamodb.stamps import Stamp

from .peer import TAG, client_error, condition_failed, drive, got, item, lost_connection, ok

ROOT = Stamp(b"\x0f" * 16)
A = Stamp(b"\x05" * 16)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def chains(now: float = 900.0) -> tuple[Chains, Clock]:
    clock = Clock(now)
    core = Chains(table="tbl", token_window=4, rng=random.Random(7), clock=clock)
    return core, clock


def values(call: Any) -> dict[str, Any]:
    return dict(call.params["ExpressionAttributeValues"])


def timed_out(tag: str = TAG, **extra: Any) -> dict[str, Any]:
    """A tombstone failed with reason "timeout", as ``ALL_NEW`` returns it."""
    raw = item(ROOT, version=3, reason="timeout", tag=tag, **extra)
    raw["failed_shard"] = {"N": str(I.shard_of(tag))}
    return raw


def stamp(core: Chains, value: bytes = A) -> Any:
    return core.stamp_batch(TAG, [Entry(Stamp(value))])


# -- what a deadline adds to each write -------------------------------------------


def test_a_chain_created_with_a_timeout_is_in_the_open_index_with_its_deadline() -> None:
    core, _ = chains()
    ran = drive(core.create(TAG, ROOT, timeout=60), [("update_item", ok)])
    (call,) = ran.calls
    got_values = values(call)
    assert got_values[":dl"] == {"N": "960.0"}
    assert got_values[":os"] == {"N": str(I.shard_of(TAG))}
    names = call.params["ExpressionAttributeNames"]
    assert names["#due"] == I.DUE_AT and names["#d"] == I.DEADLINE
    assert "#due = :dl" in call.params["UpdateExpression"]
    # a re-created tag leaves its old idle_timeout and failed-index key behind
    assert "#i" in call.params["UpdateExpression"].split("REMOVE")[1]
    assert "#fs" in call.params["UpdateExpression"].split("REMOVE")[1]
    assert core.cached(TAG) is not None and core.cached(TAG).deadline == 960.0  # type: ignore[union-attr]


def test_a_ttl_a_fraction_of_a_millisecond_past_the_timeout_still_expires_after_it() -> None:
    # 900.999 + 10.0008 rounds to the deadline 911.0; 900.999 + 10.0009 rounds up to the
    # expiry 911: expired at the moment it is overdue, no timeout could ever land
    core, _ = chains(900.999)
    (call,) = drive(
        core.create(TAG, ROOT, timeout=10.0008, ttl=10.0009), [("update_item", ok)]
    ).calls
    assert values(call)[":dl"] == {"N": "911.0"}
    assert values(call)[":exp"] == {"N": "912"}


@settings(max_examples=300, deadline=None)
@given(
    now=st.integers(0, 10**10).map(lambda ms: ms / 1000),
    timeout=st.floats(0.001, 10**5),
    extra=st.floats(1e-9, 10.0),
    idle=st.booleans(),
)
def test_every_created_chain_expires_after_its_first_deadline(
    now: float, timeout: float, extra: float, idle: bool
) -> None:
    core, _ = chains(now)
    lifetime = {"idle_timeout" if idle else "timeout": timeout, "ttl": timeout + extra}
    if lifetime["ttl"] <= timeout:  # the float sum did not move: not a ttl the API takes
        return
    (call,) = drive(core.create(TAG, ROOT, **lifetime), [("update_item", ok)]).calls
    assert int(values(call)[":exp"]["N"]) > float(values(call)[":dl"]["N"])


def test_an_idle_stamp_keeps_an_old_expiry_on_the_deadline_after_it() -> None:
    # an item written before expiries were kept past the deadline: expiry == deadline
    core, _ = chains(900.0)
    live = item(ROOT, deadline=920, idle_timeout=50, expires_at=920)
    ran = drive(stamp(core), [("get_item", got(live)), ("update_item", ok)])
    assert values(ran.calls[1])[":dl"] == {"N": "950.0"}
    assert values(ran.calls[1])[":exp"] == {"N": "951"}


def test_a_chain_without_a_deadline_is_in_the_open_index_never_due() -> None:
    core, _ = chains()
    (call,) = drive(core.create(TAG, ROOT), [("update_item", ok)]).calls
    assert values(call)[":due"] == {"N": str(I.NEVER_DUE)}
    assert "#d" in call.params["UpdateExpression"].split("REMOVE")[1]


def test_idle_timeout_alone_is_the_first_deadline_and_is_kept() -> None:
    core, _ = chains()
    (call,) = drive(core.create(TAG, ROOT, idle_timeout=30), [("update_item", ok)]).calls
    assert values(call)[":dl"] == {"N": "930.0"} and values(call)[":idle"] == {"N": "30.0"}


def test_timeout_is_the_first_deadline_and_idle_timeout_each_later_one() -> None:
    core, clock = chains(900.0)
    (create,) = drive(
        core.create(TAG, ROOT, timeout=600, idle_timeout=30), [("update_item", ok)]
    ).calls
    assert values(create)[":dl"] == {"N": "1500.0"} and values(create)[":idle"] == {"N": "30.0"}
    clock.now = 1000.0
    ran = drive(stamp(core), [("update_item", ok)])  # cached: one write
    assert values(ran.calls[0])[":dl"] == {"N": "1030.0"}


def test_a_ttl_not_longer_than_the_first_deadline_is_refused_before_any_send() -> None:
    core, _ = chains()
    with pytest.raises(InvalidTTL, match="longer than the first deadline"):
        drive(core.create(TAG, ROOT, ttl=60, timeout=60), [])
    with pytest.raises(InvalidTTL):
        drive(core.create_transact({"a": ROOT, "b": ROOT}, ttl=10, idle_timeout=30), [])


def test_a_keyword_that_is_no_option_is_a_type_error_before_any_send() -> None:
    """``create``'s ``Lifetime`` and the ``*_many`` options are ``**options``: a misspelt
    keyword is refused as Python refuses one, nothing is sent."""
    core, _ = chains()
    with pytest.raises(TypeError, match=r"create\(\) got an unexpected keyword argument 'tll'"):
        drive(core.create(TAG, ROOT, tll=60), [])  # type: ignore[call-arg]
    offline = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",  # nothing listens: a send would fail, not pass
        aws_access_key_id="k",
        aws_secret_access_key="s",
    )
    ack = SyncXorAckDynamoDB(offline, table="tbl")
    with pytest.raises(TypeError, match=r"create\(\) got an unexpected keyword argument 'tll'"):
        ack.create(TAG, ROOT, tll=60)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"create_many\(\) got an unexpected keyword argument"):
        ack.create_many({TAG: ROOT}, timeut=60)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"stamp_many\(\) got an unexpected keyword argument"):
        ack.stamp_many({TAG: A}, transaction=True)  # type: ignore[call-arg]
    assert ack.stats.total_requests == 0


def test_an_idle_stamp_moves_the_deadline_and_the_expiry_in_its_own_write() -> None:
    core, _ = chains(900.0)
    live = item(ROOT, deadline=920, idle_timeout=50, expires_at=1100)
    ran = drive(stamp(core), [("get_item", got(live)), ("update_item", ok)])
    assert ran.result == [ROOT.__class__(bytes(a ^ b for a, b in zip(ROOT, A, strict=True)))]
    write = ran.calls[1]
    assert write.params["ConditionExpression"] == "#v = :old AND #c = :c AND #d > :now"
    assert "#d = :dl, #due = :dl" in write.params["UpdateExpression"]
    assert values(write)[":dl"] == {"N": "950.0"}
    assert values(write)[":exp"] == {"N": "1130"}  # moved by as much as the deadline
    assert ran.ops == ["get_item", "update_item"]  # no extra request
    cached = core.cached(TAG)
    assert cached is not None and cached.deadline == 950.0 and cached.expires_at == 1130


def test_the_stamp_that_acks_takes_the_chain_out_of_the_open_index() -> None:
    core, _ = chains()
    ran = drive(
        stamp(core, ROOT), [("get_item", got(item(ROOT, deadline=1000))), ("update_item", ok)]
    )
    assert ran.result[0].acked
    assert ran.calls[1].params["UpdateExpression"].endswith("REMOVE #os, #due, #d")


def test_fail_moves_the_chain_from_the_open_to_the_failed_index() -> None:
    core, _ = chains()
    closed = timed_out()
    ran = drive(
        core.fail(TAG, "lost"),
        [("get_item", got(item(ROOT, deadline=1000))), ("update_item", {"Attributes": closed})],
    )
    write = ran.calls[1].params
    assert write["UpdateExpression"].endswith("REMOVE #os, #due, #d")
    assert values(ran.calls[1])[":fs"] == {"N": str(I.shard_of(TAG))}
    assert "(attribute_not_exists(#d) OR #d > :now)" in write["ConditionExpression"]


# -- a late write --------------------------------------------------------------------


def test_a_late_stamp_is_not_sent_the_chain_is_failed_once_and_the_caller_told() -> None:
    core, _ = chains(1100.0)
    ran = drive(
        stamp(core),
        [
            ("get_item", got(item(ROOT, deadline=1000, tokens=[b"a" * 8]))),
            ("update_item", {"Attributes": timed_out()}),
        ],
    )
    (outcome,) = ran.result
    assert isinstance(outcome, ChainTimedOut) and outcome.deadline == 1000
    assert "replay its input" in str(outcome)
    write = ran.calls[1].params
    assert write["ConditionExpression"] == (
        "#v = :old AND #c = :c AND #d <= :now AND (attribute_not_exists(#e) OR #e > :now)"
    )
    assert values(ran.calls[1])[":r"] == {"S": "timeout"}
    assert write["UpdateExpression"].endswith("REMOVE #os, #due, #d")
    assert values(ran.calls[1])[":s" if ":s" in values(ran.calls[1]) else ":r"]  # no stamp SET
    assert ":s" not in values(ran.calls[1])  # the stamp itself is never written


def test_a_stamp_refused_by_its_deadline_times_out_without_a_back_off() -> None:
    core, clock = chains(900.0)
    live = item(ROOT, deadline=1000)

    def late(_: Any) -> Exception:
        clock.now = 1000.5  # the deadline passed while the write travelled
        return condition_failed(live)

    ran = drive(
        stamp(core),
        [
            ("get_item", got(live)),
            ("update_item", late),
            ("update_item", {"Attributes": timed_out()}),
        ],
    )
    assert isinstance(ran.result[0], ChainTimedOut)
    assert ran.sleeps == []  # not a lost race
    assert core.stats.conflicts == 0


def test_late_callers_racing_fail_the_chain_once_and_each_hears_chain_timeout() -> None:
    core, _ = chains(1100.0)
    ran = drive(
        stamp(core),
        [
            ("get_item", got(item(ROOT, deadline=1000))),
            ("update_item", condition_failed(timed_out())),  # another late caller did it
        ],
    )
    assert isinstance(ran.result[0], ChainTimedOut)
    assert ran.ops == ["get_item", "update_item"]  # one timeout write, refused: no other


def test_a_lost_response_on_the_timeout_write_is_recognised_by_its_token() -> None:
    core, _ = chains(1100.0)
    state = decode(item(ROOT, deadline=1000), "tagID")
    sent: list[Any] = []

    def drop(call: Any) -> Exception:
        sent.append(call)
        return lost_connection()

    def landed(_: Any) -> dict[str, Any]:
        blob = values(sent[0])[":t"]["B"]
        return got(timed_out(tokens=[blob[i : i + 8] for i in range(0, len(blob), 8)]))

    ran = drive(core._time_out(TAG, state), [("update_item", drop), ("get_item", landed)])
    assert isinstance(ran.result, ChainState) and ran.result.reason == "timeout"
    assert core.stats.resent_writes_recognised == 1


def test_a_chain_touched_in_time_is_not_timed_out() -> None:
    core, _ = chains(1100.0)
    state = decode(item(ROOT, deadline=1000), "tagID")
    touched = item(ROOT, version=2, deadline=1200)
    ran = drive(core._time_out(TAG, state), [("update_item", condition_failed(touched))])
    assert ran.result is None


def test_a_stamp_on_an_old_cached_deadline_goes_on_when_another_client_touched_it() -> None:
    core, clock = chains(900.0)
    drive(core.get(TAG), [("get_item", got(item(ROOT, deadline=1000)))])  # cached
    clock.now = 1100.0  # overdue by the cached state; another client touched it meanwhile
    touched = item(ROOT, version=2, deadline=1200)
    ran = drive(stamp(core), [("update_item", condition_failed(touched)), ("update_item", ok)])
    assert not isinstance(ran.result[0], Exception)
    assert values(ran.calls[1])[":old"] == {"N": "2"}  # the stamp, on the touched state
    assert ":r" in values(ran.calls[0])  # the first write was the (refused) timeout


def test_fail_after_the_deadline_fails_with_reason_timeout() -> None:
    core, _ = chains(1100.0)
    with pytest.raises(ChainTimedOut):
        drive(
            core.fail(TAG, "mine"),
            [
                ("get_item", got(item(ROOT, deadline=1000))),
                ("update_item", {"Attributes": timed_out()}),
            ],
        )


def test_create_on_an_overdue_chain_is_tag_exists() -> None:
    core, _ = chains(1100.0)
    with pytest.raises(TagExists):
        drive(
            core.create(TAG, ROOT),
            [("update_item", condition_failed(item(ROOT, deadline=1000)))],
        )


def test_an_overdue_chain_of_a_transaction_is_timed_out_the_others_stamped() -> None:
    core, _ = chains(1100.0)
    found = {
        "Responses": {
            "tbl": [item(ROOT, tag="a", deadline=1000), item(ROOT, tag="b", deadline=2000)]
        }
    }
    ran = drive(
        core.stamp_transact({"a": Entry(A), "b": Entry(A)}),
        [
            ("batch_get_item", found),
            ("update_item", {"Attributes": timed_out("a")}),
            ("update_item", ok),  # b alone: a plain stamp write
        ],
    )
    assert isinstance(ran.result["a"], ChainTimedOut)
    assert not isinstance(ran.result["b"], Exception)


def test_an_unreadable_item_met_by_a_transactions_timeout_write_is_that_chains_outcome() -> None:
    core, _ = chains(1100.0)
    found = {
        "Responses": {
            "tbl": [item(ROOT, tag="a", deadline=1000), item(ROOT, tag="b", deadline=2000)]
        }
    }
    damaged = item(ROOT, tag="a", deadline=1000)
    damaged["version"] = {"S": "oops"}
    ran = drive(
        core.piece(core.stamp_transact, {"a": Entry(A), "b": Entry(A)}),
        [
            ("batch_get_item", found),
            ("update_item", condition_failed(damaged)),  # the timeout write's refusal
            ("update_item", ok),  # b is still written: alone, a plain stamp write
        ],
    )
    assert isinstance(ran.result["a"], CorruptItem)
    assert ran.result["b"] == xor(ROOT, A)


# -- touch -----------------------------------------------------------------------------


def test_touch_moves_the_deadline_and_the_expiry_by_as_much() -> None:
    core, _ = chains(900.0)
    live = item(ROOT, deadline=950, idle_timeout=100, expires_at=1000)
    ran = drive(core.touch(TAG), [("get_item", got(live)), ("update_item", ok)])
    assert values(ran.calls[1])[":dl"] == {"N": "1000.0"}
    assert values(ran.calls[1])[":exp"] == {"N": "1050"}
    assert ran.result.deadline == 1000.0 and ran.result.version == 2
    assert ran.calls[1].params["ConditionExpression"] == "#v = :old AND #c = :c AND #d > :now"


def test_touch_with_a_timeout_and_never_shortening() -> None:
    core, _ = chains(900.0)
    ran = drive(
        core.touch(TAG, 300), [("get_item", got(item(ROOT, deadline=950))), ("update_item", ok)]
    )
    assert ran.result.deadline == 1200.0
    far = item(ROOT, deadline=5000, idle_timeout=10)
    fresh, _ = chains(900.0)
    assert drive(fresh.touch(TAG), [("get_item", got(far))]).result.deadline == 5000


def test_touch_of_a_fixed_deadline_needs_a_timeout_and_writes_nothing() -> None:
    core, _ = chains(900.0)
    with pytest.raises(InvalidTimeout, match="touch"):
        drive(core.touch(TAG), [("get_item", got(item(ROOT, deadline=950)))])


def test_touch_of_a_fixed_deadline_past_it_is_refused_before_the_timeout_write() -> None:
    # The timeout write went first: the chain was failed, then the call refused anyway.
    core, _ = chains(1100.0)
    with pytest.raises(InvalidTimeout, match="touch"):
        drive(core.touch(TAG), [("get_item", got(item(ROOT, deadline=1000)))])


def test_touch_of_a_chain_without_a_deadline_returns_it_without_a_span() -> None:
    core, _ = chains(900.0)
    ran = drive(core.touch(TAG), [("get_item", got(item(ROOT)))])
    assert ran.result.deadline is None and len(ran.calls) == 1


def test_touch_planned_on_an_old_cached_state_is_planned_again_not_a_lost_race() -> None:
    # Another client stamped the chain since this one cached it: the refusal was counted a
    # lost race (a back-off, a conflict) and, with retry=None, raised StaleLocalData.
    clock = Clock(900.0)
    core = Chains(table="tbl", token_window=4, rng=random.Random(7), clock=clock, retry=None)
    core.remember(decode(item(ROOT, version=1, deadline=930, idle_timeout=60), "tagID"), TAG)
    moved = item(ROOT, version=2, deadline=940, idle_timeout=60)
    ran = drive(core.touch(TAG), [("update_item", condition_failed(moved)), ("update_item", ok)])
    assert ran.result.deadline == 960.0
    assert values(ran.calls[1])[":old"] == {"N": "2"}
    assert core.stats.cache_refreshes == 1


def test_a_touch_that_loses_a_race_says_it_was_a_touch() -> None:
    # StaleLocalData said "changed while it was being stamped; retry the stamp" whatever
    # the write (a touch, a fail, a sweep's timeout write).
    core = Chains(table="tbl", token_window=4, rng=random.Random(7), clock=Clock(900.0), retry=None)
    live = item(ROOT, version=1, deadline=930, idle_timeout=60)
    moved = item(ROOT, version=2, deadline=940, idle_timeout=60)
    with pytest.raises(StaleLocalData, match=r"being touched .*; retry the touch") as caught:
        drive(core.touch(TAG), [("get_item", got(live)), ("update_item", condition_failed(moved))])
    assert caught.value.write == "touch"


def test_touch_after_the_deadline_fails_the_chain() -> None:
    core, _ = chains(1100.0)
    with pytest.raises(ChainTimedOut):
        drive(
            core.touch(TAG),
            [
                ("get_item", got(item(ROOT, deadline=1000, idle_timeout=60))),
                ("update_item", {"Attributes": timed_out()}),
            ],
        )


@pytest.mark.parametrize("lost", ["re-sent, condition failed", "connection lost"])
def test_a_touch_that_cannot_be_proven_either_way_is_ambiguous_from_its_reply(lost: str) -> None:
    core, _ = chains(900.0)
    beyond = item(ROOT, version=9, deadline=2000, tokens=[bytes([n]) * 8 for n in range(20, 24)])
    error = (
        condition_failed(beyond, resent=True) if lost.startswith("re-sent") else lost_connection()
    )
    script: list[Any] = [
        ("get_item", got(item(ROOT, deadline=950, idle_timeout=100, tokens=[b"\x01" * 8]))),
        ("update_item", error),
    ]
    if lost == "connection lost":
        script.append(("get_item", got(beyond)))  # the settling read
    with pytest.raises(AmbiguousWrite) as caught:
        drive(core.touch(TAG), script)
    assert caught.value.__cause__ is error


# -- sweep and the inventory ---------------------------------------------------------


def keys(*tags: str) -> list[dict[str, Any]]:
    return [{"tagID": {"S": t}, "open_shard": {"N": "0"}, "due_at": {"N": "5"}} for t in tags]


def test_sweep_reads_every_shard_page_by_page_and_fails_each_overdue_chain() -> None:
    core, _ = chains(1100.0)
    page = {"tagID": {"S": "a"}}
    script: list[Any] = [
        ("query", {"Items": keys("a"), "LastEvaluatedKey": page}),
        ("batch_get_item", {"Responses": {"tbl": [item(ROOT, tag="a", deadline=1000)]}}),
        ("update_item", {"Attributes": timed_out("a")}),
        ("query", {"Items": keys("b", "c")}),
        (
            "batch_get_item",  # b acked since it was indexed, c gone: nothing to fail
            {"Responses": {"tbl": [item(bytes(16), tag="b", acked=True)]}},
        ),
    ]
    script += [("query", {"Items": []})] * (I.INVENTORY_SHARDS - 1)
    ran = drive(core.sweep(page_size=2), script)
    assert [s.tag for s in ran.result] == ["a"]
    first, second = ran.calls[0].params, ran.calls[3].params
    assert first["IndexName"] == I.OPEN_INDEX and first["Limit"] == 2
    assert first["KeyConditionExpression"] == "#os = :shard AND #due <= :now"
    assert second["ExclusiveStartKey"] == page
    shards = [c.params["ExpressionAttributeValues"][":shard"] for c in ran.calls if c.op == "query"]
    assert shards[2:] == [{"N": str(n)} for n in range(1, I.INVENTORY_SHARDS)]


def test_a_sweep_that_loses_the_race_reports_nothing() -> None:
    core, _ = chains(1100.0)
    script: list[Any] = [
        ("query", {"Items": keys("a")}),
        ("batch_get_item", {"Responses": {"tbl": [item(ROOT, tag="a", deadline=1000)]}}),
        ("update_item", condition_failed(timed_out("a"))),  # another sweeper failed it
    ]
    script += [("query", {"Items": []})] * (I.INVENTORY_SHARDS - 1)
    assert drive(core.sweep(), script).result == []


def test_a_chain_that_cannot_be_failed_does_not_stop_the_sweep() -> None:
    """A hostile chain (its timeout write refused for another reason than a race), then a
    good one: the good one is failed all the same, the hostile one named at the end."""
    core, _ = chains(1100.0)
    too_large = client_error("ValidationException")  # e.g. the item would pass 400 KB
    script: list[Any] = [
        ("query", {"Items": keys("hostile", "good")}),
        (
            "batch_get_item",
            {
                "Responses": {
                    "tbl": [
                        item(ROOT, tag="hostile", deadline=1000),
                        item(ROOT, tag="good", deadline=1000),
                    ]
                }
            },
        ),
        ("update_item", too_large),
        ("update_item", {"Attributes": timed_out("good")}),
    ]
    script += [("query", {"Items": []})] * (I.INVENTORY_SHARDS - 1)
    with pytest.raises(SweepIncomplete) as caught:
        drive(core.sweep(), script)
    assert [s.tag for s in caught.value.failed] == ["good"]
    assert caught.value.errors == {"hostile": too_large}
    assert "1 of 2 overdue chains could not be failed" in str(caught.value)


def test_a_page_unread_after_chains_were_failed_stops_the_sweep_with_them() -> None:
    """Shard 0's chain failed, shard 1's page throttled: the tombstone made is carried by
    ``SweepStopped`` (it was lost with a raw ``ClientError``, and no log line named it)."""
    core, _ = chains(1100.0)
    throttled = client_error("ProvisionedThroughputExceededException")
    script: list[Any] = [
        ("query", {"Items": keys("a")}),
        ("batch_get_item", {"Responses": {"tbl": [item(ROOT, tag="a", deadline=1000)]}}),
        ("update_item", {"Attributes": timed_out("a")}),
        ("query", throttled),
    ]
    with pytest.raises(SweepStopped) as caught:
        drive(core.sweep(), script)
    assert [s.tag for s in caught.value.failed] == ["a"] and caught.value.errors == {}
    assert caught.value.shard == 1 and caught.value.__cause__ is throttled
    assert "stopped at index shard 1" in str(caught.value)


def test_a_page_unread_before_anything_was_done_is_dynamodbs_own_error() -> None:
    core, _ = chains(1100.0)
    throttled = client_error("ProvisionedThroughputExceededException")
    with pytest.raises(type(throttled)) as caught:
        drive(core.sweep(), [("query", throttled)])
    assert caught.value is throttled


def test_an_index_still_being_built_is_said_so_not_dynamodbs_validation_error() -> None:
    # While `table upgrade` waits for DynamoDB to backfill the new index, a sweep or a list
    # got a raw ValidationException, where a missing index gets InventoryMissing.
    core, _ = chains(1100.0)
    backfilling = client_error("ValidationException", op="Query")
    backfilling.response["Error"]["Message"] = (
        "Cannot read from backfilling global secondary index: xor_ack_open"
    )
    with pytest.raises(InventoryBuilding, match="still being built") as caught:
        drive(core.sweep(), [("query", backfilling)])
    assert isinstance(caught.value, InventoryMissing) and caught.value.__cause__ is backfilling
    assert "table upgrade" in str(caught.value)


def test_list_chains_checks_each_item_and_stops_at_the_limit() -> None:
    core, _ = chains(1100.0)
    listing = Listing(core, "failed", limit=2, page_size=5)
    op = listing.next_page()
    assert op is not None
    ran = drive(
        op,
        [
            ("query", {"Items": keys("a", "b", "c", "d")}),
            (
                "batch_get_item",
                {
                    "Responses": {
                        "tbl": [
                            timed_out("a"),
                            item(ROOT, tag="b"),  # live again (re-created): not listed
                            timed_out("c"),
                            timed_out("d"),
                        ]
                    }
                },
            ),
        ],
    )
    assert [s.tag for s in ran.result] == ["a", "c"]
    assert ran.calls[0].params["IndexName"] == I.FAILED_INDEX
    assert ran.calls[0].params["KeyConditionExpression"] == "#fs = :shard"
    assert listing.next_page() is None  # the limit is reached


def test_list_chains_goes_on_to_the_next_shard_after_the_last_page() -> None:
    core, _ = chains()
    listing = Listing(core, "open", limit=None, page_size=100)
    for shard in range(I.INVENTORY_SHARDS):
        op = listing.next_page()
        assert op is not None
        ran = drive(op, [("query", {"Items": []})])
        assert ran.calls[0].params["ExpressionAttributeValues"][":shard"] == {"N": str(shard)}
    assert listing.next_page() is None


# -- the item ----------------------------------------------------------------------------


def test_chain_state_decodes_the_deadline_and_knows_when_it_is_overdue() -> None:
    state = decode(item(ROOT, deadline=1000, idle_timeout=30), "tagID")
    assert state.deadline == 1000 and state.idle_timeout == 30
    assert not state.overdue(999.9) and state.overdue(1000)
    assert not decode(item(ROOT, reason="timeout", deadline=1000), "tagID").overdue(2000)
    assert not decode(item(ROOT), "tagID").overdue(10**12)


@pytest.mark.parametrize(
    ("name", "value"),
    [("idle_timeout", {"N": "0"}), ("idle_timeout", {"N": "-3"}), ("deadline", {"S": "soon"})],
)
def test_a_bad_deadline_or_idle_timeout_is_a_corrupt_item(name: str, value: Any) -> None:
    raw = item(ROOT)
    raw[name] = value
    with pytest.raises(CorruptItem) as caught:
        decode(raw, "tagID")
    assert caught.value.attribute == name
