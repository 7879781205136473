"""The core's decisions against a scripted peer: no server, every Call and Sleep checked.

Each test runs one ``_core`` generator with ``peer.drive`` and answers its Calls by
hand: lost responses, throttles, lost races, re-created tags, tombstones, damaged
items and cancelled transactions.  The last tests walk every row of the tables of
``_core/landing.py``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError, ParamValidationError

from xor_ack_dynamodb import xor
from xor_ack_dynamodb.chain import ChainState
from xor_ack_dynamodb.dynamodb import item as I
from xor_ack_dynamodb.dynamodb._core import cancellation as C
from xor_ack_dynamodb.dynamodb._core import landing as D
from xor_ack_dynamodb.dynamodb._core import told as T
from xor_ack_dynamodb.dynamodb._core.effects import Call, Entry
from xor_ack_dynamodb.dynamodb._core.many import Chains
from xor_ack_dynamodb.errors import (
    AmbiguousWrite,
    ChainFailed,
    ChainTimedOut,
    CorruptItem,
    StaleLocalData,
    TagExists,
    TagNotFound,
    TransactionItemRejected,
)
from xor_ack_dynamodb.retry import RetryPolicy
from xor_ack_dynamodb.stamps import Stamp

from .peer import (
    CHAIN,
    OTHER_CHAIN,
    TAG,
    Ran,
    check_request,
    client_error,
    condition_failed,
    drive,
    got,
    item,
    lost_connection,
    ok,
    written,
)

WINDOW = 4
ROOT = Stamp(b"\x0f" * 16)
A = Stamp(b"\x05" * 16)  # a stamp that leaves ROOT ^ A live
OLD = [bytes([n]) * 8 for n in range(1, WINDOW + 1)]  # a full token list


THREE_TRIES = RetryPolicy(max_attempts=3)


def chains(retry: RetryPolicy | None = THREE_TRIES) -> Chains:
    return Chains(table="tbl", retry=retry, token_window=WINDOW, rng=random.Random(7))


def stamp(core: Chains, *stamps: bytes) -> Any:
    return core.stamp_batch(TAG, [Entry(Stamp(s)) for s in stamps])


def planned(call: Any) -> tuple[str, str]:
    """The (chain_id, version) a stamp write was conditioned on."""
    values = call.params["ExpressionAttributeValues"]
    return values[":c"]["B"], values[":old"]["N"]


# -- a lost response ---------------------------------------------------------


def test_lost_response_that_landed_is_recognised_not_applied_twice() -> None:
    core = chains()
    landed: dict[str, Any] = {}

    def resent(call: Any) -> Exception:  # botocore re-sent it; the first send had landed
        landed.update(written(call))
        return condition_failed(landed, resent=True)

    ran = drive(
        stamp(core, A),
        [("get_item", got(item(ROOT, tokens=OLD[:2]))), ("update_item", resent)],
    )
    assert ran.result == [xor(ROOT, A)]
    assert ran.ops == ["get_item", "update_item"]
    assert ran.sleeps == []
    assert core.stats.resent_writes_recognised == 1


def test_lost_connection_settled_by_a_read_that_shows_it_landed() -> None:
    core = chains()
    sent: list[Any] = []

    def drop(call: Any) -> Exception:
        sent.append(call)
        return lost_connection()

    ran = drive(
        stamp(core, A),
        [
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),
            ("update_item", drop),
            ("get_item", lambda _: got(written(sent[0]))),
        ],
    )
    assert ran.result == [xor(ROOT, A)]
    assert core.stats.resent_writes_recognised == 1


def test_lost_connection_proven_not_landed_reports_the_transport_error() -> None:
    error = lost_connection()
    ran = drive(
        stamp(chains(), A),
        [
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),
            ("update_item", error),
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),  # unchanged: nothing landed
        ],
    )
    assert ran.result == [error]


def test_connection_never_opened_is_not_read_back() -> None:
    error = lost_connection(never_sent=True)
    ran = drive(
        stamp(chains(), A),
        [("get_item", got(item(ROOT, tokens=OLD[:2]))), ("update_item", error)],
    )
    assert ran.result == [error]
    assert ran.ops == ["get_item", "update_item"]


def test_lost_response_beyond_the_token_window_is_ambiguous() -> None:
    beyond = item(ROOT, version=9, tokens=[b"\xee" * 8] * WINDOW)
    ran = drive(
        stamp(chains(), A),
        [
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),
            ("update_item", condition_failed(beyond, resent=True)),
        ],
    )
    (outcome,) = ran.result
    assert isinstance(outcome, AmbiguousWrite)
    assert ran.sleeps == []


def test_a_list_cut_by_a_writer_of_a_smaller_window_is_not_taken_for_one_never_cut() -> None:
    # Another client keeps 4 tokens: its writes cut the list to 4, far below this
    # client's 32, and pushed this write's token out with the planned state's.
    cut = item(ROOT, version=9, tokens=[bytes([n]) * 8 for n in range(20, 24)])
    ran = drive(
        Chains(table="tbl", retry=THREE_TRIES, token_window=32).stamp_batch(TAG, [Entry(A)]),
        [
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),
            ("update_item", condition_failed(cut, resent=True)),
        ],
    )
    (outcome,) = ran.result
    assert isinstance(outcome, AmbiguousWrite)
    assert ran.ops == ["get_item", "update_item"]  # not written again


# -- lost races ----------------------------------------------------------------


def test_throttled_then_condition_failed_is_a_plain_lost_race() -> None:
    # The same item after a lost response would be ambiguous (the test above); after
    # sends that were only throttled it is a lost race: back off, plan again, write.
    moved = item(ROOT, version=9, tokens=[b"\xee" * 8] * WINDOW)
    ran = drive(
        stamp(chains(), A),
        [
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),
            ("update_item", condition_failed(moved, throttled=2)),
            ("update_item", ok),
        ],
    )
    assert ran.result == [xor(ROOT, A)]
    assert len(ran.sleeps) == 1
    assert planned(ran.calls[1]) == (CHAIN, "1")
    assert planned(ran.calls[2]) == (CHAIN, "9")


def test_lost_race_without_retry_is_stale_local_data() -> None:
    moved = item(xor(ROOT, A), version=2, tokens=OLD[:3])
    ran = drive(
        stamp(chains(retry=None), A),
        [
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),
            ("update_item", condition_failed(moved)),
        ],
    )
    (outcome,) = ran.result
    assert isinstance(outcome, StaleLocalData)
    assert ran.sleeps == []


def test_lost_races_until_the_policy_is_spent() -> None:
    core = chains(retry=RetryPolicy(max_attempts=2, base_delay=0.001))
    script: list[Any] = [("get_item", got(item(ROOT, tokens=OLD[:2])))]
    for version in (2, 3):
        script.append(("update_item", condition_failed(item(ROOT, version=version))))
    ran = drive(stamp(core, A), script)
    (outcome,) = ran.result
    assert isinstance(outcome, StaleLocalData)
    assert len(ran.sleeps) == 1
    assert core.stats.conflicts == 2 and core.stats.retries == 1


def test_transaction_holding_the_item_is_a_race() -> None:
    ran = drive(
        stamp(chains(), A),
        [
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),
            ("update_item", client_error("TransactionConflictException")),
            ("get_item", got(item(ROOT, version=2, tokens=OLD[:3]))),
            ("update_item", ok),
        ],
    )
    assert ran.result == [xor(ROOT, A)]
    assert len(ran.sleeps) == 1
    assert planned(ran.calls[3]) == (CHAIN, "2")


def test_refused_write_reports_the_botocore_error_without_a_read() -> None:
    throttled = client_error("ProvisionedThroughputExceededException", retries=3)
    ran = drive(
        stamp(chains(), A),
        [("get_item", got(item(ROOT, tokens=OLD[:2]))), ("update_item", throttled)],
    )
    assert ran.result == [throttled]


@pytest.mark.parametrize("retry", [None, THREE_TRIES], ids=["no-retry", "retries"])
@pytest.mark.parametrize("cached", [False, True], ids=["fresh", "cached"])
def test_a_race_lost_to_a_write_of_the_same_token_is_told_the_state_at_once(
    retry: RetryPolicy | None, cached: bool
) -> None:
    """The write is refused because a write of the same work (same token: a re-run, a
    retried call) landed first.  A client with the chain cached was told the state; a
    fresh one took it for a lost race: it backed off, counted a conflict, and without
    retries raised ``StaleLocalData`` for a stamp the chain holds."""
    token = b"task-a#1"
    core = chains(retry)
    before = item(ROOT, tokens=OLD[:2])
    script: list[tuple[str, Any]] = [("get_item", got(before))]
    if cached:
        core.remember(I.decode(before, "tagID"), TAG)
        script = []
    landed = item(xor(ROOT, A), version=2, tokens=[*OLD[:2], token])
    ran = drive(
        core.stamp_batch(TAG, [Entry(A, token)]),
        [*script, ("update_item", condition_failed(landed))],
    )
    assert ran.result == [xor(ROOT, A)]
    assert ran.sleeps == [] and core.stats.conflicts == 0


# -- create -----------------------------------------------------------------------


def test_concurrent_create_is_tag_exists() -> None:
    other = item(ROOT, chain_id=OTHER_CHAIN, tokens=OLD[:1])
    ran = Ran()
    with pytest.raises(TagExists):
        drive(chains().create(TAG, ROOT), [("update_item", condition_failed(other))], ran)
    assert ran.ops == ["update_item"]


def test_lost_create_response_is_our_own_create() -> None:
    ran = drive(
        chains().create(TAG, ROOT),
        [("update_item", lambda call: condition_failed(written(call), resent=True))],
    )
    assert ran.result == ROOT


def test_create_over_a_tombstone_is_sent_again() -> None:
    tombstone = item(Stamp(bytes(16)), acked=True)
    ran = drive(
        chains().create(TAG, ROOT),
        [("update_item", condition_failed(tombstone)), ("update_item", ok)],
    )
    assert ran.result == ROOT
    assert ran.sleeps == []


# -- re-created tags, tombstones, damaged items -----------------------------------


@pytest.mark.parametrize(
    "recreated",
    [
        item(ROOT, chain_id=OTHER_CHAIN, tokens=OLD[:1]),
        item(ROOT, chain_id=OTHER_CHAIN, version=7, tokens=OLD),
    ],
    ids=["short token list", "full token list"],
)
def test_a_tag_re_created_after_a_lost_response_is_ambiguous(recreated: dict[str, Any]) -> None:
    """The first send may have landed on the chain planned on, which then closed and
    went, proof and all, before the tag was created again: however few tokens the new
    chain holds, nothing tells, and the stamp is not written to the new chain."""
    ran = drive(
        stamp(chains(), A),
        [
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),
            ("update_item", condition_failed(recreated, resent=True)),
        ],
    )
    assert isinstance(ran.result[0], AmbiguousWrite)


@pytest.mark.parametrize(
    ("tombstone", "error"),
    [
        (item(Stamp(bytes(16)), acked=True), TagNotFound),
        (item(ROOT, reason="timeout"), ChainFailed),
    ],
)
def test_tombstone_refuses_the_stamp_without_a_write(
    tombstone: dict[str, Any], error: type[Exception]
) -> None:
    ran = drive(stamp(chains(), A), [("get_item", got(tombstone))])
    (outcome,) = ran.result
    assert isinstance(outcome, error)
    assert ran.ops == ["get_item"]


def test_chain_failed_while_the_write_was_in_flight() -> None:
    ran = drive(
        stamp(chains(), A),
        [
            ("get_item", got(item(ROOT, tokens=OLD[:2]))),
            ("update_item", condition_failed(item(ROOT, version=2, reason="timeout"))),
        ],
    )
    (outcome,) = ran.result
    assert isinstance(outcome, ChainFailed) and outcome.reason == "timeout"
    assert ran.ops == ["get_item", "update_item"]


def test_corrupt_item_is_refused_before_any_write() -> None:
    damaged = item(ROOT)
    damaged["version"] = {"N": "1.5"}
    for op in (stamp(chains(), A), chains().fail(TAG)):
        ran = Ran()
        with pytest.raises(CorruptItem):
            drive(op, [("get_item", got(damaged))], ran)
        assert ran.ops == ["get_item"]


def test_fail_on_an_acked_chain_returns_it_unchanged() -> None:
    ran = drive(chains().fail(TAG), [("get_item", got(item(Stamp(bytes(16)), acked=True)))])
    assert ran.result.acked
    with pytest.raises(TagNotFound):
        drive(chains().fail(TAG), [("get_item", got(None))])


def test_delete_resent_and_found_gone_is_done() -> None:
    gone = client_error("ConditionalCheckFailedException", retries=1, unknown_before=1)
    live = ("get_item", got(LIVE))
    assert drive(chains().delete(TAG), [live, ("delete_item", gone)]).result is None
    # Refused once: the item it read is gone; read again, nothing there is TagNotFound,
    # and another generation (created over its tombstone since) is left alone: done.
    refused = ("delete_item", condition_failed())
    with pytest.raises(TagNotFound):
        drive(chains().delete(TAG), [live, refused, ("get_item", got(None))])
    other = ("get_item", got({**LIVE, I.CHAIN_ID: {"B": b"another!"}}))
    assert drive(chains().delete(TAG), [live, refused, other]).result is None
    with pytest.raises(TagNotFound):  # the same generation, expired since: absent
        drive(chains().delete(TAG), [live, refused, live])


def test_delete_removes_only_the_generation_it_read() -> None:
    """Its write is conditioned on the chain_id read, so a re-send (botocore's, after a
    lost answer) cannot remove a chain created under the tag in between."""
    ran = Ran()
    drive(chains().delete(TAG), [("get_item", got(LIVE)), ("delete_item", {})], ran)
    read, write = (call.params for call in ran.calls)
    assert read["ConsistentRead"] and I.CHAIN_ID in read["ExpressionAttributeNames"].values()
    condition = write["ConditionExpression"]
    names = {v: k for k, v in write["ExpressionAttributeNames"].items()}
    assert f"{names[I.CHAIN_ID]} = :c" in condition
    assert write["ExpressionAttributeValues"][":c"] == LIVE[I.CHAIN_ID]
    damaged = {k: v for k, v in LIVE.items() if k != I.CHAIN_ID}
    ran = Ran()
    drive(chains().delete(TAG), [("get_item", got(damaged)), ("delete_item", {})], ran)
    written = ran.calls[1].params["ConditionExpression"]
    assert f"attribute_not_exists({names[I.CHAIN_ID]})" in written


def test_delete_of_no_item_reads_and_writes_nothing_more() -> None:
    ran = Ran()
    with pytest.raises(TagNotFound):
        drive(chains().delete(TAG), [("get_item", got(None))], ran)
    assert ran.ops == ["get_item"]


# -- transactions cancelled per item ------------------------------------------------


def test_transaction_cancelled_per_item() -> None:
    core = chains()
    tags = ["a", "b", "c"]
    found = {"Responses": {"tbl": [item(ROOT, tag=tag, tokens=OLD[:2]) for tag in tags]}}
    reasons = [
        {"Code": "ConditionalCheckFailed", "Item": item(ROOT, tag="a", version=2)},
        {"Code": "TransactionConflict"},
        {"Code": "ValidationError", "Message": "too big"},
    ]
    cancelled = client_error("TransactionCanceledException", reasons=reasons)
    ran = drive(
        core.stamp_transact({tag: Entry(A) for tag in tags}),
        [
            ("batch_get_item", found),
            ("transact_write_items", cancelled),
            ("transact_write_items", ok),
        ],
    )
    assert ran.result["a"] == ran.result["b"] == xor(ROOT, A)
    rejected = ran.result["c"]
    assert isinstance(rejected, TransactionItemRejected) and rejected.__cause__ is cancelled
    assert len(ran.sleeps) == 1  # a and b met another writer: back off once
    retried = ran.calls[2].params["TransactItems"]
    assert [u["Update"]["Key"]["tagID"]["S"] for u in retried] == ["a", "b"]
    assert retried[0]["Update"]["ExpressionAttributeValues"][":old"]["N"] == "2"


# -- every row of the tables -------------------------------------------------------


def state(version: int = 1, tokens: tuple[bytes, ...] = (), chain: bytes = CHAIN) -> ChainState:
    return ChainState(TAG, ROOT, chain, version, tokens, 1.0, 1.0)


PROOF = b"\xaa" * 8
BEFORE = state(3, tuple(OLD[2:]))
#: A (before, now) pair for each kind of item read back.
SEEN: dict[D.Seen, tuple[ChainState | None, ChainState | None]] = {
    D.Seen.PROOF: (BEFORE, state(4, (*OLD[3:], PROOF))),
    D.Seen.ABSENT: (None, None),
    D.Seen.GONE: (BEFORE, None),
    D.Seen.UNCHANGED: (BEFORE, BEFORE),
    D.Seen.INTACT: (BEFORE, state(4, (*OLD[2:], b"\x10" * 8))),
    D.Seen.REACHES_BACK: (
        state(3, tuple(OLD[1:])),
        state(5, (*OLD[2:], b"\x10" * 8, b"\x11" * 8)),
    ),
    D.Seen.BEYOND: (BEFORE, state(9, tuple(bytes([n]) * 8 for n in range(20, 20 + WINDOW)))),
    D.Seen.OTHER: (BEFORE, state(1, (b"\x10" * 8,), OTHER_CHAIN)),
}


@pytest.mark.parametrize(("sent", "seen"), list(D.WRITE_VERDICT))
def test_every_write_verdict_row(sent: D.Sent, seen: D.Seen) -> None:
    before, now = SEEN[seen]
    assert D.seen_of(before, now, [PROOF]) is seen
    verdict = D.WRITE_VERDICT[(sent, seen)]
    core = chains()
    twice = sent is D.Sent.MAYBE_TWICE
    if verdict is D.Verdict.UNKNOWN:
        with pytest.raises(AmbiguousWrite):
            core._landed(before, now, [PROOF], TAG, twice)
    else:
        assert core._landed(before, now, [PROOF], TAG, twice) is (verdict is D.Verdict.LANDED)


def test_write_verdict_covers_every_situation() -> None:
    assert set(D.WRITE_VERDICT) == {(sent, seen) for sent in D.Sent for seen in D.Seen}


#: A fresh error of each (reply, sent) the tables name (None: the write went through).
REPLIES: dict[tuple[D.Reply, D.Sent], Callable[[], Any]] = {
    (D.Reply.OK, D.Sent.ONCE): lambda: None,
    (D.Reply.CONDITION_FAILED, D.Sent.ONCE): lambda: condition_failed(throttled=1),
    (D.Reply.CONDITION_FAILED, D.Sent.MAYBE_TWICE): lambda: condition_failed(resent=True),
    (D.Reply.TRANSACTION_CONFLICT, D.Sent.ONCE): lambda: client_error(
        "TransactionConflictException"
    ),
    (D.Reply.REFUSED, D.Sent.ONCE): lambda: client_error("ThrottlingException", retries=2),
    (D.Reply.UNKNOWN, D.Sent.MAYBE_TWICE): lambda: client_error("InternalServerError", status=500),
}
LIVE = item(ROOT, tokens=OLD[:2])


def test_transport_errors_are_classified_by_whether_a_send_connected() -> None:
    assert D.reply_of(lost_connection()) == (D.Reply.UNKNOWN, D.Sent.MAYBE_TWICE)
    assert D.reply_of(lost_connection(never_sent=True)) == (D.Reply.REFUSED, D.Sent.ONCE)


def _run_reply(op: str, error: Any, reread: bool, ran: Ran) -> Any:
    """Run ``op`` whose (first) write is answered with ``error``; reads find nothing moved.

    ``reread``: the script answers one read after the write (``drive`` fails if the
    operation sends it without it being scripted, or never sends a scripted one).
    """
    answer = ok() if error is None else error
    core = chains(retry=None)
    if op == "stamp":
        return drive(
            stamp(core, A),
            [("get_item", got(LIVE)), ("update_item", answer), ("get_item", got(LIVE))][
                : 2 + reread
            ],
            ran,
        ).result
    if op == "create":
        script: list[Any] = [("update_item", answer)]
        if reread:
            script.append(("get_item", got(None)))
        if D.reply_of(error)[0] in (D.Reply.CONDITION_FAILED, D.Reply.TRANSACTION_CONFLICT):
            script.append(("update_item", ok()))  # the tag is free now: sent again
        return drive(core.create(TAG, ROOT), script, ran).result
    if op == "fail":
        closed = item(ROOT, version=2, reason="failed")
        answer = {"Attributes": closed} if error is None else error
        script = [("get_item", got(LIVE)), ("update_item", answer)]
        if reread:
            script.append(("get_item", got(closed)))
        return drive(core.fail(TAG), script, ran).result
    if op == "delete":
        script = [("get_item", got(LIVE)), ("delete_item", answer)]
        if reread:
            script.append(("get_item", got(None)))
        return drive(core.delete(TAG), script, ran).result
    if op == "touch":
        soon = item(ROOT, tokens=OLD[:2], deadline=time.time() + 5)
        script = [("get_item", got(soon)), ("update_item", answer)]
        if reread:
            script.append(("get_item", got(soon)))
        return drive(core.touch(TAG, 60), script, ran).result
    if op == "timeout":
        answer = {"Attributes": TIMED_OUT} if error is None else error
        script = [("update_item", answer)]
        if reread:
            script.append(("get_item", got(TIMED_OUT)))  # closed: nothing more to do
        return drive(core._time_out(TAG, I.decode(OVERDUE, "tagID")), script, ran).result
    assert op == "transact"
    found = {"Responses": {"tbl": [item(ROOT, tag=tag, tokens=OLD[:2]) for tag in "ab"]}}
    script = [("batch_get_item", found), ("transact_write_items", answer)]
    if reread:
        script.append(("batch_get_item", found))
    return drive(core.stamp_transact({"a": Entry(A), "b": Entry(A)}), script, ran).result


@pytest.mark.parametrize("key", list(D.REPLY_STEP))
def test_every_reply_row(key: tuple[str, D.Reply, D.Sent]) -> None:
    """Each row's reply is what ``reply_of`` classifies, and the operation does its step.

    REFUSE with the reply's error: raised (or reported) with no read after the write;
    REREAD: a read follows the write; DONE: the result, with no read.
    """
    op, reply, sent = key
    error = REPLIES[(reply, sent)]()
    assert D.reply_of(error) == (reply, sent)
    _, step, kind = D.REPLY_STEP[key]
    write = {"stamp": 1, "create": 0, "fail": 1, "delete": 1, "transact": 1, "touch": 1}.get(op, 0)
    ran = Ran()
    try:
        result = _run_reply(op, error, step is D.Step.REREAD, ran)
    except AssertionError:
        raise
    except Exception as raised:
        result = raised
    outcomes = list(result.values()) if isinstance(result, dict) else [result]
    if isinstance(result, list):
        outcomes = result
    if step is D.Step.REFUSE:
        expected = type(error) if kind == D.REPLY_ERROR else kind
        assert isinstance(expected, type)
        assert all(isinstance(outcome, expected) for outcome in outcomes), outcomes
        assert len(ran.calls) == write + 1  # nothing read after the write
    elif step is D.Step.REREAD:
        assert ran.ops[write + 1] in ("get_item", "batch_get_item")  # scripted, and sent
    else:
        assert step is D.Step.DONE
        assert not any(isinstance(outcome, Exception) for outcome in outcomes), outcomes
        assert len(ran.calls) == write + 1


#: A live chain past its deadline (by any clock), and the tombstone its timeout leaves.
OVERDUE = item(ROOT, version=2, deadline=1)
TIMED_OUT = item(ROOT, version=3, reason="timeout")

STATUS_ITEMS = {
    D.Status.LIVE: item(ROOT, version=2),
    D.Status.OVERDUE: OVERDUE,
    D.Status.ABSENT: None,
    D.Status.ACKED: item(Stamp(bytes(16)), version=2, acked=True),
    D.Status.FAILED: item(ROOT, version=2, reason="timeout"),
}


def told_kind(op: str, kind: Any, raw: dict[str, Any] | None) -> Any:
    """The error class a row refuses with: ``TELL`` is ``told``'s, by the item the write
    found (a TIME_OUT row's: the tombstone of this call's own timeout write)."""
    if kind != D.TELL:
        return kind
    mine = raw is OVERDUE  # the TIME_OUT step's write lands (TIMED_OUT): this call's
    found = T.found_of(I.decode(TIMED_OUT if mine else raw, "tagID") if raw else None, mine)
    return T.TOLD[(op, found)]


@pytest.mark.parametrize("key", list(D.NOT_LANDED_STEP))
def test_every_not_landed_row(key: tuple[str, D.Status]) -> None:
    op, status = key
    step, kind = D.NOT_LANDED_STEP[key]
    raw = STATUS_ITEMS[status]
    kind = told_kind(op, kind, raw)
    # A lost race backs off: with retry=None a live chain is StaleLocalData at once.  A
    # closed chain found by the refusal is told at once, also with retry=None.
    core = chains(retry=None)
    timeout_write = ("update_item", {"Attributes": TIMED_OUT})  # the TIME_OUT step's write
    if op == "stamp":
        script: list[Any] = [("get_item", got(item(ROOT, tokens=OLD[:2])))]
        script.append(("update_item", condition_failed(raw)))
        if raw is None:
            script.append(("get_item", got(None)))  # no ALL_OLD: the core reads
        if step is D.Step.TIME_OUT:
            script.append(timeout_write)
        (outcome,) = drive(stamp(core, A), script).result
        expected = StaleLocalData if step is D.Step.RETRY else kind
        assert isinstance(expected, type) and isinstance(outcome, expected)
    elif op == "create":
        script = [("update_item", condition_failed(raw))]
        if raw is None:
            script.append(("get_item", got(None)))
        if step is D.Step.RESEND:
            assert drive(core.create(TAG, ROOT), [*script, ("update_item", ok)]).result == ROOT
        else:
            with pytest.raises(TagExists):
                drive(core.create(TAG, ROOT), script)
    elif op == "touch":
        if step is D.Step.RETRY:  # its write lost a race: with retry=None, StaleLocalData
            soon = item(ROOT, version=2, deadline=time.time() + 5)
            script = [("get_item", got(soon)), ("update_item", condition_failed(soon))]
            with pytest.raises(StaleLocalData):
                drive(core.touch(TAG, 60), script)
        else:
            script = [("get_item", got(raw))]
            if step is D.Step.TIME_OUT:
                script.append(timeout_write)
            assert isinstance(kind, type)
            with pytest.raises(kind):
                drive(core.touch(TAG, 60), script)
    elif op == "timeout":
        script = [("update_item", condition_failed(raw))]
        if raw is None:
            script.append(("get_item", got(None)))
        result = drive(
            core._time_out(TAG, I.decode(OVERDUE, "tagID")),
            [*script, timeout_write][: len(script) + (step is D.Step.RESEND)],
        ).result
        assert (result is not None) is (step is D.Step.RESEND)  # a tombstone: this write's
    else:
        assert op == "fail"
        script = [("get_item", got(raw))]
        if step is D.Step.TIME_OUT:
            script.append(timeout_write)
        if step is D.Step.RESEND:  # a live chain: the write goes out
            closed = item(ROOT, version=3, reason="failed")
            script.append(("update_item", {"Attributes": closed}))
            assert drive(core.fail(TAG), script).result.failed
        elif step is D.Step.DONE:
            assert drive(core.fail(TAG), script).result.version == 2
        elif step is D.Step.TIME_OUT:
            with pytest.raises(ChainTimedOut):
                drive(core.fail(TAG), script)
        else:
            assert isinstance(kind, type)
            with pytest.raises(kind):
                drive(core.fail(TAG), script)


@pytest.mark.parametrize(
    "code", [*C.CANCELLATION, "ValidationError", "ItemCollectionSizeLimitExceeded"]
)
def test_every_cancellation_row(code: str) -> None:
    step, kind = C.CANCELLATION.get(code, C.OTHER_CANCELLATION)
    reason: dict[str, Any] = {"Code": code}
    if step is D.Step.REREAD:
        reason["Item"] = item(ROOT, tag="a", version=2)
    cancelled = client_error("TransactionCanceledException", reasons=[reason, {"Code": "None"}])
    ran = drive(chains()._after_cancel(["a", "b"], cancelled), [])
    fresh, contended, errors = ran.result
    assert ("a" in contended) is (step in (D.Step.RETRY, D.Step.REREAD))
    assert ("a" in fresh) is (step is D.Step.REREAD)
    if step is D.Step.REFUSE:
        assert kind is TransactionItemRejected
        assert isinstance(errors["a"], TransactionItemRejected)
    else:
        assert "a" not in errors
    assert "b" not in contended and "b" not in errors  # "None": sent again as it is


#: One reason of each kind ``cancelled_of`` tells apart (None: the reasons do not fit).
CANCELLED_REASONS: dict[C.Cancelled, dict[str, Any] | None] = {
    C.Cancelled.FINE: {"Code": "None"},
    C.Cancelled.CONDITION_ITEM: {
        "Code": "ConditionalCheckFailed",
        "Item": item(ROOT, tag="a", version=2),
    },
    C.Cancelled.CONDITION_BARE: {"Code": "ConditionalCheckFailed"},
    C.Cancelled.CONTENDED: {"Code": "TransactionConflict"},
    C.Cancelled.REJECTED: {"Code": "ValidationError", "Message": "too big"},
    C.Cancelled.UNEXPLAINED: None,
}


def test_cancelled_item_covers_every_kind() -> None:
    assert set(C.CANCELLED_ITEM) == set(C.Cancelled) == set(CANCELLED_REASONS)


@pytest.mark.parametrize("kind", list(C.CANCELLED_ITEM))
def test_every_cancelled_item_row(kind: C.Cancelled) -> None:
    """Item "a" of a two-item transaction is cancelled for ``kind``; "b" was fine."""
    reason = CANCELLED_REASONS[kind]
    assert C.cancelled_of(reason) is kind
    _, raced, source, refusal = C.CANCELLED_ITEM[kind]
    # No reason for "a" means the reasons do not fit the items: AWS gave none at all.
    reasons = None if reason is None else [reason, {"Code": "None"}]
    cancelled = client_error("TransactionCanceledException", reasons=reasons)
    read = ["a", "b"] if reason is None else ["a"] if source is C.Source.READ else []
    script: list[Any] = []
    if read:
        found = {"Responses": {"tbl": [item(ROOT, tag=tag, version=3) for tag in read]}}
        script.append(("batch_get_item", found))
    ran = drive(chains()._after_cancel(["a", "b"], cancelled), script)
    fresh, contended, errors = ran.result
    assert ("a" in contended) is raced
    if source is C.Source.NONE:
        assert "a" not in fresh
    else:  # the Item given (version 2) or the one read (version 3)
        assert fresh["a"].version == (2 if source is C.Source.GIVEN else 3)
    if refusal is None:
        assert "a" not in errors
    else:
        assert isinstance(errors["a"], refusal) and errors["a"].__cause__ is cancelled
    assert "b" not in errors and ("b" in contended) is (reason is None)


FINE_TAGS = ["f", "g"]  # items that were fine: another item cancelled the transaction


def _cancellation(tags: list[str], reasons: dict[str, dict[str, Any]]) -> Any:
    """A cancellation of ``tags``, each for its reason in ``reasons`` (else fine)."""
    codes = [reasons.get(tag, {"Code": "None"}) for tag in tags]
    return client_error("TransactionCanceledException", reasons=codes)


def _conflicts(call: Any) -> Any:
    """Every item of the transaction ``call`` met another writer."""
    tags = [u["Update"]["Key"]["tagID"]["S"] for u in call.params["TransactItems"]]
    return _cancellation(tags, {tag: {"Code": "TransactionConflict"} for tag in tags})


@pytest.mark.parametrize("key", list(C.AFTER_CANCEL))
def test_every_after_cancel_row(key: tuple[str, bool, bool, bool]) -> None:
    """The first transaction is cancelled in the row's situation, the second for conflicts.

    With two attempts allowed, the step shows: RETRY backs off once, then the second
    cancellation spends the policy (StaleLocalData); RESEND goes out at once, and the
    second cancellation spends it too; REPLAN goes out at once without counting, so
    the second cancellation may still back off, and the third transaction lands.
    """
    op, raced, refreshed, rejected = key
    step = C.AFTER_CANCEL[key]
    core = chains(retry=RetryPolicy(max_attempts=2))
    tags = [*FINE_TAGS, *(["x"] * raced), *(["r"] * refreshed), *(["j"] * rejected)]
    reasons: dict[str, dict[str, Any]] = {
        "x": {"Code": "TransactionConflict"},
        "r": {"Code": "ConditionalCheckFailed", "Item": item(ROOT, tag="r", version=2)},
        "j": {"Code": "ValidationError", "Message": "too big"},
    }
    then: list[Any] = [("transact_write_items", _conflicts)]
    if step is D.Step.REPLAN:
        then.append(("transact_write_items", ok))
    if op == "stamp":
        if refreshed:  # planned on a remembered state that has moved since
            core.remember(remembered("r"), "r")
        unread = [tag for tag in tags if tag != "r"]
        found = {"Responses": {"tbl": [item(ROOT, tag=tag, tokens=OLD[:2]) for tag in unread]}}
        script: list[Any] = [
            ("batch_get_item", found),
            ("transact_write_items", _cancellation(tags, reasons)),
            *then,
        ]
        result = drive(core.stamp_transact({tag: Entry(A) for tag in tags}), script)
    else:
        script = [("transact_write_items", _cancellation(tags, reasons)), *then]
        result = drive(core.create_transact(dict.fromkeys(tags, ROOT)), script)
    outcomes = result.result
    if rejected:
        assert isinstance(outcomes.pop("j"), TransactionItemRejected)
    if step is D.Step.REPLAN:
        assert len(result.sleeps) == 1
        assert not any(isinstance(o, Exception) for o in outcomes.values()), outcomes
    else:
        assert len(result.sleeps) == (1 if step is D.Step.RETRY else 0)
        assert all(isinstance(o, StaleLocalData) for o in outcomes.values()), outcomes


def remembered(tag: str) -> ChainState:
    """A live chain's state as a client remembers it (version 1)."""
    return ChainState(tag, ROOT, CHAIN, 1, tuple(OLD[:2]), 1.0, 1.0)


@pytest.mark.parametrize("key", list(D.CREATE_SETTLED))
def test_every_create_settled_row(key: tuple[D.Reply, bool]) -> None:
    """A create's reply, then the item read back with or without its write token."""
    reply, proof = key
    verdict, step, kind = D.CREATE_SETTLED[key]
    other = item(ROOT, chain_id=OTHER_CHAIN, tokens=OLD[:1])  # a live chain, not ours

    def answer(call: Any) -> Any:
        raw = written(call) if proof else other
        if reply is D.Reply.CONDITION_FAILED:
            return condition_failed(raw, resent=True)
        if reply is D.Reply.TRANSACTION_CONFLICT:
            return client_error("TransactionConflictException")
        return client_error("InternalServerError", status=500)

    def read_back(call: Any) -> Any:
        return got(written(ran.calls[0]) if proof else other)

    ran = Ran()
    script: list[Any] = [("update_item", answer)]
    if reply in (D.Reply.UNKNOWN, D.Reply.TRANSACTION_CONFLICT):
        script.append(("get_item", read_back))
    if verdict is D.Verdict.LANDED:
        assert step is D.Step.DONE
        assert drive(chains().create(TAG, ROOT), script, ran).result == ROOT
        return
    expected = TagExists if step is D.Step.BY_STATUS else ClientError  # the reply's own
    assert kind == (D.REPLY_ERROR if step is D.Step.REFUSE else None)
    with pytest.raises(expected):
        drive(chains().create(TAG, ROOT), script, ran)


@pytest.mark.parametrize("key", list(D.STAMP_AGAIN))
def test_every_stamp_again_row(key: tuple[bool, bool, bool]) -> None:
    """A stamp's first write is refused on a live chain: planned on the cache or on its own
    read, refused by its condition with the item (ALL_OLD) or by a transaction's conflict,
    the item read back live or past its deadline (the deadline passed while it travelled).

    REPLAN writes again at once on the item returned; TIME_OUT fails the chain at once
    (one timeout write, ``ChainTimedOut``); RETRY backs off first.  With ``retry=None`` a
    RETRY is StaleLocalData at once, with no second write.
    """
    remembered, with_item, overdue = key
    step = D.STAMP_AGAIN[key]
    core = chains(retry=None)
    # another writer's stamp landed; overdue: the deadline (epoch 1000) is long past
    moved = item(xor(ROOT, A), version=2, tokens=OLD[:2], deadline=1000 if overdue else None)
    script: list[Any] = []
    if remembered:
        core.remember(ChainState(TAG, ROOT, CHAIN, 1, tuple(OLD[:1]), 1.0, 1.0), TAG)
    else:
        script.append(("get_item", got(item(ROOT, tokens=OLD[:1]))))
    if with_item:
        script.append(("update_item", condition_failed(moved)))
    else:
        script.append(("update_item", client_error("TransactionConflictException")))
        script.append(("get_item", got(moved)))
    if step is D.Step.REPLAN:
        script.append(("update_item", ok))
    if step is D.Step.TIME_OUT:
        tombstone = item(xor(ROOT, A), version=3, tokens=OLD[:3], reason="timeout")
        script.append(("update_item", {"Attributes": tombstone}))
    ran = drive(stamp(core, A), script)
    (outcome,) = ran.result
    assert ran.sleeps == []
    if step is not D.Step.RETRY:
        assert core.stats.conflicts == 0  # not a lost race
    if step is D.Step.REPLAN:
        assert outcome == ROOT  # (ROOT ^ A) ^ A: planned on the item the refusal returned
        assert planned(ran.calls[-1]) == (CHAIN, "2")
    elif step is D.Step.TIME_OUT:
        assert isinstance(outcome, ChainTimedOut) and outcome.deadline == 1000
        assert planned(ran.calls[-1]) == (CHAIN, "2")  # the timeout write, on the item seen
    else:
        assert step is D.Step.RETRY and isinstance(outcome, StaleLocalData)


def test_the_peer_checks_each_request_against_the_dynamodb_model() -> None:
    # The clients send without botocore's validation (``aws.botocore_config``); the
    # scripted peer is where a request the core builds wrong is caught.
    check_request(Call("get_item", {"TableName": "chains", "Key": {"tagID": {"S": "t"}}}))
    with pytest.raises(ParamValidationError, match="Key"):
        check_request(Call("get_item", {"TableName": "chains", "Key": {"tagID": {"X": "t"}}}))
    with pytest.raises(ParamValidationError):
        check_request(Call("update_item", {"TableName": "chains"}))
