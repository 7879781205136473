"""A handler whose await raises ``CancelledError`` though nobody cancelled its message (a
future it awaited was cancelled by someone else), and a plain handler returning a generator.

- In a Lambda batch, that message alone fails (``HandlerCancelled``): the whole invocation
  raised, and every message of the batch came back with the poison one.
- In a worker, it fails with the back-off; it was "released" as if the worker were
  stopping: received again at once, no failure counted or logged.
- A plain generator function's body runs in the thread too: it ran on the event loop,
  stalling the worker's other messages and its visibility extensions.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from xor_ack_dynamodb.fleet import Envelope, Fleet, Message
from xor_ack_dynamodb.fleet.lambda_sqs import SqsBatchHandler
from xor_ack_dynamodb.table import TableSpec

from .test_lambda import batch
from .test_worker import wait_for

pytestmark = pytest.mark.ddblocal


def _fleet(spec: TableSpec, endpoint: str, handler: Any, send: Any) -> Any:
    return Fleet.connect(
        table=spec.name, endpoint_url=endpoint, region_name="us-east-1", handler=handler, send=send
    )


async def _cancelled_by_another() -> None:
    gone = asyncio.get_running_loop().create_future()
    gone.cancel()
    await gone  # CancelledError, though nobody cancelled this task


def test_a_handler_raising_cancelled_error_fails_its_message_alone_in_a_batch(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    queue: list[Envelope] = []

    async def send(envelopes: Any) -> None:
        queue.extend(envelopes)

    async def handler(message: Message) -> list[Any]:
        if message.payload == "poison":
            await _cancelled_by_another()
        return []

    def open_fleet() -> Any:
        return _fleet(ddb_table, ddb_local_endpoint, handler, send)

    async def submit() -> None:
        async with open_fleet() as fleet:
            await fleet.submit("poison-job", "poison")
            await fleet.submit("good-job", "good")

    asyncio.run(submit())
    lambda_handler = SqsBatchHandler(open_fleet)
    try:
        poison, good = (e.to_json() for e in queue)
        response = lambda_handler(batch([poison, good]), None)
        assert response == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    finally:
        lambda_handler.close()


async def test_the_worker_backs_off_a_handler_raising_cancelled_error(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    from xor_ack_dynamodb.fleet import SqsSender
    from xor_ack_dynamodb.fleet.sqs import sqs_client
    from xor_ack_dynamodb.fleet.worker import Worker

    from .sqs_fixtures import make_queues

    work, _ = make_queues(moto_endpoint, max_receives=50)

    async def handler(message: Message) -> list[Any]:
        await _cancelled_by_another()
        return []

    async with (
        sqs_client(endpoint=moto_endpoint, region_name="us-east-1") as client,
        _fleet(ddb_table, ddb_local_endpoint, handler, SqsSender(client, work)) as fleet,
    ):
        await fleet.submit("cancelled-job", None)
        visibilities: list[int] = []  # what the worker set, once SQS answered

        class Recorded:  # the worker's client, its visibility changes recorded
            def __getattr__(self, name: str) -> Any:
                return getattr(client, name)

            async def change_message_visibility(self, **request: Any) -> Any:
                answer = await client.change_message_visibility(**request)
                visibilities.append(request["VisibilityTimeout"])
                return answer

        worker = Worker(fleet, Recorded(), work, concurrency=2, wait_time=1, visibility_timeout=30)
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        # Backed off (failed, visibility 2 s) or released (visibility 0): either ends it.
        await wait_for(lambda: visibilities, 30)
        stop.set()
        stats = await running
    assert stats["released"] == 0 and stats["failed"] >= 1, dict(stats)
    assert visibilities[0] == 2, visibilities  # the back-off of a first receive: 2**1 s


async def test_a_plain_generator_handler_does_not_block_the_event_loop(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    def pages(message: Message) -> Any:
        if message.payload == "root":
            for n in range(3):
                time.sleep(0.4)  # a blocking fetch of the next page of results
                yield n

    queue: list[Envelope] = []

    async def send(envelopes: Any) -> None:
        queue.extend(envelopes)

    async with _fleet(ddb_table, ddb_local_endpoint, pages, send) as fleet:
        root = await fleet.submit("generator-job", "root")
        gaps: list[float] = []

        async def ticker() -> None:  # the worker's other tasks and visibility keepers
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.05)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticking = asyncio.ensure_future(ticker())
        handled = await fleet.handle(root.to_json())
        ticking.cancel()
        assert handled.children == 3 and len(queue) == 4  # the root, then its 3 children
        assert max(gaps) < 0.6, f"the event loop stalled {max(gaps):.2f} s"
