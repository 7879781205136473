"""``told.TOLD`` walked row by row: what the write found -> what the caller is told.

Each row runs against the scripted peer three ways: a **fresh** client (its own read
finds the chain), a client that **cached** the chain live (its write is refused and
the refusal returns the chain), and one that cached it live and, by its clock,
**overdue** (it sends the timeout write, refused by the chain a sweep already
failed): the issue's case.  The type must not depend on which.  Then every row again
on DynamoDB Local, both clients, fresh and cached, and a race of late stamps, fails,
touches and sweepers from clients with and without cached state.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import new_stamp, xor
from xor_ack_dynamodb.chain import ChainState
from xor_ack_dynamodb.dynamodb import item as I
from xor_ack_dynamodb.dynamodb._core import landing as D
from xor_ack_dynamodb.dynamodb._core import told as T
from xor_ack_dynamodb.dynamodb._core.effects import Entry
from xor_ack_dynamodb.dynamodb._core.many import Chains
from xor_ack_dynamodb.errors import (
    ChainFailed,
    ChainMoved,
    StampManyFailed,
    TagNotFound,
    XorAckError,
)
from xor_ack_dynamodb.stamps import Stamp
from xor_ack_dynamodb.table import TableSpec, create_table

from .facade import open_client
from .peer import TAG, condition_failed, drive, got, item

ROOT = Stamp(b"\x0f" * 16)
A = Stamp(b"\x05" * 16)
F = T.Found
LIVE = item(ROOT, version=2, deadline=1000)  # what a client saw, and may have cached
FOUND: dict[T.Found, dict[str, Any] | None] = {
    F.GONE: None,
    F.ACKED: item(Stamp(bytes(16)), version=3, acked=True),
    F.FAILED: item(ROOT, version=3, reason="operator"),
    F.TIMED_OUT: item(ROOT, version=3, reason="timeout"),
    F.TIMED_OUT_HERE: LIVE,  # found overdue: this call's own timeout write fails it
    F.LIVE: LIVE,
}
TOMBSTONE = item(ROOT, version=3, reason="timeout")  # this call's timeout write's ALL_NEW
WAYS = ("fresh", "cached", "cached-overdue")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def expected(op: str, found: T.Found, way: str) -> Any:
    """The error class (None: no error) the row gives ``op``, as the client calls it."""
    if op == "stamp_on" and way != "fresh" and found in (F.GONE, F.ACKED):
        return ChainMoved  # a refusal of the caller's state: ON_STATE_NOT_LANDED's row
    told = T.TOLD[("stamp" if op == "stamp_many" else op, found)]
    return None if told == T.RETURNED else told


def run(op: str, found: T.Found, way: str) -> Any:
    """Run ``op`` against the peer, the chain found as ``found``; its outcome or error."""
    overdue = found is F.TIMED_OUT_HERE or way == "cached-overdue"
    core = Chains(
        table="tbl", token_window=4, rng=random.Random(7), clock=Clock(1100 if overdue else 900)
    )
    raw = FOUND[found]
    live = I.decode(LIVE, "tagID")
    script: list[Any] = []
    if way != "fresh" and op not in ("fail", "wait"):  # fail and wait always read first
        core.remember(live, TAG)
    elif op == "stamp_many":
        script.append(("batch_get_item", {"Responses": {"tbl": [raw] if raw else []}}))
    elif op != "stamp_on":
        script.append(("get_item", got(raw)))
    if found is F.TIMED_OUT_HERE:
        if op != "wait":
            script.append(("update_item", {"Attributes": TOMBSTONE}))
    elif way != "fresh" and op not in ("fail", "wait"):
        # The cached (or given) state's write -- a stamp, a touch, or the timeout write of a
        # chain overdue by the cache -- is refused; the refusal returns the chain found.
        script.append(("update_item", condition_failed(raw)))
        if raw is None:
            script.append(("get_item", got(None)))  # no ALL_OLD: the core reads
    gone = item(ROOT, version=2, expires_at=1)  # expired: a state of no chain
    given = live if way != "fresh" else I.decode(raw or gone, "tagID")
    ops = {
        "stamp": lambda: core.stamp_batch(TAG, [Entry(A)]),
        "stamp_many": lambda: core.stamp_transact({TAG: Entry(A)}),
        "stamp_on": lambda: core.stamp_on(given, [(A, b"m-1")]),
        "touch": lambda: core.touch(TAG, 600),  # later than the deadline: a write
        "fail": lambda: core.fail(TAG, "operator gave up"),
        "wait": lambda: core.wait(TAG, 0.0),
    }
    try:
        result = drive(ops[op](), script).result
    except XorAckError as exc:
        return exc
    if isinstance(result, dict):
        return result[TAG]
    return result[0] if isinstance(result, list) else result


ROWS = [
    (op, found, way)
    for op in ("stamp", "stamp_many", "stamp_on", "touch", "fail", "wait")
    for found in T.Found
    if (("stamp" if op == "stamp_many" else op), found) in T.TOLD
    for way in WAYS
    if not (op == "wait" and way != "fresh")  # a wait only reads: there is no cache
]


@pytest.mark.parametrize(("op", "found", "way"), ROWS)
def test_every_row_the_same_whatever_was_cached(op: str, found: T.Found, way: str) -> None:
    outcome = run(op, found, way)
    want = expected(op, found, way)
    if want is None:
        assert not isinstance(outcome, Exception), outcome
        return
    assert type(outcome) is want, (outcome, want)
    if isinstance(outcome, ChainFailed):
        assert outcome.failed_by_this_call is (found in T.BY_THIS_CALL)
        assert outcome.state is not None and outcome.state.failed
        assert outcome.reason == ("operator" if found is F.FAILED else "timeout")
        if op == "fail":
            assert outcome.requested_reason == "operator gave up"
            assert "operator gave up" in str(outcome)


def test_the_table_covers_every_operation_and_closed_chain() -> None:
    for op in T.OPERATIONS:
        closed = {F.GONE, F.ACKED, F.FAILED, F.TIMED_OUT}
        assert closed <= {found for o, found in T.TOLD if o == op}, op
    assert {kind for (op, found), kind in T.TOLD.items() if found is F.TIMED_OUT_HERE} == {
        T.TOLD[("stamp", F.TIMED_OUT)]
    }
    # every refusal of the decision tables for a closed chain is told by this table
    for (op, status), (step, kind) in D.NOT_LANDED_STEP.items():
        if op in T.OPERATIONS and status in D.CLOSED and step is D.Step.REFUSE:
            assert kind == D.TELL, (op, status)


def test_a_re_sent_fail_that_landed_is_this_calls() -> None:
    """botocore re-sent the fail after a lost response: the item holds its reason and its
    failed_at (this call's clock), so it is recognised, not told "already failed"."""
    core = Chains(table="tbl", token_window=4, rng=random.Random(7), clock=Clock(900.0))

    def landed(call: Any) -> Exception:
        values = call.params["ExpressionAttributeValues"]
        tombstone = item(ROOT, version=3, reason=values[":r"]["S"])
        tombstone["failed_at"] = values[":now"]
        return condition_failed(tombstone, resent=True)

    ran = drive(core.fail(TAG, "mine"), [("get_item", got(item(ROOT))), ("update_item", landed)])
    assert ran.result.failed and core.stats.resent_writes_recognised == 1
    with pytest.raises(ChainFailed):  # the same, sent once: another writer's fail
        drive(
            core.fail(TAG, "mine"),
            [("get_item", got(item(ROOT))), ("update_item", condition_failed(FOUND[F.FAILED]))],
        )


# -- on DynamoDB Local, both clients ---------------------------------------------------

T0 = 1_800_000_000.0


@pytest.fixture(scope="module")
def shared_table(ddb_local_endpoint: str) -> Iterator[tuple[str, str]]:
    """One table for the module (each test uses its own tags): tables cost time to make."""
    spec = TableSpec(name=f"told-{uuid.uuid4().hex[:10]}")
    raw = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    create_table(raw, spec)
    yield ddb_local_endpoint, spec.name
    raw.delete_table(TableName=spec.name)


@pytest.fixture(scope="module")
async def clients(shared_table: tuple[str, str]) -> AsyncIterator[Any]:
    """A factory of clients on the module's table, each on its own settable clock; made
    once per (kind, name) for the module (every test uses tags of its own)."""
    endpoint, table = shared_table
    made: dict[tuple[str, str], Any] = {}
    async with AsyncExitStack() as stack:

        async def make(kind: str, now: float, name: str = "") -> Any:
            key = (kind, name or uuid.uuid4().hex)
            if key not in made:
                made[key] = await stack.enter_async_context(
                    open_client(kind, endpoint, table, clock=Clock(now))
                )
            _set_clock(made[key], now)
            return made[key]

        yield make


async def close(other: Any, late: Any, tag: str, root: bytes, found: T.Found) -> None:
    """Make the live chain ``tag`` ``found``, behind the back of the client under test."""
    if found is F.GONE:
        await other.delete(tag)
    elif found is F.ACKED:
        await other.stamp(tag, root)
    elif found is F.FAILED:
        await other.fail(tag, "operator")
    elif found is F.TIMED_OUT:  # a late write of another client fails it, as a sweep would
        with pytest.raises(ChainFailed):
            await late.stamp(tag, root)


async def call(op: str, me: Any, tag: str, given: ChainState | None) -> Any:
    try:
        if op == "stamp":
            return await me.stamp(tag, new_stamp())
        if op == "stamp_on":
            return await me.stamp_on(given or await me.get(tag), new_stamp(), token="m-1")
        if op == "touch":
            return await me.touch(tag, timeout=60)
        if op == "fail":
            return await me.fail(tag, "operator gave up")
        if op == "wait":
            return await me.wait(tag, timeout=0.05, poll_interval=0.02)
        try:
            stamps = {tag: new_stamp(), f"{tag}-other": new_stamp()}
            await me.stamp_many(stamps, transact=op == "stamp_many_transact")
        except StampManyFailed as failed:
            assert set(failed.errors) == {tag}, failed.errors  # the other chain landed
            return failed.errors[tag]
    except XorAckError as exc:
        return exc
    raise AssertionError("the closed chain took the stamp")


LOCAL_ROWS = [
    (op, found, cached)
    for op in ("stamp", "stamp_many", "stamp_many_transact", "stamp_on", "touch", "fail", "wait")
    for found in (F.GONE, F.ACKED, F.FAILED, F.TIMED_OUT, F.TIMED_OUT_HERE)
    for cached in (False, True)
    if not (found is F.TIMED_OUT_HERE and op == "wait")
    if not (op == "stamp_on" and found is F.GONE and not cached)  # no state to give
]


@pytest.mark.ddblocal
@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_every_row_on_dynamodb_local_fresh_and_cached(clients: Any, kind: str) -> None:
    """Every row at once (a tag each), on each client: ``me`` acts before the deadline,
    ``me_late`` after it (its cached states are overdue by its clock: the issue's case)."""
    run_id = uuid.uuid4().hex[:6]
    peer_kind = "sync" if kind == "async" else "async"
    other = await clients(peer_kind, T0, "other")
    late = await clients(peer_kind, T0 + 11, "other-late")
    me = await clients(kind, T0, "me")
    me_late = await clients(kind, T0 + 11, "me-late")
    rows = {f"{run_id}-{op}-{f.name}-{cached}": (op, f, cached) for op, f, cached in LOCAL_ROWS}
    roots = {tag: new_stamp() for tag in rows}
    await other.create_many(roots, timeout=10)
    await other.create_many({f"{tag}-other": new_stamp() for tag in rows})

    def actor(found: T.Found, cached: bool) -> Any:
        return me_late if found is F.TIMED_OUT_HERE or (cached and found is F.TIMED_OUT) else me

    given: dict[str, ChainState | None] = {}
    for client in (me, me_late):  # read live (and so cached) by the client that acts
        mine = [t for t, (_, f, c) in rows.items() if c and actor(f, c) is client]
        given.update(await client.get_many(mine + [f"{t}-other" for t in mine]))
    await asyncio.gather(*(close(other, late, t, roots[t], f) for t, (_, f, _) in rows.items()))
    outcomes = await asyncio.gather(
        *(call(op, actor(f, c), t, given.get(t)) for t, (op, f, c) in rows.items())
    )
    wrong = []
    for (op, found, cached), outcome in zip(rows.values(), outcomes, strict=True):
        way = "cached" if cached else "fresh"
        want = expected("stamp" if op.startswith("stamp_many") else op, found, way)
        got_type = type(outcome) if isinstance(outcome, Exception) else None
        by_me = getattr(outcome, "failed_by_this_call", found is F.TIMED_OUT_HERE)
        if got_type is not want or by_me is not (found is F.TIMED_OUT_HERE):
            wrong.append((op, found.name, way, repr(outcome)))
    assert wrong == []


def _set_clock(client: Any, now: float) -> None:
    inner = getattr(client, "inner", client)  # the sync client behind its async facade
    inner._core.clock.now = now


@pytest.mark.ddblocal
async def test_late_writers_with_and_without_a_cache_and_sweepers_race(clients: Any) -> None:
    """Late stamps, fails and touches from clients that cached the chains live and from
    fresh ones, against two sweepers: only ChainTimedOut, one writer per chain knows it
    failed it, and the chain's one write after its create is the timeout."""
    maker = await clients("async", T0)
    roots = {f"race-{uuid.uuid4().hex[:6]}-{i:02d}": new_stamp() for i in range(8)}
    await maker.create_many(roots, timeout=10, idle_timeout=5)
    warm = [await clients(kind, T0) for kind in ("async", "sync")]
    for client in warm:
        await client.get_many(list(roots))  # cached live
        _set_clock(client, T0 + 11)
    cold = [await clients(kind, T0 + 11) for kind in ("async", "sync")]
    sweepers = [await clients(kind, T0 + 12) for kind in ("sync", "async")]

    async def told(call: Any) -> tuple[str, bool]:
        try:
            await call
        except ChainFailed as exc:
            return exc.code, exc.failed_by_this_call
        except TagNotFound as exc:  # never: the chains are neither gone nor acked
            return exc.code, False
        return "ok", True

    calls = []
    for tag, root in roots.items():
        for client in (*warm, *cold):
            calls += [
                told(client.stamp(tag, xor(root, new_stamp()))),
                told(client.fail(tag, "mine")),
                told(client.touch(tag)),
            ]
    sweeps, *seen = await asyncio.gather(asyncio.gather(*(s.sweep() for s in sweepers)), *calls)
    assert {code for code, _ in seen} == {"ChainTimedOut"}
    swept = [state.tag for result in sweeps for state in result]
    per_chain = len(seen) // len(roots)
    for i, tag in enumerate(roots):
        mine = [by for _, by in seen[i * per_chain : (i + 1) * per_chain]]
        assert mine.count(True) + swept.count(tag) == 1, tag
    for state in (await maker.get_many(list(roots))).values():
        assert state is not None and state.reason == "timeout" and state.version == 2
