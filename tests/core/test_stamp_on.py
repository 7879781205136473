"""``stamp_on``: a stamp written on the caller's state or not at all.

Against the scripted peer (every Call checked, no server): one write and no read on
the given state; a refusal is ``ChainMoved`` with the chain the refusal returned,
never a read, a back-off or a second write; every row of ``ON_STATE_NOT_LANDED``.
Then on DynamoDB Local with both clients: a race of two writers on one state.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from xor_ack_dynamodb import xor
from xor_ack_dynamodb.chain import ChainState, check_token
from xor_ack_dynamodb.dynamodb import item as I
from xor_ack_dynamodb.dynamodb._core import landing as D
from xor_ack_dynamodb.dynamodb._core import told as T
from xor_ack_dynamodb.dynamodb._core.many import Chains
from xor_ack_dynamodb.errors import (
    ChainFailed,
    ChainMoved,
    ChainTimedOut,
    InvalidArgument,
    InvalidStamp,
    InvalidState,
    InvalidToken,
    TagNotFound,
)
from xor_ack_dynamodb.retry import RetryPolicy
from xor_ack_dynamodb.stamps import Stamp, new_stamp
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client
from .peer import CHAIN, TAG, Ran, client_error, condition_failed, drive, got, item, written

WINDOW = 4
ROOT = Stamp(b"\x0f" * 16)
A = Stamp(b"\x05" * 16)
OLD = [bytes([n]) * 8 for n in range(1, WINDOW + 1)]
TOKEN = b"message-1"


def chains() -> Chains:
    # A generous retry policy: stamp_on must not use it (a refusal is never retried).
    return Chains(
        table="tbl", retry=RetryPolicy(max_attempts=25), token_window=WINDOW, rng=random.Random(7)
    )


def on(core: Chains, state: Any, stamp: bytes, token: bytes | None = None) -> Any:
    """``stamp_on`` of one stamp, as the clients' ``stamp_on`` calls it: its one outcome."""
    (outcome,) = yield from core.stamp_on(state, [(stamp, token)])
    return outcome


def state_of(raw: dict[str, Any]) -> ChainState:
    return I.decode(raw, "tagID")


GIVEN = item(ROOT, version=3, tokens=OLD[:2])


def condition(call: Any) -> tuple[bytes, str]:
    values = call.params["ExpressionAttributeValues"]
    return values[":c"]["B"], values[":old"]["N"]


def test_lands_with_one_write_on_the_given_state_and_no_read() -> None:
    core = chains()
    ran = drive(on(core, state_of(GIVEN), A, TOKEN), [("update_item", written)])
    assert ran.result == xor(ROOT, A)
    assert ran.ops == ["update_item"]
    assert condition(ran.calls[0]) == (CHAIN, "3")
    tokens = ran.calls[0].params["ExpressionAttributeValues"][":t"]["B"]
    assert tokens.endswith(check_token(TOKEN) or b"") and len(tokens) == 3 * 8  # one token added


def test_a_lost_race_is_chain_moved_with_the_refusals_item_not_retried() -> None:
    core = chains()
    moved = item(xor(ROOT, A), version=4, tokens=OLD[:3])
    ran = drive(on(core, state_of(GIVEN), A, TOKEN), [("update_item", condition_failed(moved))])
    assert isinstance(ran.result, ChainMoved)
    assert ran.result.current == state_of(moved) and ran.result.expected == state_of(GIVEN)
    assert ran.result.code == "ChainMoved" and ran.result.tag == TAG
    assert ran.ops == ["update_item"] and ran.sleeps == []  # no read, no back-off, no re-plan
    assert core.stats.conflicts == 1 and core.stats.retries == 0


def test_a_refusal_whose_item_holds_the_token_is_chain_moved_not_applied() -> None:
    # Another copy of the same work landed first: the caller sees it in .current.
    other_copy = item(xor(ROOT, A), version=4, tokens=[*OLD[:2], check_token(TOKEN) or b""])
    ran = drive(
        on(chains(), state_of(GIVEN), A, TOKEN),
        [("update_item", condition_failed(other_copy))],
    )
    assert isinstance(ran.result, ChainMoved)
    assert ran.result.current is not None
    assert check_token(TOKEN) in ran.result.current.tokens


def test_a_token_the_given_state_holds_is_reported_applied_without_a_write() -> None:
    holding = item(ROOT, version=3, tokens=[OLD[0], check_token(TOKEN) or b""])
    ran = drive(on(chains(), state_of(holding), A, TOKEN), [])
    assert ran.result == ROOT and ran.ops == []


def test_holds_refuses_a_missing_token_instead_of_answering() -> None:
    # A stamp sent without a token leaves no trace to find: no answer is the right one.
    state = state_of(item(ROOT, version=3, tokens=[check_token(TOKEN) or b""]))
    assert state.holds(TOKEN) and not state.holds(b"message-2")
    with pytest.raises(InvalidToken, match="token="):
        state.holds(None)  # type: ignore[arg-type]


def test_a_transaction_holding_the_item_is_chain_moved_after_one_read() -> None:
    moved = item(xor(ROOT, A), version=4, tokens=OLD[:3])
    ran = drive(
        on(chains(), state_of(GIVEN), A),
        [
            ("update_item", client_error("TransactionConflictException")),
            ("get_item", got(moved)),
        ],
    )
    assert isinstance(ran.result, ChainMoved) and ran.result.current == state_of(moved)
    assert ran.sleeps == []


def test_a_lost_response_that_landed_is_recognised() -> None:
    def resent(call: Any) -> Exception:  # botocore re-sent it; the first send had landed
        return condition_failed(written(call), resent=True)

    core = chains()
    ran = drive(on(core, state_of(GIVEN), A, TOKEN), [("update_item", resent)])
    assert ran.result == xor(ROOT, A)
    assert core.stats.resent_writes_recognised == 1


@pytest.mark.parametrize(
    ("closed", "error"),
    [
        (item(Stamp(bytes(16)), version=3, acked=True), TagNotFound),
        (item(ROOT, version=3, reason="dead-letter"), ChainFailed),
        (item(ROOT, version=3, expires_at=1), TagNotFound),  # expired: no chain
    ],
)
def test_a_closed_given_state_is_refused_without_a_write(
    closed: dict[str, Any], error: type[Exception]
) -> None:
    ran = drive(on(chains(), state_of(closed), A), [])
    assert isinstance(ran.result, error) and ran.ops == []


def test_an_overdue_given_state_is_failed_once_and_refused() -> None:
    overdue = item(ROOT, version=3, tokens=OLD[:2], deadline=1)
    timed_out = item(ROOT, version=4, reason="timeout")
    ran = drive(
        on(chains(), state_of(overdue), A),
        [("update_item", {"Attributes": timed_out})],  # the timeout write, not the stamp
    )
    assert isinstance(ran.result, ChainTimedOut)


def test_something_else_than_a_state_is_refused_before_anything_is_sent() -> None:
    ran = Ran()
    with pytest.raises(InvalidState):
        drive(on(chains(), "t", A), [], ran)
    assert ran.calls == []


def test_several_stamps_on_a_state_go_in_one_write_with_each_token() -> None:
    b = Stamp(b"\x30" * 16)
    ran = drive(
        chains().stamp_on(state_of(GIVEN), [(A, b"m-1"), (b, b"m-2")]),
        [("update_item", written)],
    )
    assert ran.result == [xor(ROOT, A), xor(ROOT, A, b)]  # each stamp's state, in order
    assert ran.ops == ["update_item"]
    tokens = ran.calls[0].params["ExpressionAttributeValues"][":t"]["B"]
    assert tokens == b"".join([*OLD[:2], check_token(b"m-1") or b"", check_token(b"m-2") or b""])


def test_several_stamps_refused_together_are_chain_moved_each() -> None:
    moved = item(xor(ROOT, A), version=4, tokens=OLD[:3])
    ran = drive(
        chains().stamp_on(state_of(GIVEN), [(A, b"m-1"), (A, b"m-2")]),
        [("update_item", condition_failed(moved))],
    )
    assert all(isinstance(outcome, ChainMoved) for outcome in ran.result)
    assert ran.ops == ["update_item"] and ran.sleeps == []


@pytest.mark.parametrize(
    ("stamps", "error"),
    [
        ([], InvalidStamp),
        ([(A, b"m-1"), (A, b"m-2"), (A, b"m-3")], InvalidStamp),  # > half the window (2)
        ([(A, b"m-1"), (A, b"m-1")], InvalidToken),
    ],
)
def test_stamps_that_would_not_fit_one_write_are_refused_before_anything_is_sent(
    stamps: list[Any], error: type[Exception]
) -> None:
    ran = Ran()
    with pytest.raises(error):
        drive(chains().stamp_on(state_of(GIVEN), stamps), [], ran)
    assert ran.calls == []


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda ack, state: ack.stamp_on_many(state, [A, A]), InvalidStamp),
        (lambda ack, state: ack.stamp_on_many(state, [(A,)]), InvalidStamp),
        (lambda ack, state: ack.stamp_on_many(state, None), InvalidStamp),
        (lambda ack, state: ack.stamp_on_each([(state, A)]), InvalidArgument),
        (lambda ack, state: ack.stamp_on_each([state]), InvalidArgument),
        (lambda ack, state: ack.stamp_on_each(None), InvalidArgument),
    ],
    ids=[
        "stamp_on_many of stamps",
        "stamp_on_many of 1-tuples",
        "stamp_on_many of None",
        "stamp_on_each without tokens",
        "stamp_on_each of states",
        "stamp_on_each of None",
    ],
)
async def test_writes_of_another_shape_are_refused_saying_the_shape_before_anything_is_sent(
    ack: Any, call: Any, error: type[Exception]
) -> None:
    with pytest.raises(error, match=r"\(stamp, token\)|\(state, stamp, token\)"):
        await call(ack, state_of(GIVEN))
    assert ack.stats.total_requests == 0


async def test_a_chain_twice_in_stamp_on_each_is_named_with_what_to_call_instead(
    ack: Any,
) -> None:
    state = state_of(GIVEN)
    with pytest.raises(InvalidState, match=rf'"{TAG}" .*stamp_on_many\(state, \[\(stamp, token\)'):
        await ack.stamp_on_each([(state, A, b"m-1"), (state, A, b"m-2")])
    assert ack.stats.total_requests == 0


#: The chain a refusal returns, per status (OVERDUE: live, past its deadline).
STATUS_ITEMS: dict[D.Status, dict[str, Any] | None] = {
    D.Status.LIVE: item(xor(ROOT, A), version=4, tokens=OLD[:3]),
    D.Status.OVERDUE: item(ROOT, version=3, tokens=OLD[:2], deadline=1),
    D.Status.ABSENT: None,
    D.Status.ACKED: item(Stamp(bytes(16)), version=4, acked=True),
    D.Status.FAILED: item(ROOT, version=4, reason="timeout"),
}


@pytest.mark.parametrize("status", list(D.ON_STATE_NOT_LANDED))
def test_every_on_state_not_landed_row(status: D.Status) -> None:
    step, kind = D.ON_STATE_NOT_LANDED[status]
    raw = STATUS_ITEMS[status]
    script: list[Any] = [("update_item", condition_failed(raw))]
    if raw is None:
        script.append(("get_item", got(None)))  # no ALL_OLD: the core reads
    if step is D.Step.TIME_OUT:
        script.append(("update_item", {"Attributes": item(ROOT, version=4, reason="timeout")}))
    ran = drive(on(chains(), state_of(GIVEN), A), script)
    if kind == D.TELL:  # a failed chain: told by the item found (this call's tombstone)
        mine = step is D.Step.TIME_OUT
        kind = T.TOLD[
            (
                "stamp_on",
                T.found_of(I.decode(script[-1][1]["Attributes"] if mine else raw, "tagID"), mine),
            )
        ]  # type: ignore[index, arg-type]
        assert isinstance(ran.result, ChainFailed) and ran.result.failed_by_this_call is mine
    assert isinstance(kind, type) and isinstance(ran.result, kind)
    if step is D.Step.MOVED:
        assert isinstance(ran.result, ChainMoved)
        assert ran.result.current == (None if raw is None else state_of(raw))
    assert ran.sleeps == []


def test_the_table_covers_every_status() -> None:
    assert set(D.ON_STATE_NOT_LANDED) == set(D.Status)


# -- on DynamoDB Local, both clients -------------------------------------------------


@pytest.mark.ddblocal
@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_two_writers_on_one_state_one_lands_the_other_sees_it(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    async with open_client(kind, ddb_local_endpoint, ddb_table.name) as ack:
        root, a, b = new_stamp(), new_stamp(), new_stamp()
        await ack.create("on-state", xor(root, a, b))
        read = await ack.get("on-state")
        assert read is not None
        results = await asyncio.gather(
            ack.stamp_on(read, a, token="a"),
            ack.stamp_on(read, b, token="b"),
            return_exceptions=True,
        )
        landed = [r for r in results if not isinstance(r, BaseException)]
        moved = [r for r in results if isinstance(r, ChainMoved)]
        assert len(landed) == 1 and len(moved) == 1, results
        current = moved[0].current
        assert current is not None and current.version == read.version + 1
        assert current.stamp == landed[0]
        # The loser decides again on .current (no read) and lands there.
        loser = b if landed[0] == xor(root, b) else a
        final = await ack.stamp_on(current, loser, token="b" if loser == b else "a")
        assert final == root
        again = await ack.get("on-state")
        assert again is not None and again.version == read.version + 2
        assert ack.stats.requests["UpdateItem"] == 4  # create, two on the state, one more


@pytest.mark.ddblocal
@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_several_stamps_land_in_one_write_and_each_token_is_held(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    async with open_client(kind, ddb_local_endpoint, ddb_table.name) as ack:
        root, a, b = new_stamp(), new_stamp(), new_stamp()
        await ack.create("on-state-many", xor(root, a, b))
        read = await ack.get("on-state-many")
        assert read is not None
        states = await ack.stamp_on_many(read, [(xor(root, a), "a"), (b, "b")])
        assert states[-1].acked and not states[0].acked
        after = await ack.get("on-state-many")
        assert after is not None and after.acked and after.version == read.version + 1
        assert after.holds("a") and after.holds("b") and not after.holds("c")
        with pytest.raises(ChainMoved):  # the same state again: it moved
            await ack.stamp_on_many(read, [(a, "c")])
