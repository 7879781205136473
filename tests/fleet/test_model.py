"""The programming model on DynamoDB Local: fan-out, applied once at any distance, completion."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import xor_ack_dynamodb.fleet as fleet_package
from xor_ack_dynamodb.dynamodb import XorAckDynamoDB
from xor_ack_dynamodb.errors import InvalidArgument, InvalidTag
from xor_ack_dynamodb.fleet import (
    FLEET_TOKEN_WINDOW,
    Completed,
    Envelope,
    Fleet,
    Handled,
    Message,
    QueueContinuation,
    Verdict,
    child_id,
    root_id,
    stamp_of,
)
from xor_ack_dynamodb.fleet.dead_letters import settle_dead_letter
from xor_ack_dynamodb.fleet.envelope import root_envelope
from xor_ack_dynamodb.fleet.errors import (
    InvalidEnvelope,
    InvalidPayload,
    MarkerMissing,
    ReplayRefused,
    TombstoneTooShort,
    UnsuitableClient,
)
from xor_ack_dynamodb.fleet.markers import DEFAULT_MARKER_TTL, MAX_JOB_TAG_BYTES, page_key
from xor_ack_dynamodb.fleet.payloads import MAX_DEPTH
from xor_ack_dynamodb.table import TableSpec

from .conftest import Harness, tree

pytestmark = pytest.mark.ddblocal


def test_identities_are_derived_deterministically() -> None:
    root = root_id("job-1")
    assert root == root_id("job-1") != root_id("job-2")
    assert child_id(root, payload="a") == child_id(root, payload="a") != child_id(root, payload="b")
    # A child is named by its payload as JSON carries it: keys in any order, a tuple as a list.
    assert child_id(root, payload={"a": 1, "b": (2,)}) == child_id(root, payload={"b": [2], "a": 1})
    assert child_id(root, payload=1) != child_id(root, payload="1") != child_id(root, payload=1.0)
    assert child_id(root, payload="a", occurrence=1) != child_id(root, payload="a")
    assert child_id(root_id("job-2"), payload="a") != child_id(root, payload="a")
    with pytest.raises(InvalidEnvelope):
        child_id(root, payload="a", occurrence=-1)
    assert len(stamp_of(root)) == 16 and any(stamp_of(root))
    env = Envelope("job-1", b"\x01" * 8, root, {"a": [1]}, sent=3)
    assert Envelope.from_json(env.to_json()) == env
    kids = env.children(["x", "y", "x"], 5)
    assert [k.id for k in kids] == [
        child_id(root, payload="x"),
        child_id(root, payload="y"),
        child_id(root, payload="x", occurrence=1),
    ]
    assert [(k.index, k.parent, k.sent, k.window) for k in kids] == [
        (0, root, 5, None),
        (1, root, 5, None),
        (2, root, 5, None),
    ]
    # In another order, the same children: each payload keeps its identity.
    again = env.children(["y", "x", "x"], 5)
    assert {(k.id, k.payload) for k in again} == {(k.id, k.payload) for k in kids}


@pytest.mark.parametrize(
    "body",
    ["not json", "[]", '{"xor_ack": 1}', '{"xor_ack": 1, "tag": "", "chain": "01", "id": "00"}'],
)
def test_a_body_that_is_no_envelope_is_refused(body: str) -> None:
    with pytest.raises(InvalidEnvelope):
        Envelope.from_json(body)


@pytest.mark.parametrize("field", ["chain", "id", "parent"])
def test_a_garbled_field_is_named(field: str) -> None:
    """It said "lacks or garbles non-hexadecimal number found in fromhex() arg", without
    the field."""
    env = root_envelope("job", b"\x01", None)
    data = json.loads(env.to_json())
    data[field] = "zz-not-hex"
    with pytest.raises(InvalidEnvelope, match=f"'{field}' is hexadecimal text"):
        Envelope.from_json(json.dumps(data))
    del data[field]
    if field != "parent":  # a root has none
        with pytest.raises(InvalidEnvelope, match=f"has a '{field}' field"):
            Envelope.from_json(json.dumps(data))


async def test_a_body_nested_too_deep_to_read_is_an_invalid_envelope_and_dropped(
    harness_factory: Any,
) -> None:
    # json.loads raises RecursionError on it: taken for 'try again later', such a dead letter
    # was kept and failed again every visibility timeout, for ever.
    body = "[" * 100_000
    with pytest.raises(InvalidEnvelope):
        Envelope.from_json(body)
    async with harness_factory() as h:
        with pytest.raises(InvalidEnvelope):
            await h.fleet.handle(body)  # on the work queue: left to the redrive policy
        assert await settle_dead_letter(h.fleet, body, "worker.dead_letters", "m-1") is None


@pytest.mark.parametrize("body", [None, 123, {"xor_ack": 1}])
def test_a_body_that_is_not_text_is_an_invalid_envelope(body: object) -> None:
    with pytest.raises(InvalidEnvelope, match="JSON text") as refused:
        Envelope.from_json(body)  # type: ignore[arg-type]
    assert isinstance(refused.value.__cause__, TypeError)


async def test_a_tree_acks_once_and_continues_once(harness_factory: Any) -> None:
    async with harness_factory() as h:
        await h.fleet.submit("job-tree", {"width": 3, "depth": 2})
        handled = await h.drain(pick=lambda q: random.Random(len(q)).randrange(len(q)))
        assert len(handled) == 1 + 3 + 9
        assert [x.acked for x in handled].count(True) == 1 and handled[-1].acked
        assert [c.tag for c in h.completed] == ["job-tree"]
        state = await h.fleet.ack.get("job-tree")
        assert state is not None and state.acked


async def test_duplicates_far_beyond_the_token_window_are_applied_once(
    harness_factory: Any,
) -> None:
    # A window of 4 tokens, pages of 2: the root's 30 children roll it over many times.
    async with harness_factory(token_window=4, page_size=2) as h:
        await h.fleet.submit("job-far", {"width": 30, "depth": 1})
        root = h.queue.pop()
        await h.fleet.handle(root.to_json())
        children = list(h.queue)
        h.queue.clear()
        for env in children[:20]:
            assert (await h.fleet.handle(env.to_json())).verdict is Verdict.APPLIED
        # Every early child again, and the root again: each far behind the window now.
        state = await h.fleet.ack.get("job-far")
        assert state is not None and state.version > 20
        for env in [root, *children[:20]]:
            assert (await h.fleet.handle(env.to_json())).verdict is Verdict.DUPLICATE
        assert h.queue == []  # a duplicate root does not run its handler or re-send children
        assert h.fleet.markers.writes >= 5  # pages were written to cover evicted tokens
        for env in children[20:-1]:
            assert not (await h.fleet.handle(env.to_json())).acked
        last = await h.fleet.handle(children[-1].to_json())
        assert last.acked and last.continued
        assert len(h.completed) == 1


async def _killed_after_sending(h: Any, root: Envelope) -> None:
    """``root`` handled by a process killed between sending its children and its write."""
    real_apply = h.fleet.once.apply

    async def die(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("killed between sending the children and stamping")

    h.fleet.once.apply = die
    try:
        with pytest.raises(RuntimeError):
            await h.fleet.handle(root.to_json())
    finally:
        h.fleet.once.apply = real_apply


async def test_a_parent_that_dies_after_sending_reannounces_the_same_children(
    harness_factory: Any,
) -> None:
    async with harness_factory(token_window=4, page_size=2) as h:
        await h.fleet.submit("job-rerun", {"width": 12, "depth": 1})
        root = h.queue.pop()
        await _killed_after_sending(h, root)
        first = list(h.queue)
        h.queue.clear()
        for env in first[:-1]:  # the orphans run first and land before their parent
            assert (await h.fleet.handle(env.to_json())).verdict is Verdict.APPLIED
        assert not (await h.fleet.ack.get("job-rerun")).acked  # type: ignore[union-attr]
        # The parent runs again, long after: its window no longer holds the children's tokens.
        again = await h.fleet.handle(root.to_json(), receive_count=2)
        assert again.verdict is Verdict.APPLIED and not again.acked
        assert [e.id for e in h.queue] == [e.id for e in first]  # the same children, again
        for env in h.queue[:-1]:  # re-sent copies of children that landed: found in pages
            assert (await h.fleet.handle(env.to_json())).verdict is Verdict.DUPLICATE
        last = await h.fleet.handle(first[-1].to_json())
        assert last.verdict is Verdict.APPLIED and last.acked
        assert (await h.fleet.handle(h.queue[-1].to_json())).verdict is not Verdict.APPLIED
        assert len(h.completed) == 1


def _root_returning(*runs: list[Any], ran: list[Any]) -> Any:
    """A handler whose root returns ``runs`` in turn, one per run; each child's payload is
    appended to ``ran``."""
    todo = iter(runs)

    def handler(message: Any) -> list[Any]:
        if message.parent_id is None:
            return next(todo)
        ran.append(message.payload)
        return []

    return handler


async def _root_run_twice(h: Any, tag: str) -> Handled:
    """Submit ``tag``; its root is handled by a process killed between sending its children
    and its write, then delivered again."""
    await h.fleet.submit(tag, None)
    root = h.queue.pop()
    await _killed_after_sending(h, root)
    handled: Handled = await h.fleet.handle(root.to_json(), receive_count=2)
    return handled


async def test_a_parent_whose_children_come_in_another_order_when_run_again_runs_each_once(
    harness_factory: Any,
) -> None:
    # A child was named by its place: a parent killed after sending its children, whose
    # handler returned them in another order when it ran again (a set, results gathered as
    # they finish), gave child 0's name to another payload. Delivered in this order, the
    # two copies of "a" took both names, "b" was dropped as a duplicate, and the job acked.
    ran: list[Any] = []
    async with harness_factory(_root_returning(["a", "b"], ["b", "a"], ran=ran)) as h:
        again = await _root_run_twice(h, "job-order")
        assert again.verdict is Verdict.APPLIED and not again.acked
        assert sorted(e.payload for e in h.queue) == ["a", "a", "b", "b"]
        await h.drain(lambda q: next((i for i, e in enumerate(q) if e.payload == "a"), 0))
        assert sorted(ran) == ["a", "b"]  # each child once
        assert [c.tag for c in h.completed] == ["job-order"]


async def test_a_parent_whose_children_differ_when_run_again_does_not_ack_its_job(
    harness_factory: Any,
) -> None:
    # Its earlier run's child is not the one its write announced: that child ran under the
    # same name and the job acked, though the announced child never ran.
    ran: list[Any] = []
    async with harness_factory(_root_returning([{"at": 1}], [{"at": 2}], ran=ran)) as h:
        await _root_run_twice(h, "job-differs")
        assert [e.payload for e in h.queue] == [{"at": 1}, {"at": 2}]
        handled = await h.drain()
        assert [x.verdict for x in handled] == [Verdict.APPLIED, Verdict.APPLIED]
        assert ran == [{"at": 1}, {"at": 2}]
        state = await h.fleet.ack.get("job-differs")
        assert state is not None and state.live and not state.acked  # fails at its deadline
        assert h.completed == []


async def test_a_continuation_whose_process_died_runs_on_the_redelivery(
    harness_factory: Any,
) -> None:
    async with harness_factory() as h:
        await h.fleet.submit("job-cont", {"width": 1, "depth": 0})
        root = h.queue.pop()
        h.fail_continuation = 1
        with pytest.raises(RuntimeError):
            await h.fleet.handle(root.to_json())
        assert h.completed == []  # acked, but the continuation did not finish
        again = await h.fleet.handle(root.to_json(), receive_count=2)
        assert again.verdict is Verdict.DUPLICATE and again.continued
        third = await h.fleet.handle(root.to_json(), receive_count=3)
        assert not third.continued
        assert [c.tag for c in h.completed] == ["job-cont"]
        assert not await h.fleet.complete("job-cont")  # the stream's path finds it done too


async def test_copies_of_the_acking_message_in_one_batch_run_the_continuation_once(
    harness_factory: Any,
) -> None:
    # A batch holding several copies of the message that acked a job (its continuation died,
    # SQS delivered it again twice) handles them at once: each read "not done" and ran it.
    async with harness_factory() as h:
        await h.fleet.submit("job-copies", {"width": 1, "depth": 0})
        root = h.queue.pop()
        h.fail_continuation = 1
        with pytest.raises(RuntimeError):
            await h.fleet.handle(root.to_json())
        slow = h.fleet.completion.continuation

        async def continuation(done: Completed) -> None:
            await asyncio.sleep(0.05)  # the effect takes time: the other copy reads meanwhile
            assert slow is not None
            await slow(done)

        h.fleet.completion.continuation = continuation
        copies = await asyncio.gather(
            *(h.fleet.handle(root.to_json(), receive_count=2) for _ in range(3))
        )
        assert [c.continued for c in copies].count(True) == 1
        assert [c.tag for c in h.completed] == ["job-copies"]
        assert h.fleet.completion._running == {}  # nothing kept once the runs are over


async def test_a_plain_continuation_runs_once(harness_factory: Any) -> None:
    # A plain function was accepted, ran its effect, then failed with a raw TypeError (its
    # None awaited) before the done marker: again at every receive.
    ran: list[str] = []

    async with harness_factory() as h:
        h.fleet.completion.continuation = lambda done: ran.append(done.tag)
        await h.fleet.submit("job-plain", {"width": 1, "depth": 0})
        root = h.queue.pop()
        assert (await h.fleet.handle(root.to_json())).continued
        assert not (await h.fleet.handle(root.to_json(), receive_count=2)).continued
    assert ran == ["job-plain"]


@pytest.mark.parametrize("returns", ["gather", "task"])
async def test_a_plain_continuation_returning_an_awaitable_of_the_loop_runs(
    harness_factory: Any, returns: str
) -> None:
    # ``lambda done: asyncio.gather(...)`` (what the Awaitable type allowed) was called in a
    # thread for a while, where it finds no event loop: it failed at every receive.
    ran: list[str] = []

    async def effect(done: Completed) -> None:
        ran.append(done.tag)

    def continuation(done: Completed) -> Any:
        if returns == "gather":
            return asyncio.gather(effect(done))
        return asyncio.ensure_future(effect(done))

    async with harness_factory() as h:
        h.fleet.completion.continuation = continuation
        await h.fleet.submit("job-awaitable", {"width": 1, "depth": 0})
        assert (await h.fleet.handle(h.queue.pop().to_json())).continued
    assert ran == ["job-awaitable"]


async def test_an_acking_message_dead_lettered_before_its_continuation_ran_still_continues(
    harness_factory: Any,
) -> None:
    async with harness_factory() as h:
        await h.fleet.submit("job-dead-ack", {"width": 0, "depth": 0})  # the root is the job
        root = h.queue.pop()
        h.fail_continuation = 5  # the continuation's target is down for every receive
        for receive in range(1, 6):
            with pytest.raises(RuntimeError):
                await h.fleet.handle(root.to_json(), receive_count=receive)
        state = await h.fleet.ack.get("job-dead-ack")
        assert state is not None and state.acked and h.completed == []
        # Still down when the dead letter is settled: the letter is kept for a later try.
        h.fail_continuation = 1
        kept = await settle_dead_letter(h.fleet, root.to_json(), "worker.dead_letters", "m-1")
        assert isinstance(kept, RuntimeError) and h.completed == []
        # Back up: the drain's next try runs it, and the letter is deleted.
        kept = await settle_dead_letter(h.fleet, root.to_json(), "worker.dead_letters", "m-1")
        assert kept is None
        assert [c.tag for c in h.completed] == ["job-dead-ack"]
        after = await h.fleet.dead_letter(root.to_json())  # a copy: recorded done, not again
        assert after is not None and after.acked
        assert not await h.fleet.complete("job-dead-ack")
        assert [c.tag for c in h.completed] == ["job-dead-ack"]


async def test_a_job_submitted_again_runs_the_acked_ones_continuation_first(
    harness_factory: Any,
) -> None:
    """An acked job whose continuation failed (its message comes back later) submitted
    again under its tag: the new generation replaced the chain, the acking message (or its
    dead letter) then found another generation and was deleted, and the continuation
    never ran.  ``submit`` runs it first; if it fails again, nothing is submitted."""
    async with harness_factory() as h:
        first = await h.fleet.submit("job-again", {"width": 0, "depth": 0})
        h.queue.clear()
        h.fail_continuation = 2  # down for the acking message, and for the first resubmit
        with pytest.raises(RuntimeError):
            await h.fleet.handle(first.to_json())
        with pytest.raises(RuntimeError):
            await h.fleet.submit("job-again", {"width": 0, "depth": 0})
        state = await h.fleet.ack.get("job-again")
        assert state is not None and state.acked and state.chain_id == first.chain_id
        assert h.queue == [] and h.completed == []  # nothing created, nothing sent
        second = await h.fleet.submit("job-again", {"width": 0, "depth": 0})
        assert [c.chain_id for c in h.completed] == [first.chain_id]
        assert second.chain_id != first.chain_id
        for late in (h.fleet.handle(first.to_json(), 2), h.fleet.dead_letter(first.to_json())):
            await late  # the old generation's copies: its continuation is recorded done
        assert [c.chain_id for c in h.completed] == [first.chain_id]


async def test_an_acked_job_still_continues_from_a_dead_letter_kept_thirteen_days(
    ddb_local_endpoint: str, ddb_table: TableSpec, harness_factory: Any
) -> None:
    """The acked chain is the only record that its job still owes its continuation: the
    fleet's client keeps it as long as the fleet's messages may be delivered (14 days),
    not the client's default day, after which the letter was deleted and the job never
    continued."""
    async with harness_factory() as made:  # Fleet.connect's client
        tombstone = made.fleet.ack.tombstone_ttl
        assert tombstone == DEFAULT_MARKER_TTL
    later = [0.0]
    # the same client, with a clock the test moves
    async with moved_clock(ddb_local_endpoint, ddb_table, tree, later) as h:
        await h.fleet.submit("job-late", {"width": 0, "depth": 0})  # the root is the job
        root = h.queue.pop().to_json()
        h.fail_continuation = 6  # down for every receive, and at the first drain
        for receive in range(1, 6):
            with pytest.raises(RuntimeError):
                await h.fleet.handle(root, receive_count=receive)
        kept = await settle_dead_letter(h.fleet, root, "worker.dead_letters", "m-1")
        assert isinstance(kept, RuntimeError) and h.completed == []
        later[0] = 13 * 86_400.0  # the dead-letter queue keeps the letter 14 days
        assert await settle_dead_letter(h.fleet, root, "worker.dead_letters", "m-1") is None
        assert [c.tag for c in h.completed] == ["job-late"]


async def test_a_fleet_with_a_continuation_refuses_a_client_that_forgets_acked_jobs_sooner(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    async with XorAckDynamoDB.connect(
        table=ddb_table.name, endpoint_url=ddb_local_endpoint, region_name="us-east-1"
    ) as ack:  # the client's default: an acked chain is kept one day
        h = Harness()
        with pytest.raises(TombstoneTooShort) as refused:
            Fleet(ack, handler=tree, send=h.send, continuation=h.continuation)
        assert isinstance(refused.value, UnsuitableClient)
        assert "tombstone_ttl=1.2096e+06 or more, or use Fleet.connect" in str(refused.value)
        Fleet(ack, handler=tree, send=h.send)  # no continuation owed: nothing to keep


async def test_a_continuation_message_carries_a_group_id_sqs_takes_whatever_the_tag() -> None:
    # SQS refuses a MessageGroupId over 128 characters or with a character that is no ASCII
    # letter, digit or punctuation; a tag may be 2,048 bytes of any UTF-8. Refused, the
    # continuation would fail on every path, and the acked job never continue.
    class Sqs:
        def __init__(self) -> None:
            self.sent: list[dict[str, Any]] = []

        async def send_message(self, **request: Any) -> None:
            self.sent.append(request)

    sqs = Sqs()
    then = QueueContinuation(sqs, "https://sqs.us-east-1.amazonaws.com/1/completed.fifo")
    tags = ["batch-7/file-0", "s3://bucket/a file.txt", "données/été", "x" * 129, "batch-7/file-0"]
    for tag in tags:
        await then(Completed(tag, b"\x01" * 8))
    groups = [request["MessageGroupId"] for request in sqs.sent]
    assert all(re.fullmatch(r"[!-~]{1,128}", group) for group in groups), groups
    assert groups[0] == groups[4] == "batch-7/file-0"  # a tag SQS takes is the group itself
    assert len(set(groups)) == 4  # one group per job
    assert [json.loads(r["MessageBody"])["tag"] for r in sqs.sent] == tags


def _nested(depth: int) -> list[Any]:
    """Lists ``depth`` levels deep (``[]`` is 1), built without recursing."""
    inner: list[Any] = []
    for _ in range(depth - 1):
        inner = [inner]
    return inner


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({1, 2}, "not JSON data"),
        (b"bytes", "not JSON data"),
        (10**5000, "not JSON data"),  # more digits than int to str takes
        (_nested(MAX_DEPTH + 1), "nested too deep"),
        (_nested(990), "nested too deep"),  # as deep as a json.loads in a request may read
    ],
    ids=["set", "bytes", "huge-int", "just-too-deep", "deep"],
)
async def test_a_payload_the_root_message_cannot_carry_makes_no_chain(
    harness_factory: Any, payload: Any, says: str
) -> None:
    """Once the chain was made, then the root message failed to build (``json.dumps``):
    a live job with no message to run it, stalled until its deadline or a sweep."""
    async with harness_factory() as h:
        for call in (h.fleet.submit, h.fleet.replay):
            with pytest.raises(InvalidPayload, match=says) as refused:
                await call("job-odd-payload", payload)
            assert isinstance(refused.value, InvalidArgument)  # caught by meaning, too
            assert await h.fleet.ack.get("job-odd-payload") is None and h.queue == []
        deepest = _nested(MAX_DEPTH)
        await h.fleet.submit("job-odd-payload", deepest)  # as deep as may be: sent, read back
        assert h.queue.pop().payload == deepest


async def test_dead_letter_fails_the_chain_and_replay_counts_only_the_new_run(
    harness_factory: Any,
) -> None:
    async with harness_factory() as h:
        await h.fleet.submit("job-dlq", {"width": 2, "depth": 1})
        root = h.queue.pop()
        await h.fleet.handle(root.to_json())
        done, dead = h.queue.pop(0), h.queue.pop(0)
        await h.fleet.handle(done.to_json())
        with pytest.raises(ReplayRefused):
            await h.fleet.replay("job-dlq", {"width": 2, "depth": 1})  # still live
        state = await h.fleet.dead_letter(dead.to_json())
        assert state is not None and state.failed and state.reason == "dead-letter"
        await h.fleet.replay("job-dlq", {"width": 2, "depth": 1})
        # The old generation's messages find another chain: dropped, not counted.
        for env in (root, done, dead):
            assert (await h.fleet.handle(env.to_json())).verdict is Verdict.CLOSED
        await h.drain()
        assert [c.tag for c in h.completed] == ["job-dlq"]
        with pytest.raises(ReplayRefused):
            await h.fleet.replay("job-dlq", {"width": 2, "depth": 1})


async def test_a_dead_letter_of_a_message_whose_stamp_landed_leaves_its_live_job_alone(
    harness_factory: Any,
) -> None:
    # A Lambda batch that times out (one slow record) returns every record to the queue,
    # those whose writes landed too: after maxReceiveCount they are dead letters, with
    # nothing of their work missing. Failing their job would fail work that is whole.
    async with harness_factory() as h:
        await h.fleet.submit("job-landed", {"width": 2, "depth": 1})
        await h.fleet.handle(h.queue.pop().to_json())
        landed, pending = h.queue
        h.queue.clear()
        assert (await h.fleet.handle(landed.to_json())).verdict is Verdict.APPLIED
        state = await h.fleet.dead_letter(landed.to_json())
        assert state is not None and state.live
        assert (await h.fleet.handle(pending.to_json())).acked
        assert [c.tag for c in h.completed] == ["job-landed"]


async def test_a_dead_letter_whose_stamp_landed_beyond_the_window_is_found_in_the_pages(
    harness_factory: Any,
) -> None:
    async with harness_factory(token_window=4, page_size=2) as h:
        await h.fleet.submit("job-landed-far", {"width": 10, "depth": 1})
        await h.fleet.handle(h.queue.pop().to_json())
        children = list(h.queue)
        h.queue.clear()
        for env in children[:-1]:
            await h.fleet.handle(env.to_json())
        state = await h.fleet.dead_letter(children[0].to_json())  # evicted: in a page
        assert state is not None and state.live
        state = await h.fleet.dead_letter(children[-1].to_json())  # never written: dead
        assert state is not None and state.failed and state.reason == "dead-letter"


async def test_a_missing_page_is_refused_not_guessed(harness_factory: Any) -> None:
    async with harness_factory(token_window=4, page_size=2) as h:
        root = await h.fleet.submit("job-page", {"width": 12, "depth": 1})
        h.queue.clear()
        await h.fleet.handle(root.to_json())
        children = list(h.queue)
        for env in children[:8]:
            await h.fleet.handle(env.to_json())
        state = await h.fleet.ack.get("job-page")
        assert state is not None
        await h.fleet.ack._client.delete_item(
            TableName=h.fleet.ack.table,
            Key={"tagID": {"S": page_key("job-page", state.chain_id, 1)}},
        )
        h.fleet.markers._pages.clear()
        with pytest.raises(MarkerMissing):
            await h.fleet.handle(children[0].to_json())


async def test_a_write_refused_on_a_moved_chain_is_checked_again_on_the_refusals_item(
    harness_factory: Any,
) -> None:
    async with harness_factory() as h:
        await h.fleet.submit("job-moved", {"width": 2, "depth": 1})
        root = h.queue.pop()
        await h.fleet.handle(root.to_json())
        first, second = h.queue
        state = await h.fleet.ack.get("job-moved")
        assert state is not None
        applied = await h.fleet.once.apply(first, first.stamp, state)
        assert applied.verdict is Verdict.APPLIED
        reads = h.fleet.ack.stats.requests["GetItem"]
        # Planned on the same, now old, state: refused (ChainMoved), checked again on the
        # item the refusal returned, written there: no read, no second copy of anything.
        again = await h.fleet.once.apply(second, second.stamp, state)
        assert again.verdict is Verdict.APPLIED and again.acked
        assert h.fleet.ack.stats.requests["GetItem"] == reads
        assert h.fleet.once.conflicts == 1
        # And a copy of the first, planned on that old state too, is found a duplicate.
        assert (await h.fleet.once.apply(first, first.stamp, state)).verdict is Verdict.DUPLICATE


def test_the_fleet_uses_only_the_clients_public_api() -> None:
    package = Path(fleet_package.__file__).parent
    for path in package.glob("*.py"):
        text = path.read_text()
        for private in ("_core", "._run(", "ack._"):
            assert private not in text, f"{path.name} uses {private}"


async def test_a_dead_letter_racing_a_replay_leaves_the_new_generation_alone(
    harness_factory: Any,
) -> None:
    async with harness_factory() as h:
        await h.fleet.submit("job-race", {"width": 2, "depth": 1})
        await h.fleet.handle(h.queue.pop().to_json())
        dead, other = h.queue
        h.queue.clear()
        ack = h.fleet.ack
        real_fail = ack.fail

        async def replayed_in_between(tag: str, *args: Any, **kwargs: Any) -> Any:
            # After the dead letter read its chain live, before its write: the other
            # message of the generation went dead too, and the job was replayed.
            ack.fail = real_fail  # type: ignore[method-assign]
            await h.fleet.dead_letter(other.to_json())
            await h.fleet.replay("job-race", {"width": 2, "depth": 1})
            return await real_fail(tag, *args, **kwargs)

        ack.fail = replayed_in_between  # type: ignore[method-assign]
        after = await h.fleet.dead_letter(dead.to_json())
        state = await ack.get("job-race")
        assert state is not None and state.live and state.chain_id != dead.chain_id
        assert after == state  # the chain as it is: the replay's generation, untouched
        await h.drain()
        assert [c.tag for c in h.completed] == ["job-race"]


@asynccontextmanager
async def moved_clock(
    endpoint: str, table: TableSpec, handler: Any, later: list[float], **options: Any
) -> AsyncIterator[Harness]:
    """A harness whose fleet's clock is ``later[0]`` s ahead: deadlines pass when the test
    moves it, not after a sleep (Fleet.connect's client, with that clock)."""
    h = Harness()
    async with XorAckDynamoDB.connect(
        table=table.name,
        endpoint_url=endpoint,
        region_name="us-east-1",
        token_window=FLEET_TOKEN_WINDOW,
        tombstone_ttl=DEFAULT_MARKER_TTL,
        clock=lambda: time.time() + later[0],
    ) as ack:
        h.fleet = Fleet(ack, handler=handler, send=h.send, continuation=h.continuation, **options)
        yield h


async def test_a_stalled_job_is_failed_by_the_sweeper_and_its_messages_dropped(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    ran: list[Any] = []

    def counting(message: Any) -> list[Any]:
        ran.append(message.payload)
        return [1, 1] if message.payload == 0 else []

    later = [0.0]
    async with moved_clock(ddb_local_endpoint, ddb_table, counting, later, timeout=60) as h:
        await h.fleet.submit("job-stall", 0)  # a deadline 60 s from now
        await h.fleet.handle(h.queue.pop().to_json())
        children = list(h.queue)
        h.queue.clear()
        assert await h.fleet.ack.sweep() == []  # not overdue yet: nothing to fail
        later[0] = 61.0  # the job stalls: its two children never ran in time
        swept = await h.fleet.ack.sweep()
        assert [(s.tag, s.reason) for s in swept] == [("job-stall", "timeout")]
        for env in children:
            handled = await h.fleet.handle(env.to_json())
            assert handled.verdict is Verdict.CLOSED and not handled.acked
        assert ran == [0] and h.completed == []  # no handler ran on the failed chain
        await h.fleet.replay("job-stall", 0, timeout=60)  # 60 s from the moved clock
        await h.drain()
        assert [c.tag for c in h.completed] == ["job-stall"]


async def test_a_write_that_meets_the_deadline_fails_the_job_and_is_dropped(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    later = [0.0]
    ran: list[Any] = []

    async def slow(message: Any) -> list[Any]:
        ran.append(message.payload)
        if message.payload == 1:
            later[0] = 61.0  # read in time, written too late: the deadline passes meanwhile
        return [1] if message.payload == 0 else []

    async with moved_clock(ddb_local_endpoint, ddb_table, slow, later, timeout=60) as h:
        await h.fleet.submit("job-late", 0)
        await h.fleet.handle(h.queue.pop().to_json())
        late = await h.fleet.handle(h.queue.pop().to_json())
        assert ran == [0, 1]  # its handler ran: the message was not dropped before it
        assert late.verdict is Verdict.CLOSED and not late.acked
        assert h.queue == []  # nothing of the late message counts
        state = await h.fleet.ack.get("job-late")
        assert state is not None and state.failed and state.reason == "timeout"
        assert await h.fleet.ack.sweep() == []  # already failed, once
        assert h.completed == []


async def test_messages_finishing_together_share_writes_and_each_lands_once(
    harness_factory: Any,
) -> None:
    # A window of 8 tokens, pages of 4: 30 siblings finishing at once share writes while
    # the window has room, then go one by one, evicting tokens into pages.
    async with harness_factory(token_window=8, page_size=4) as h:
        await h.fleet.submit("job-together", {"width": 30, "depth": 1})
        root = h.queue.pop()
        await h.fleet.handle(root.to_json())
        children = list(h.queue)
        h.queue.clear()
        handled = await asyncio.gather(*(h.fleet.handle(c.to_json()) for c in children[:-1]))
        assert all(x.verdict is Verdict.APPLIED and not x.acked for x in handled)
        assert h.fleet.once.coalesced > 0
        state = await h.fleet.ack.get("job-together")
        assert state is not None and state.version < 1 + 1 + 29  # fewer writes than messages
        assert len(state.tokens) == 8 and h.fleet.markers.writes > 0  # pages were written
        # Every message again, each far behind the window now: found in the pages.
        for env in [root, *children[:-1]]:
            again = await h.fleet.handle(env.to_json())
            assert again.verdict is Verdict.DUPLICATE, env.index
        last = await h.fleet.handle(children[-1].to_json())
        assert last.verdict is Verdict.APPLIED and last.acked
        assert h.queue == [] and [c.tag for c in h.completed] == ["job-together"]


async def test_copies_of_one_message_in_one_write_batch_land_once(harness_factory: Any) -> None:
    async with harness_factory() as h:
        await h.fleet.submit("job-twice", {"width": 3, "depth": 1})
        await h.fleet.handle(h.queue.pop().to_json())
        first, second, third = h.queue
        h.queue.clear()
        copies = [first, first, second, second, first]
        handled = await asyncio.gather(*(h.fleet.handle(c.to_json()) for c in copies))
        verdicts = sorted(x.verdict.value for x in handled)
        assert verdicts == ["applied", "applied", "duplicate", "duplicate", "duplicate"]
        assert (await h.fleet.handle(third.to_json())).acked
        assert [c.tag for c in h.completed] == ["job-twice"]


async def test_a_replay_refused_before_its_create_logs_no_replayed_line(
    harness_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The "replayed" line went out before submit's checks, so a replay refused for its
    # payload (or its queue) was logged as replayed though nothing was made or sent.
    async with harness_factory() as h:
        with caplog.at_level(logging.INFO, logger="xor_ack_dynamodb.fleet"):
            with pytest.raises(InvalidPayload):
                await h.fleet.replay("job-never-replayed", {1, 2})
            assert not [r for r in caplog.messages if '"event":"replayed"' in r]
            await h.fleet.replay("job-never-replayed", 0)
        assert [r for r in caplog.messages if '"event":"replayed"' in r]


async def test_a_tag_too_long_for_its_markers_is_refused_before_anything_is_written(
    harness_factory: Any,
) -> None:
    # A tag near DynamoDB's 2,048 bytes was created, then its markers' keys (the tag and a
    # suffix) were refused with a raw ValidationException at every receive of its messages.
    longest = "j" * MAX_JOB_TAG_BYTES
    async with harness_factory(token_window=4, page_size=2) as h:
        for call in (h.fleet.submit, h.fleet.replay):
            with pytest.raises(InvalidTag, match=f"at most {MAX_JOB_TAG_BYTES} bytes"):
                await call(longest + "j", {"width": 10, "depth": 1})
            assert h.queue == [] and await h.fleet.ack.get(longest + "j") is None
        children, state = await _far_job(h, longest)  # its pages are written: keys fit
        assert h.fleet.markers.has_page(longest, state.chain_id, 0)
        assert (await h.fleet.handle(children[-1].to_json())).acked
        assert [c.tag for c in h.completed] == [longest]


async def test_a_tag_holding_the_markers_infix_is_refused_before_anything_is_written(
    harness_factory: Any,
) -> None:
    # Accepted, its job ran and acked, and every stream consumer then took its chain for
    # a marker (``is_marker_key``): its Acked event, and so its continuation, never came.
    tag = "tenant-7#xor-ack-fleet/nightly"
    async with harness_factory() as h:
        for call in (h.fleet.submit, h.fleet.replay):
            with pytest.raises(InvalidTag, match="must not hold '#xor-ack-fleet/'"):
                await call(tag, 0)
            assert h.queue == [] and await h.fleet.ack.get(tag) is None


async def test_a_job_past_its_deadline_before_its_root_ran_is_replayed_or_submitted_again(
    harness_factory: Any,
) -> None:
    # With no sweeper run in between, replay refused the overdue job as "live" (no write
    # could land on it, every worker dropped its root), and submit again re-sent that
    # dropped root, saying "submitted", its new deadline ignored: the job never ran.
    ran: list[Any] = []

    def handler(message: Message) -> list[Any]:
        ran.append(message.payload)
        return []

    async with harness_factory(handler) as h:
        for n, call in enumerate((h.fleet.replay, h.fleet.submit)):
            tag = f"job-overdue-{n}"
            await h.fleet.submit(tag, "first", timeout=0.3)
            first = h.queue.pop()
            await asyncio.sleep(0.5)  # the deadline passes before any worker took the root
            assert (await h.fleet.handle(first.to_json())).verdict is Verdict.CLOSED
            root = await call(tag, "again", timeout=60)
            assert root.chain_id != first.chain_id  # a new generation, the old one failed
            assert (await h.fleet.handle(h.queue.pop().to_json())).acked
        assert ran == ["again", "again"]
        assert sorted(c.tag for c in h.completed) == ["job-overdue-0", "job-overdue-1"]


async def _far_job(h: Any, tag: str) -> tuple[list[Envelope], Any]:
    """A job of ten children with a window of 4: its first children's tokens are in pages."""
    root = await h.fleet.submit(tag, {"width": 10, "depth": 1})
    h.queue.clear()
    await h.fleet.handle(root.to_json())
    children = list(h.queue)
    h.queue.clear()
    for env in children[:-1]:
        await h.fleet.handle(env.to_json())
    return children, await h.fleet.ack.get(tag)


async def test_page_zero_lives_as_long_as_a_job_may(harness_factory: Any) -> None:
    # Page 0 (the version at which the window was first full) places every later token for
    # the whole life of the job, but it expired with the other markers, 14 days after its
    # write: a job live longer then took a far duplicate for new and applied it twice, and
    # never acked.
    async with harness_factory(token_window=4, page_size=2) as h:
        _, state = await _far_job(h, "job-long-lived")
        key = page_key("job-long-lived", state.chain_id, 0)
        item = await h.fleet.ack._client.get_item(
            TableName=h.fleet.ack.table, Key={"tagID": {"S": key}}, ConsistentRead=True
        )
        expires = int(item["Item"]["expires_at"]["N"])
        assert expires - state.created_at >= 366 * 86_400 - 1  # a year (whole seconds)


async def test_a_page_zero_gone_from_a_chain_older_than_its_lifetime_is_refused(
    harness_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without page 0 a full window was taken as the first full one whatever the chain's age:
    # once page 0 may have expired, a far duplicate was applied a second time.
    from xor_ack_dynamodb.fleet import once

    async with harness_factory(token_window=4, page_size=2) as h:
        children, state = await _far_job(h, "job-older-than-page-0")
        await h.fleet.ack._client.delete_item(
            TableName=h.fleet.ack.table,
            Key={"tagID": {"S": page_key("job-older-than-page-0", state.chain_id, 0)}},
        )
        h.fleet.markers._pages.clear()  # a new process: nothing remembered
        later = state.created_at + 367 * 86_400
        clock = type("Clock", (), {"time": staticmethod(lambda: later)})
        monkeypatch.setattr(once, "time", clock, raising=False)
        with pytest.raises(MarkerMissing):
            await h.fleet.handle(children[0].to_json())
        assert await h.fleet.ack.get("job-older-than-page-0") == state  # nothing written


async def test_a_submit_writes_the_chain_once_and_reads_it_once(harness_factory: Any) -> None:
    """A submit read back the chain it had just created (a GetItem per job) for its id.  It
    reads once before the create: an acked run under the tag may owe its continuation
    (a fleet without a continuation does not read)."""
    async with harness_factory() as h:
        before = dict(h.fleet.ack.stats.requests)
        root = await h.fleet.submit("job-one-request", {"width": 0, "depth": 0})
        sent = {
            op: count - before.get(op, 0)
            for op, count in h.fleet.ack.stats.requests.items()
            if count != before.get(op, 0)
        }
        assert sent == {"GetItem": 1, "UpdateItem": 1}, sent
        state = await h.fleet.ack.get("job-one-request")
        assert state is not None and root.chain_id == state.chain_id
        assert [m.message_id for m in h.queue] == [root.message_id]
