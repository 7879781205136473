"""The fleet's runtime at its edges: a one-second visibility timeout extended in time, a
handler that calls ``sys.exit()`` (its message fails, the worker goes on), a continuation
that raises ``CancelledError`` though nothing cancels it (backed off as a failure, and the
dead-letter drain goes on past it).  SQS is a scripted peer, chains are on DynamoDB Local."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from xor_ack_dynamodb.fleet import Completed, Envelope, Fleet, Message, Verdict
from xor_ack_dynamodb.fleet.worker import Worker
from xor_ack_dynamodb.table import TableSpec


class _Peer:
    """A scripted SQS queue: each receive gives the next batch, then none; it records
    receives (with their time), deletes and visibility changes (with their time)."""

    def __init__(self, batches: list[list[dict[str, Any]]]) -> None:
        self.batches = batches
        self.received: list[tuple[str, float]] = []
        self.deleted: list[str] = []
        self.visibility: list[tuple[str, int, float]] = []

    async def receive_message(self, **request: Any) -> Any:
        if not self.batches:
            await asyncio.sleep(request["WaitTimeSeconds"])
            return {"Messages": []}
        batch = self.batches.pop(0)[: request["MaxNumberOfMessages"]]
        now = time.monotonic()
        self.received.extend((m["ReceiptHandle"], now) for m in batch)
        return {"Messages": batch}

    async def delete_message(self, **request: Any) -> None:
        self.deleted.append(request["ReceiptHandle"])

    async def change_message_visibility(self, **request: Any) -> None:
        self.visibility.append(
            (request["ReceiptHandle"], request["VisibilityTimeout"], time.monotonic())
        )


async def run_two(fleet: Fleet, first: Envelope, second: Envelope) -> tuple[Any, _Peer]:
    """A worker given ``first``, then ``second`` (receipts r1, r2), run until r2 is deleted
    (15 s at most): its stats and the peer."""
    peer = _Peer([[_message(first.to_json(), "r1")], [_message(second.to_json(), "r2")]])
    worker = Worker(fleet, peer, "work", wait_time=1)  # type: ignore[arg-type]
    stop = asyncio.Event()
    running = asyncio.ensure_future(worker.run(stop))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 15
    while "r2" not in peer.deleted and loop.time() < deadline:
        await asyncio.sleep(0.05)
    stop.set()
    return await running, peer


def _message(body: str, receipt: str) -> dict[str, Any]:
    return {
        "MessageId": receipt,
        "ReceiptHandle": receipt,
        "Body": body,
        "Attributes": {"ApproximateReceiveCount": "1"},
    }


async def test_a_visibility_timeout_of_one_second_is_extended_before_it_runs_out() -> None:
    """``Worker(visibility_timeout=1)`` (``--visibility-timeout 1`` is accepted): the keeper
    waits ``max(1.0, timeout / 3)`` = 1 s before its first extension, i.e. exactly when
    the message is visible again; SQS hands it to another worker while its handler still
    runs, and it runs twice at once."""

    class Slow:
        async def handle(self, body: str, receive_count: int) -> Any:
            await asyncio.sleep(2.5)
            return type("Handled", (), {"verdict": Verdict.APPLIED})()

    peer = _Peer([[_message("m", "r1")]])
    worker = Worker(Slow(), peer, "work", wait_time=1, visibility_timeout=1)  # type: ignore[arg-type]
    stop = asyncio.Event()
    running = asyncio.ensure_future(worker.run(stop))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while peer.deleted != ["r1"]:
        assert loop.time() < deadline
        await asyncio.sleep(0.05)
    handled_at = time.monotonic()
    stop.set()
    await running
    received_at = dict(peer.received)["r1"]
    extensions = [at - received_at for handle, _, at in peer.visibility if handle == "r1"]
    # Each extension must reach SQS before the message's hidden period (1 s) runs out.
    starts = [0.0, *extensions]
    late = [
        (round(a, 2), round(b, 2))
        for a, b in zip(starts, [*extensions, handled_at - received_at], strict=True)
        if b - a >= 1.0
    ]
    assert not late, (
        f"visible again while its handler ran (hidden 1 s from each of these, next "
        f"extension or the end at): {late}"
    )


class _ListSender:
    def __init__(self) -> None:
        self.sent: list[Envelope] = []

    async def __call__(self, envelopes: Sequence[Envelope]) -> None:
        self.sent.extend(envelopes)


@pytest.mark.ddblocal
def test_a_handler_that_calls_sys_exit_fails_its_message_and_the_worker_goes_on(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """The worker promises "No message stops the worker's loops ... whatever it raises is one
    log line and one count".  A plain handler that ends in ``sys.exit(0)`` (it calls a
    click command's ``main()``, which exits in standalone mode) raises ``SystemExit`` in its
    thread; the worker re-raises it out of the message's task, the event loop stops and
    ``asyncio.run`` (``xor-ack worker``) exits with status 0: no ``stopped`` line, the other
    messages in hand neither handled nor released, and the queue's next messages never
    handled by this worker."""

    def handler(message: Message) -> list[Any]:
        if message.payload == "exit":
            sys.exit(0)  # what click's standalone main() does once its command returns
        return []

    async def main() -> tuple[Counter[str], _Peer]:
        sender = _ListSender()
        async with Fleet.connect(
            table=ddb_table.name,
            endpoint_url=ddb_local_endpoint,
            region_name="us-east-1",
            handler=handler,
            send=sender,
        ) as fleet:
            first = await fleet.submit("review-sys-exit-1", "exit")
            second = await fleet.submit("review-sys-exit-2", "fine")
            return await run_two(fleet, first, second)

    try:
        stats, peer = asyncio.run(main())
    except SystemExit as exc:
        pytest.fail(f"the handler's SystemExit({exc.code}) escaped the worker and ended its loop")
    assert stats["failed"] == 1 and stats["applied"] == 1
    assert peer.deleted == ["r2"]


async def _cancelled_by_another() -> None:
    """Await a future that the loop cancels: ``CancelledError`` in a task nobody cancels."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(future.cancel)
    await future


class _Queues:
    """Scripted SQS queues by URL: each receive of a queue gives its next batch, then none;
    deletes and visibility changes recorded by receipt."""

    def __init__(self, batches: dict[str, list[list[dict[str, Any]]]]) -> None:
        self.batches = batches
        self.deleted: list[str] = []
        self.visibility: list[tuple[str, int]] = []

    async def receive_message(self, **request: Any) -> Any:
        waiting = self.batches.get(request["QueueUrl"], [])
        if not waiting:
            await asyncio.sleep(request.get("WaitTimeSeconds", 0))
            return {"Messages": []}
        return {"Messages": waiting.pop(0)[: request["MaxNumberOfMessages"]]}

    async def delete_message(self, **request: Any) -> None:
        self.deleted.append(request["ReceiptHandle"])

    async def change_message_visibility(self, **request: Any) -> None:
        self.visibility.append((request["ReceiptHandle"], request["VisibilityTimeout"]))


@pytest.mark.ddblocal
async def test_a_continuation_raising_cancelled_error_is_backed_off_not_released(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """A handler whose await raises ``CancelledError`` though nobody cancelled its message
    fails with the back-off (``HandlerCancelled``, test_handler_cancelled.py).  The same
    from the continuation (a future it awaited, cancelled by someone else) is taken for the
    worker stopping: the acking message is "released" (visibility 0, received again at
    once, over and over), no failure counted or logged, and the message's task ends
    cancelled."""

    async def continuation(done: Completed) -> None:
        await _cancelled_by_another()

    async with Fleet.connect(
        table=ddb_table.name,
        endpoint_url=ddb_local_endpoint,
        region_name="us-east-1",
        handler=lambda message: [],
        send=_ListSender(),
        continuation=continuation,
    ) as fleet:
        root = await fleet.submit("review-cancelled-continuation", None)
        peer = _Peer([[_message(root.to_json(), "r1")]])
        worker = Worker(fleet, peer, "work", wait_time=1, visibility_timeout=30)  # type: ignore[arg-type]
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 15
        while not peer.visibility and loop.time() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        stats = await running
    changes = [(receipt, seconds) for receipt, seconds, _ in peer.visibility]
    assert stats["released"] == 0 and stats["failed"] == 1, dict(stats)
    assert changes == [("r1", 2)], f"visibility changes: {changes} (0: released at once)"


@pytest.mark.ddblocal
async def test_the_dead_letter_drain_survives_a_continuation_raising_cancelled_error(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """The dead-letter drain settles each letter "and goes on to the next" whatever fails.
    A letter of an acked job runs its continuation; one raising ``CancelledError`` (a
    future it awaited was cancelled by someone else) is no ``Exception``: it passes
    ``settle_dead_letter`` and ``_one_dead_letter`` and ends the drain's task for good.
    The next dead letter, of another job, is never settled: that job is never failed."""

    async def continuation(done: Completed) -> None:
        await _cancelled_by_another()

    common: dict[str, Any] = {
        "table": ddb_table.name,
        "endpoint_url": ddb_local_endpoint,
        "region_name": "us-east-1",
        "handler": lambda message: [],
        "send": _ListSender(),
    }
    async with Fleet.connect(**common) as plain:  # acks a job; runs no continuation
        acked = await plain.submit("review-dlq-acked", None)
        assert (await plain.handle(acked.to_json())).acked
        stalled = await plain.submit("review-dlq-stalled", None)  # its root never runs
    async with Fleet.connect(**common, continuation=continuation) as fleet:
        peer = _Queues(
            {
                "dlq": [
                    [_message(acked.to_json(), "d1")],
                    [_message(stalled.to_json(), "d2")],
                ]
            }
        )
        worker = Worker(  # type: ignore[arg-type]
            fleet, peer, "work", wait_time=1, dead_letter_queue_url="dlq"
        )
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 6
        while "d2" not in peer.deleted and loop.time() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await running
        state = await fleet.ack.get("review-dlq-stalled")
    assert state is not None and state.failed and state.reason == "dead-letter", (
        f"the second dead letter's job: {state}; deleted: {peer.deleted}"
    )
