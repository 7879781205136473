"""``batch_writes``: stamp writes of different chains sent together as PartiQL batches.

The translation, the reading of a batch's answer and the plan of what goes out
when are pure and tested here directly (the plan by property).  What the server
decides runs on DynamoDB Local only: moto answers a batched UPDATE whose WHERE
condition fails as applied, without applying it (why batching is opt-in), so a
lost race could not be told there.  Faults are injected around the real
DynamoDB Local client (``hooks``): statements refused, throttled, or answered
with an error after they landed; the whole batch refused or its answer lost.
Every behaviour runs on the async client and its sync twin.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import aioboto3
import boto3
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, XorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.chain import ChainState
from xor_ack_dynamodb.dynamodb._batches import (
    MAX_BATCH_STATEMENTS,
    Applied,
    Batcher,
    BatchPlan,
    Refused,
    SendAlone,
    read_batch,
)
from xor_ack_dynamodb.dynamodb._core.effects import ClientStats
from xor_ack_dynamodb.dynamodb._core.expressions import PLACEHOLDERS, Compare, Exists, Update, Value
from xor_ack_dynamodb.dynamodb._core.many import Chains
from xor_ack_dynamodb.errors import AmbiguousWrite, InterruptedWrite, InvalidArgument
from xor_ack_dynamodb.retry import RetryPolicy, botocore_config
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client
from .hooks import (
    Trigger,
    _Hooked,
    assert_applied_once,
    client_error,
    hooked_client,
    raising,
)
from .interrupts import interrupted
from .peer import lost_connection

PATIENT = RetryPolicy(max_attempts=500, base_delay=0.002, max_delay=0.05, max_elapsed=60)
BATCHING: dict[str, Any] = {"batch_writes": True, "write_slots": 1}


# -- the translation -------------------------------------------------------------


def _state(version: int = 3) -> ChainState:
    return ChainState("file-1", new_stamp(), b"c" * 16, version, (b"t" * 8,), 1.0, 2.0)


@pytest.mark.parametrize("idle", [False, True])
@pytest.mark.parametrize("acked", [False, True])
def test_a_stamp_write_becomes_the_same_conditional_update_statement(
    acked: bool, idle: bool
) -> None:
    core = Chains(table="my.table-1")
    state = _state()
    if idle:  # a deadline (so the statement carries its condition) that each stamp moves
        state = replace(state, deadline=11.0, idle_timeout=30.0)
    new_state = Stamp(bytes(16)) if acked else new_stamp()
    update, _ = core._stamp_update("file-1", state, new_state, (b"t" * 8, b"u" * 8), 10.0)
    params = update.request()
    statement = update.statement()
    assert statement is not None
    names = params["ExpressionAttributeNames"]
    values = params["ExpressionAttributeValues"]
    sets = [f'SET "{names[n]}" = ?' for n in ("#s", "#v", "#t", "#u")]
    set_values = [values[v] for v in (":s", ":v", ":t", ":now")]
    if acked:
        sets += ['SET "acked_at" = ?', 'SET "expires_at" = ?']
        sets += ['REMOVE "open_shard"', 'REMOVE "due_at"', 'REMOVE "deadline"']
        set_values += [values[":now"], values[":exp"]]
    elif idle:
        sets += ['SET "deadline" = ?', 'SET "due_at" = ?']
        set_values += [{"N": "40.0"}, {"N": "40.0"}]
    late = ' AND "deadline" > ?' if idle else ""
    assert statement["Statement"] == (
        f'UPDATE "my.table-1" {" ".join(sets)} '
        f'WHERE "tagID" = ? AND "{names["#v"]}" = ? AND "{names["#c"]}" = ?{late}'
    )
    assert statement["Parameters"] == [
        *set_values,
        {"S": "file-1"},
        {"N": str(state.version)},
        {"B": state.chain_id},
        *([values[":now"]] if idle else []),
    ]
    assert statement["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"


def test_writes_of_another_shape_stay_update_items() -> None:
    core = Chains(table="chains")
    create = core._create_update("f", new_stamp(), {}, 1.0, b"t" * 8, b"c" * 16)
    assert create.statement() is None  # an OR of attribute_not_exists and comparisons
    update, _ = core._stamp_update("f", _state(), new_stamp(), (b"t" * 8,), 1.0)
    assert update.statement() is not None
    one = Value(":one", {"N": "1"})
    assert replace(update, increment=(("version", one),)).statement() is None
    assert replace(update, set=(('st"amp', one),)).statement() is None
    assert replace(update, table='my"table').statement() is None
    assert replace(update, condition=(Exists("stamp", False),)).statement() is None


def test_removals_and_comparisons_render_in_both_forms_from_one_value() -> None:
    now = Value(":now", {"N": "5"})
    update = Update(
        "chains",
        {"tagID": {"S": "k"}},
        set=(("stamp", Value(":s", {"B": b"\x01"})), ("updated_at", now)),
        remove=("due_at", "open_shard"),
        condition=(
            Compare("version", "=", Value(":old", {"N": "2"})),
            Compare("deadline", ">", now),
        ),
    )
    params = update.request()
    assert params["UpdateExpression"] == "SET #s = :s, #u = :now REMOVE #due, #os"
    assert params["ConditionExpression"] == "#v = :old AND #d > :now"
    assert params["ExpressionAttributeValues"] == {
        ":s": {"B": b"\x01"},
        ":now": {"N": "5"},
        ":old": {"N": "2"},
    }
    statement = update.statement()
    assert statement is not None
    assert statement["Statement"] == (
        'UPDATE "chains" SET "stamp" = ? SET "updated_at" = ? REMOVE "due_at" REMOVE "open_shard"'
        ' WHERE "tagID" = ? AND "version" = ? AND "deadline" > ?'
    )
    assert statement["Parameters"] == [
        {"B": b"\x01"},
        {"N": "5"},
        {"S": "k"},
        {"N": "2"},
        {"N": "5"},
    ]


names_ = st.sampled_from(sorted(PLACEHOLDERS))


@given(
    sets=st.lists(names_, min_size=1, max_size=6, unique=True),
    conds=st.lists(names_, min_size=1, max_size=3, unique=True),
    key=st.from_regex(r"[a-z_][a-z0-9_.\-]{0,12}", fullmatch=True),
)
def test_every_value_lands_on_its_own_placeholder(
    sets: list[str], conds: list[str], key: str
) -> None:
    assume(key not in PLACEHOLDERS)
    update = Update(
        "chains",
        {key: {"S": "k"}},
        set=tuple((n, Value(f":s{i}", {"N": str(i)})) for i, n in enumerate(sets)),
        condition=tuple(
            Compare(n, "=", Value(f":c{i}", {"N": str(100 + i)})) for i, n in enumerate(conds)
        ),
    )
    statement = update.statement()
    assert statement is not None
    text, values = statement["Statement"], statement["Parameters"]
    assert text.count("?") == len(values) == len(sets) + 1 + len(conds)
    head, _, where = text.partition(" WHERE ")
    assert [part.split('"')[1] for part in head.split(" SET ")[1:]] == sets
    assert [part.split('"')[1] for part in where.split(" AND ")] == [key, *conds]
    assert values == [
        *({"N": str(i)} for i in range(len(sets))),
        {"S": "k"},
        *({"N": str(100 + i)} for i in range(len(conds))),
    ]
    params = update.request()
    names, placeholders = params["ExpressionAttributeNames"], params["ExpressionAttributeValues"]
    for i, name in enumerate(sets):
        assert f"{PLACEHOLDERS[name]} = :s{i}" in params["UpdateExpression"]
        assert names[PLACEHOLDERS[name]] == name and placeholders[f":s{i}"] == {"N": str(i)}


# -- reading a batch's answer ----------------------------------------------------


def test_each_statement_answer_becomes_its_update_items_outcome() -> None:
    item = {"tagID": {"S": "b"}, "version": {"N": "7"}}
    response = {
        "Responses": [
            {"TableName": "t"},
            {"Error": {"Code": "ConditionalCheckFailed", "Message": "no", "Item": item}},
            {"Error": {"Code": "TransactionConflict", "Message": "held"}},
            {"Error": {"Code": "ThrottlingError", "Message": "slow down"}},
            {"Error": {"Code": "InternalServerError", "Message": "oops"}},
            {"Error": {"Code": "SomethingNew", "Message": "?"}},
        ],
        "ResponseMetadata": {"RetryAttempts": 0},
    }
    ok, lost, held, throttled, internal, unknown = read_batch(response, 6)
    assert isinstance(ok, Applied)
    assert isinstance(lost, Refused) and isinstance(held, Refused)
    assert lost.error.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert lost.error.response["Item"] == item  # ALL_OLD: the core needs no read
    assert lost.error.response["ResponseMetadata"]["RetryAttempts"] == 0
    assert held.error.response["Error"]["Code"] == "TransactionConflictException"
    assert throttled == SendAlone(sent_before=False, cause="ThrottlingError")
    assert internal == SendAlone(sent_before=True, cause="InternalServerError")
    assert unknown == SendAlone(sent_before=True, cause="SomethingNew")


def test_a_batch_botocore_sent_twice_marks_every_re_sent_statement() -> None:
    response = {
        "Responses": [{"Error": {"Code": "ProvisionedThroughputExceeded", "Message": "x"}}],
        "ResponseMetadata": {"RetryAttempts": 2},
    }
    assert read_batch(response, 1) == [
        SendAlone(sent_before=True, cause="ProvisionedThroughputExceeded")
    ]
    assert all(isinstance(v, SendAlone) and v.sent_before for v in read_batch({}, 3))


# -- the plan ----------------------------------------------------------------------


def test_the_plan_sends_alone_while_slots_are_free_then_together() -> None:
    plan: BatchPlan[str] = BatchPlan(slots=2, size=3)
    assert plan.offer("a", "a1") == [["a1"]]
    assert plan.offer("b", "b1") == [["b1"]]
    assert plan.offer("c", "c1") == []
    assert plan.offer("a", "a2") == []  # waits
    assert plan.offer("a", "a3") == []  # one item per batch: a3 does not fill it
    assert plan.offer("d", "d1") == [["c1", "a2", "d1"]]  # three distinct items: full, goes now
    assert plan.in_flight == 3  # a full batch does not wait for a slot
    assert plan.finished() == []  # two in flight: still no free slot
    assert plan.finished() == [["a3"]]
    assert plan.in_flight == 2


@settings(max_examples=200, deadline=None)
@given(
    slots=st.integers(1, 4),
    steps=st.lists(st.one_of(st.integers(0, 7), st.none()), max_size=120),
)
def test_the_plan_sends_every_write_once_in_batches_of_distinct_items(
    slots: int, steps: list[int | None]
) -> None:
    """Random offers (of item ``k``) and answers (None): nothing lost, nothing sent twice."""
    plan: BatchPlan[int] = BatchPlan(slots=slots)
    sent: list[list[int]] = []
    outstanding = 0
    for n, step in enumerate(steps):
        if step is None:
            if outstanding:
                outstanding -= 1
                ready = plan.finished()
            else:
                continue
        else:
            ready = plan.offer(step, n * 8 + step)
        for batch in ready:
            assert 1 <= len(batch) <= MAX_BATCH_STATEMENTS
            assert len({w % 8 for w in batch}) == len(batch)  # distinct items
        sent += ready
        outstanding += len(ready)
        assert plan.in_flight == outstanding
        assert not plan.waiting or plan.in_flight >= slots  # none waits while a slot is free
    while outstanding:
        outstanding -= 1
        ready = plan.finished()
        sent += ready
        outstanding += len(ready)
    offered = [n * 8 + s for n, s in enumerate(steps) if s is not None]
    assert sorted(w for batch in sent for w in batch) == offered
    assert plan.waiting == [] and plan.in_flight == 0


def test_a_client_refuses_write_slots_below_one() -> None:
    stand_in = SimpleNamespace(get_item=lambda **request: {})  # no boto3 client needed
    with pytest.raises(InvalidArgument, match="write_slots must be an int >= 1"):
        SyncXorAckDynamoDB(stand_in, table="chains", batch_writes=True, write_slots=0)


def test_plan_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="slots"):
        BatchPlan(slots=0)
    with pytest.raises(ValueError, match="size"):
        BatchPlan(size=MAX_BATCH_STATEMENTS + 1)


def drive(op: Any, answers: dict[str, Any]) -> tuple[list[str], Any]:
    """Run a sans-I/O operation by hand: ``answers[op]`` is each call's response."""
    calls: list[str] = []
    try:
        effect = next(op)
        while True:
            calls.append(effect.op)
            effect = op.send(answers[effect.op])
    except StopIteration as stop:
        return calls, stop.value


def test_writes_waiting_when_batching_stopped_go_one_by_one() -> None:
    stats = ClientStats()
    batcher = Batcher(stats)
    core = Chains(table="chains")
    writes = []
    for tag in ("a", "b", "c"):
        update, _ = core._stamp_update(tag, _state(), new_stamp(), (b"t" * 8,), 1.0)
        write = batcher.prepare(update.request(), update, None)
        assert write is not None
        writes.append(write)
    batcher.enabled = False  # a refusal stopped batching while these waited in the plan
    calls, results = drive(batcher.send(writes), {"update_item": {"ok": 1}})
    assert calls == ["update_item"] * 3
    assert results == [{"ok": 1}] * 3
    assert stats.requests["BatchExecuteStatement"] == 0 and stats.batched_writes == 0
    assert batcher.prepare(update.request(), update, None) is None  # new writes skip the plan


# -- against DynamoDB Local ------------------------------------------------------------


@pytest.fixture
async def batching(kind: str, local: tuple[str, TableSpec]) -> AsyncIterator[Any]:
    async with open_client(kind, local[0], local[1].name, retry=PATIENT, **BATCHING) as client:
        yield client


async def make_chains(client: Any, prefix: str, n: int, k: int) -> dict[str, list[Stamp]]:
    """``n`` chains of ``k`` children each, created and parent-stamped."""
    chains: dict[str, list[Stamp]] = {}
    for i in range(n):
        root, children = new_stamp(), [new_stamp() for _ in range(k)]
        await client.create(f"{prefix}{i}", root)
        await client.stamp(f"{prefix}{i}", xor(root, *children))
        chains[f"{prefix}{i}"] = children
    return chains


async def stamp_all(client: Any, chains: dict[str, list[Stamp]]) -> dict[str, list[Stamp]]:
    """Every child of every chain, all at once; per chain, the states reported.

    Dealt round-robin over the chains (the sync client's calls run on a few worker
    threads in this order, so neighbouring calls are on different chains).
    """
    width = max(len(kids) for kids in chains.values())
    pairs = [(t, kids[i]) for i in range(width) for t, kids in chains.items() if i < len(kids)]
    tags = [t for t, _ in pairs]
    kids = [c for _, c in pairs]
    states = await asyncio.gather(*(client.stamp(t, c) for t, c in zip(tags, kids, strict=True)))
    seen: dict[str, list[Stamp]] = {t: [] for t in chains}
    for tag, state in zip(tags, states, strict=True):
        seen[tag].append(state)
    return seen


async def test_concurrent_stamps_on_many_chains_go_in_batches_and_complete_exactly(
    batching: Any,
) -> None:
    chains = await make_chains(batching, "many-", 40, 3)
    before = batching.stats.snapshot()
    seen = await stamp_all(batching, chains)
    after = batching.stats.snapshot()
    for tag, states in seen.items():
        assert sum(s.acked for s in states) == 1, tag
        parent = xor(*chains[tag])  # what the chain held after its parent stamp (root cancels)
        assert_applied_once(parent, dict(enumerate(chains[tag])), dict(enumerate(states)))
    got = await batching.get_many(list(chains))
    assert all(s is not None and s.acked for s in got.values())
    assert after["batched_writes"] > before["batched_writes"]
    assert after["requests.BatchExecuteStatement"] > 0
    # fewer requests than writes: that is the point
    assert after["requests"] - before["requests"] < after["writes"] - before["writes"]
    assert batching.batching


async def test_two_batching_clients_race_on_the_same_chains_and_lose_nothing(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        a, b = [
            await stack.enter_async_context(
                open_client(k, local[0], local[1].name, retry=PATIENT, coalesce=False, **BATCHING)
            )
            for k in (kind, "async")
        ]
        chains = await make_chains(a, "race-", 12, 6)
        half = {t: kids[::2] for t, kids in chains.items()}
        rest = {t: kids[1::2] for t, kids in chains.items()}
        seen_a, seen_b = await asyncio.gather(stamp_all(a, half), stamp_all(b, rest))
        conflicts = a.stats.conflicts + b.stats.conflicts
    for tag, kids in chains.items():
        stamps = {("a", i): s for i, s in enumerate(half[tag])}
        stamps |= {("b", i): s for i, s in enumerate(rest[tag])}
        seen = {("a", i): s for i, s in enumerate(seen_a[tag])}
        seen |= {("b", i): s for i, s in enumerate(seen_b[tag])}
        assert_applied_once(xor(*kids), stamps, seen)
    assert conflicts > 0  # the batches really raced: refused statements came back ALL_OLD


async def test_tokens_keep_batched_stamps_idempotent(batching: Any) -> None:
    chains = await make_chains(batching, "tok-", 10, 2)
    calls = [(t, c, f"{t}/{i}") for t, kids in chains.items() for i, c in enumerate(kids)]
    first = await asyncio.gather(*(batching.stamp(t, c, token=k) for t, c, k in calls))
    again = await asyncio.gather(*(batching.stamp(t, c, token=k) for t, c, k in calls))
    assert sum(s.acked for s in first) == len(chains)
    # the retried calls find their tokens and change nothing
    finals = {t: s for (t, _, _), s in zip(calls, again, strict=True)}
    assert all(s.acked for s in finals.values())
    assert batching.stats.stamps == 2 * len(chains) + len(chains)  # parents + children, once


# -- faults ------------------------------------------------------------------------------


class StatementFault:
    """Hooks for BatchExecuteStatement: the ``index``-th statement of the next batch is
    answered with ``code``; ``landed`` says whether it was applied first (an error after
    the write) or held back from the server (refused before it was written)."""

    def __init__(self, code: str, *, landed: bool, index: int = 0) -> None:
        self.code, self.landed, self.index = code, landed, index
        self.armed = True
        self.held: dict[str, Any] | None = None
        self.hit: dict[str, Any] | None = None

    def before(self, params: dict[str, Any]) -> None:
        if self.armed and not self.landed:
            self.held = params["Statements"].pop(self.index)

    def after(self, params: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
        if not self.armed:
            return response
        self.armed = False
        error = {"Error": {"Code": self.code, "Message": f"injected {self.code}"}}
        answers = response["Responses"]
        if self.landed:
            self.hit = params["Statements"][self.index]
            answers[self.index] = error
        else:
            self.hit = self.held
            params["Statements"].insert(self.index, self.held)
            answers.insert(self.index, error)
        return response


@contextlib.asynccontextmanager
async def faulty(kind: str, local: tuple[str, TableSpec], **hooks: Any) -> AsyncIterator[Any]:
    async with hooked_client(
        kind, local[0], local[1].name, retry=PATIENT, **BATCHING, **hooks
    ) as client:
        yield client


@pytest.mark.parametrize(
    ("code", "landed", "stops"),
    [
        ("ThrottlingError", False, False),
        ("ProvisionedThroughputExceeded", False, False),
        ("AccessDenied", False, True),
        ("InternalServerError", True, False),  # applied, then answered with an error
        ("InternalServerError", False, False),  # not applied
    ],
)
async def test_a_statement_that_cannot_be_told_applied_is_sent_again_alone(
    kind: str, local: tuple[str, TableSpec], code: str, landed: bool, stops: bool
) -> None:
    fault = StatementFault(code, landed=landed)
    async with faulty(
        kind,
        local,
        before={"batch_execute_statement": fault.before},
        after={"batch_execute_statement": fault.after},
    ) as client:
        chains = await make_chains(client, "fault-", 12, 2)
        seen = await stamp_all(client, chains)
        assert fault.hit is not None, "no batch was sent"
        for tag, states in seen.items():
            assert_applied_once(
                xor(*chains[tag]), dict(enumerate(chains[tag])), dict(enumerate(states))
            )
        got = await client.get_many(list(chains))
        assert all(s is not None and s.acked for s in got.values())
        assert client.batching is not stops
        if landed:  # its UpdateItem alone failed its condition; its token proved it landed
            assert client.stats.resent_writes_recognised >= 1


async def test_a_statement_applied_then_its_lone_send_never_connecting_is_read_not_redone(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """The batch applied a statement but answered it with an error; sent again alone, its
    UpdateItem never reaches the server. The batch may have landed it, so that transport
    error is not proof of "not landed": the client reads, finds its token, and reports
    the stamp as applied once (not the error, which a caller would retry)."""
    fault = StatementFault("InternalServerError", landed=True)
    lost = Trigger(raising(lost_connection(never_sent=True)))

    def alone(params: dict[str, Any]) -> None:
        if fault.hit is not None and params["Key"]["tagID"] in fault.hit["Parameters"]:
            lost(params)

    async with faulty(
        kind,
        local,
        after={"batch_execute_statement": fault.after},
        before={"update_item": alone},
    ) as client:
        chains = await make_chains(client, "unsent-", 12, 2)
        seen = await stamp_all(client, chains)
        assert fault.hit is not None and lost.left == 0, "the lone send was not refused"
        for tag, states in seen.items():
            assert_applied_once(
                xor(*chains[tag]), dict(enumerate(chains[tag])), dict(enumerate(states))
            )
        got = await client.get_many(list(chains))
        assert all(s is not None and s.acked for s in got.values())


@pytest.mark.parametrize("code", ["AccessDeniedException", "ValidationException"])
async def test_a_batch_refused_whole_is_sent_write_by_write_and_batching_stops(
    kind: str, local: tuple[str, TableSpec], code: str, caplog: pytest.LogCaptureFixture
) -> None:
    refuse = Trigger(raising(client_error("BatchExecuteStatement", code)))
    async with faulty(kind, local, before={"batch_execute_statement": refuse}) as client:
        chains = await make_chains(client, "refused-", 10, 2)
        with caplog.at_level(logging.WARNING, logger="xor_ack_dynamodb.dynamodb._batches"):
            seen = await stamp_all(client, chains)
        assert refuse.left == 0, "no batch was sent"
        assert all(sum(s.acked for s in states) == 1 for states in seen.values())
        assert not client.batching
        assert "PartiQLUpdate" in caplog.text and code in caplog.text
        writes = client.stats.snapshot()
        more = await make_chains(client, "after-", 6, 2)
        await stamp_all(client, more)
        assert client.stats.snapshot()["batched_writes"] == writes["batched_writes"]


async def test_a_batch_whose_answer_is_lost_after_it_landed_is_settled_by_reads(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    lose = Trigger(raising(ConnectionClosedError(endpoint_url=local[0])))
    async with faulty(kind, local, after={"batch_execute_statement": lose}) as client:
        chains = await make_chains(client, "lost-", 10, 2)
        seen = await stamp_all(client, chains)
        assert lose.left == 0, "no batch was sent"
        for tag, states in seen.items():
            assert_applied_once(
                xor(*chains[tag]), dict(enumerate(chains[tag])), dict(enumerate(states))
            )
        assert client.stats.resent_writes_recognised >= 2  # every write of that batch
        assert client.batching  # a transport error says nothing against batching


async def test_a_statement_with_a_lost_race_gets_the_item_without_a_read(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """Another writer moves a chain between our read and our batch: ALL_OLD, no GetItem."""
    raw = boto3.client("dynamodb", endpoint_url=local[0], region_name="us-east-1")
    async with open_client(kind, local[0], local[1].name, retry=PATIENT, **BATCHING) as client:
        chains = await make_chains(client, "stale-", 8, 2)
        intruder_tag = "stale-3"
        intruder = new_stamp()
        async with open_client("sync", local[0], local[1].name) as other:
            await other.stamp(intruder_tag, intruder)  # our cache is now one version behind
        reads = client.stats.requests["GetItem"]
        seen = await stamp_all(client, chains)
        assert client.stats.requests["GetItem"] == reads
        assert client.stats.cache_refreshes >= 1  # re-planned on the item the refusal returned
        kids = chains[intruder_tag]
        assert not any(s.acked for s in seen[intruder_tag])  # the intruder's stamp is in
        item = raw.get_item(
            TableName=local[1].name, Key={"tagID": {"S": intruder_tag}}, ConsistentRead=True
        )["Item"]
        assert bytes(item["stamp"]["B"]) == bytes(xor(*kids, intruder, *kids))


def test_batching_a_client_error_shape_is_a_botocore_client_error() -> None:
    (refused,) = read_batch(
        {"Responses": [{"Error": {"Code": "ConditionalCheckFailed", "Message": "x"}}]}, 1
    )
    assert isinstance(refused, Refused) and isinstance(refused.error, ClientError)
    assert refused.error.operation_name == "UpdateItem"


def test_sync_batch_sender_interrupted_tells_the_others_their_stamps_may_have_landed(
    local: tuple[str, TableSpec],
) -> None:
    """The thread sending a batch of other threads' stamps is interrupted (Ctrl-C) after
    the batch landed: each other stamp gets ``InterruptedWrite`` (typed: it may have
    landed), and sent again with its token it is found applied, not applied twice."""
    endpoint, spec = local
    raw = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    first_sent = threading.Event()

    def waiting() -> int:
        with ack._queue_lock:
            assert ack._batcher is not None
            return len(ack._batcher.plan.waiting)

    def before_update(params: dict[str, Any]) -> None:  # the first stamp, sent alone
        first_sent.set()
        deadline = time.monotonic() + 5
        while waiting() < 3 and time.monotonic() < deadline:
            time.sleep(0.01)

    def after_batch(params: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
        raise KeyboardInterrupt  # landed; its sender interrupted before it hands results out

    hooks = _Hooked(raw, {"update_item": before_update}, {"batch_execute_statement": after_batch})
    ack = SyncXorAckDynamoDB(hooks, table=spec.name, **BATCHING)
    direct = SyncXorAckDynamoDB(raw, table=spec.name)
    kids = {f"i{n}": (new_stamp(), new_stamp()) for n in range(4)}
    for tag, (a, b) in kids.items():
        direct.create(tag, xor(a, b))
    told: dict[str, object] = {}

    def stamp(tag: str) -> None:
        try:
            told[tag] = ack.stamp(tag, kids[tag][0], token=tag)
        except BaseException as exc:  # what each caller was told, Ctrl-C included
            told[tag] = exc

    threads = [threading.Thread(target=stamp, args=(tag,)) for tag in kids]
    threads[0].start()
    assert first_sent.wait(5)
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join(10)
    kinds = sorted(type(e).__name__ for e in told.values())
    assert kinds == ["InterruptedWrite", "InterruptedWrite", "KeyboardInterrupt", "Stamp"]
    for tag, error in told.items():
        if isinstance(error, InterruptedWrite):
            assert isinstance(error, AmbiguousWrite) and error.tag == tag
            again = direct.stamp(tag, kids[tag][0], token=tag)  # found applied
            assert again == kids[tag][1] and direct.get(tag).version == 2


class _Gated:
    """An async DynamoDB client whose UpdateItem waits for ``open`` (the slot stays taken)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.open, self.sent = inner, asyncio.Event(), asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def update_item(self, **params: Any) -> Any:
        self.sent.set()
        await self.open.wait()
        return await self.inner.update_item(**params)


async def test_a_caller_cancelled_while_its_write_waits_for_a_slot_sends_nothing(
    local: tuple[str, TableSpec],
) -> None:
    """As for a stamp queued to be merged: cancelled before its batch left, it is not sent
    (the caller, told CancelledError, may stamp again without applying it twice)."""
    endpoint, spec = local
    async with aioboto3.Session().client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
    ) as raw:
        gated = _Gated(raw)
        gated.open.set()
        ack = XorAckDynamoDB(gated, table=spec.name, **BATCHING)
        roots = {tag: new_stamp() for tag in ("first", "second", "third")}
        for tag, root in roots.items():
            await ack.create(tag, root)
            await ack.get(tag)  # remembered: each stamp below is its write alone
        gated.open.clear()
        first = asyncio.create_task(ack.stamp("first", new_stamp()))
        await asyncio.wait_for(gated.sent.wait(), 5)  # the one slot is taken
        second = asyncio.create_task(ack.stamp("second", new_stamp()))
        third = asyncio.create_task(ack.stamp("third", new_stamp()))
        assert ack._batcher is not None
        while len(ack._batcher.plan.waiting) < 2:
            await asyncio.sleep(0.005)
        second.cancel()
        gated.open.set()
        await first
        await third
        with pytest.raises(asyncio.CancelledError):
            await second
        await ack.drain()
        assert (await ack.get("second")).stamp == roots["second"]  # type: ignore[union-attr]
        assert (await ack.get("third")).version == 2  # type: ignore[union-attr]


def test_an_interrupted_wait_for_a_batch_does_not_block_the_clients_later_writes(
    local: tuple[str, Any],
) -> None:
    """With ``batch_writes``, a stamp that waits for a free slot sits in the plan; if its
    thread is interrupted there (``KeyboardInterrupt``, a signal handler's exception), the
    batch it would lead is later handed to its dead inbox: never sent, its slot never
    freed.  With ``write_slots=1`` every later stamp of the client then waits forever."""

    endpoint, spec = local
    client = boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
    )
    ack = SyncXorAckDynamoDB(client, table=spec.name, batch_writes=True, write_slots=1)
    roots = {tag: new_stamp() for tag in ("a", "b", "c")}
    for tag, root in roots.items():
        ack.create(tag, root)  # cached: each stamp below is one write, no read

    gate, held = threading.Event(), threading.Event()

    def hold(**_: Any) -> None:
        if threading.current_thread().name == "holder":
            held.set()
            gate.wait(10)

    client.meta.events.register("before-send.dynamodb.UpdateItem", hold)
    holder = threading.Thread(
        target=ack.stamp, args=("a", xor(roots["a"], new_stamp())), name="holder", daemon=True
    )
    holder.start()
    assert held.wait(10)  # a's write holds the only slot

    told = interrupted(
        lambda: ack.stamp("b", xor(roots["b"], new_stamp())),  # waits for the slot
        when=lambda: bool(ack._batcher and ack._batcher.plan.waiting),
    )
    assert isinstance(told, KeyboardInterrupt), told
    gate.set()
    holder.join(10)
    assert not holder.is_alive()

    later = threading.Thread(target=ack.stamp, args=("c", roots["c"]), daemon=True)
    later.start()
    later.join(10)
    try:
        plan = ack._batcher.plan if ack._batcher is not None else None
        assert not later.is_alive(), (
            "a later stamp waits forever for the slot",
            plan and (plan.in_flight, len(plan.waiting)),
        )
        state = ack.get("b")  # withdrawn while it waited: never sent, not applied later
        assert state is not None and state.stamp == roots["b"] and state.version == 1
    finally:
        client.meta.events.unregister("before-send.dynamodb.UpdateItem", hold)
