"""No loop that one bad item can stop: each fleet loop is fed a hostile item, then a good one.

The worker's receive loop and dead-letter drain (moto's SQS, DynamoDB Local), the Lambda
handlers (work and dead letters); envelopes judged the same on every path; what a
handler's ``Message`` says; the token window a message was sent with.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from typing import Any

import pytest

from xor_ack_dynamodb.dynamodb import loops as _loops
from xor_ack_dynamodb.fleet import Envelope, Message, SqsBatchHandler
from xor_ack_dynamodb.fleet.dead_letters import settle_dead_letter
from xor_ack_dynamodb.fleet.envelope import root_envelope
from xor_ack_dynamodb.fleet.errors import InvalidEnvelope, WindowMismatch
from xor_ack_dynamodb.fleet.worker import Worker
from xor_ack_dynamodb.table import TableSpec

from .sqs_fixtures import make_queues, sqs
from .test_lambda import Box, batch, opener
from .test_worker import fleet_on, wait_for

pytestmark = pytest.mark.ddblocal

#: A well-formed envelope of a tag no chain can have (3,000 bytes > DynamoDB's 2,048).
IMPOSSIBLE = root_envelope("x" * 3000, b"\x01" * 8, None).to_json()


class Recorder:
    """Stands for the ``xor_ack.item_failures`` counter."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def add(self, amount: float, attributes: dict[str, Any] | None = None) -> None:
        attributes = attributes or {}
        self.counts[(attributes["loop"], attributes["error"])] += int(amount)


@pytest.fixture
def failures(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(_loops, "counter", recorder)
    return recorder


def test_an_impossible_tag_is_an_invalid_envelope_on_every_path() -> None:
    with pytest.raises(InvalidEnvelope, match="2048 bytes"):
        Envelope.from_json(IMPOSSIBLE)
    with pytest.raises(InvalidEnvelope, match="lone surrogates"):
        Envelope.from_json(root_envelope("\ud800", b"\x01", None).to_json())
    fine = root_envelope("job", b"\x01", {"n": 1}, window=64)
    assert Envelope.from_json(fine.to_json()) == fine
    with pytest.raises(InvalidEnvelope, match="window"):
        Envelope.from_json(fine.to_json().replace('"window":64', '"window":"64"'))


async def test_a_dead_letter_queue_holding_an_impossible_envelope_still_fails_the_next_poison_job(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec, failures: Recorder
) -> None:
    work, dlq = make_queues(moto_endpoint)
    idle, _ = make_queues(moto_endpoint)  # the worker's own work queue stays empty
    async with fleet_on(
        moto_endpoint, ddb_local_endpoint, ddb_table.name, work, lambda m: [], []
    ) as (fleet, client):
        sqs(moto_endpoint).send_message(QueueUrl=dlq, MessageBody=IMPOSSIBLE)
        worker = Worker(fleet, client, idle, wait_time=1, dead_letter_queue_url=dlq)
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        await wait_for(lambda: worker.stats["dead_letters"] == 1, 20)  # dropped, reported
        poison = await fleet.submit("poison-job", None)  # its root exhausted its receives
        sqs(moto_endpoint).send_message(QueueUrl=dlq, MessageBody=poison.to_json())
        await wait_for(lambda: worker.stats["dead_letters"] == 2, 20)
        assert not running.done()  # the drain never stopped
        stop.set()
        await running
        state = await fleet.ack.get("poison-job")
    assert state is not None and state.failed and state.reason == "dead-letter"
    assert failures.counts[("worker.dead_letters", "InvalidEnvelope")] == 1
    assert not sqs(moto_endpoint).receive_message(QueueUrl=dlq, WaitTimeSeconds=0).get("Messages")


async def test_a_dead_letter_without_a_body_is_dropped_not_kept_for_ever(
    harness_factory: Any, failures: Recorder
) -> None:
    async with harness_factory() as h:
        kept = await settle_dead_letter(h.fleet, None, "worker.dead_letters", "m-1")
    assert kept is None  # no chain to fail, now or ever: deleted, not retried
    assert failures.counts[("worker.dead_letters", "InvalidEnvelope")] == 1


async def test_the_dead_letter_drain_keeps_a_letter_it_cannot_settle_yet_and_goes_on(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec, failures: Recorder
) -> None:
    work, dlq = make_queues(moto_endpoint, visibility=30)
    idle, _ = make_queues(moto_endpoint)  # the worker's own work queue stays empty
    async with fleet_on(
        moto_endpoint, ddb_local_endpoint, ddb_table.name, work, lambda m: [], []
    ) as (fleet, client):
        broken = await fleet.submit("broken-job", None)
        poison = await fleet.submit("poison-job-2", None)
        real = fleet.dead_letter

        async def dead_letter(body: Any) -> Any:
            if Envelope.from_json(body).tag == "broken-job":
                raise RuntimeError("DynamoDB is unreachable")  # as a transport error would
            return await real(body)

        fleet.dead_letter = dead_letter  # type: ignore[method-assign]
        for env in (broken, poison):
            sqs(moto_endpoint).send_message(QueueUrl=dlq, MessageBody=env.to_json())
        worker = Worker(fleet, client, idle, wait_time=1, dead_letter_queue_url=dlq)
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        await wait_for(lambda: worker.stats["dead_letters"] == 1, 20)
        stop.set()
        await running
        assert (await fleet.ack.get("poison-job-2")).reason == "dead-letter"  # type: ignore[union-attr]
        assert (await fleet.ack.get("broken-job")).live  # type: ignore[union-attr]
    assert worker.stats["dead_letter_errors"] == 1
    assert failures.counts[("worker.dead_letters", "RuntimeError")] == 1


async def test_the_receive_loop_reports_an_impossible_envelope_and_handles_the_next_job(
    moto_endpoint: str,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    failures: Recorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    work, _ = make_queues(moto_endpoint)
    done: list[str] = []
    seen: list[Message] = []

    def handler(message: Message) -> list[int]:
        seen.append(message)
        return [0] if message.payload else []

    async with fleet_on(moto_endpoint, ddb_local_endpoint, ddb_table.name, work, handler, done) as (
        fleet,
        client,
    ):
        sqs(moto_endpoint).send_message(QueueUrl=work, MessageBody=IMPOSSIBLE)
        root = await fleet.submit("good-job", 1)
        worker = Worker(fleet, client, work, wait_time=1, visibility_timeout=30)
        stop = asyncio.Event()
        with caplog.at_level(logging.INFO, logger="xor_ack_dynamodb.fleet"):
            running = asyncio.ensure_future(worker.run(stop))
            await wait_for(lambda: done == ["good-job"], 20)
            stop.set()
            stats = await running
    assert stats["invalid"] == 1 and stats["failed"] == 0  # never "handler-failed"
    assert failures.counts[("worker", "InvalidEnvelope")] == 1
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name.endswith("fleet")]
    assert [line["error"] for line in lines if line["event"] == "invalid-envelope"] == [
        "InvalidEnvelope"
    ]
    # A Message says what it is: what a re-send or a log line needs.
    first, child = sorted(seen, key=lambda m: m.parent_id is not None)
    assert first.body == root.to_json() and first.parent_id is None
    assert first.chain_id == root.chain_id and first.index is None
    assert child.parent_id == root.message_id and child.index == 0
    assert Envelope.from_json(child.body).id.hex() == child.message_id


def test_the_lambda_paths_judge_envelopes_as_the_worker_does(
    ddb_local_endpoint: str, ddb_table: TableSpec, failures: Recorder
) -> None:
    box = Box()
    open_fleet = opener(ddb_local_endpoint, ddb_table.name, box)
    work = SqsBatchHandler(open_fleet)
    dead = SqsBatchHandler(open_fleet, dead_letter=True)
    try:

        async def submitted() -> str:
            async with open_fleet() as fleet:
                return (await fleet.submit("lambda-poison", 0)).to_json()

        root = asyncio.run(submitted())
        # Work queue: reported, left to the redrive policy; the good one is handled.
        assert work(batch([IMPOSSIBLE, root]), None) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
        # A fleet of another token window sent it: refused before the handler, reported.
        foreign = json.dumps({**json.loads(root), "window": 32})
        assert work(batch([foreign]), None) == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
        # Dead letters: the impossible one is dropped (it never can be settled), reported.
        assert dead(batch([IMPOSSIBLE]), None) == {"batchItemFailures": []}
        assert dead.record_handler(batch([IMPOSSIBLE])["Records"][0]) is None
    finally:
        work.close()
        dead.close()
    assert failures.counts[("lambda", "InvalidEnvelope")] == 1
    assert failures.counts[("lambda", "WindowMismatch")] == 1
    assert failures.counts[("lambda.dead_letters", "InvalidEnvelope")] == 2


async def test_a_message_of_a_fleet_with_another_token_window_is_refused_before_its_handler(
    harness_factory: Any,
) -> None:
    ran: list[Message] = []
    async with harness_factory(handler=lambda m: ran.append(m) or []) as h:
        root = await h.fleet.submit("window-job", None)
        assert root.window == h.fleet.ack.token_window == 64
        foreign = Envelope(**{**root.__dict__, "window": 32})
        with pytest.raises(WindowMismatch, match=r"token window 32 .* token window 64") as caught:
            await h.fleet.handle(foreign.to_json())
        assert caught.value.code == "WindowMismatch" and ran == []
        assert (await h.fleet.ack.get("window-job")).version == 1  # type: ignore[union-attr]
        old = Envelope(**{**root.__dict__, "window": None})  # earlier versions said none
        assert (await h.fleet.handle(old.to_json())).acked
