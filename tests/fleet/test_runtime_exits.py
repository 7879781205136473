"""What a handler or a continuation does that no exception should do: a continuation's
``sys.exit()`` (the worker stopped; a Lambda batch failed whole) and a plain handler's
``StopIteration`` (its message waited for ever on Python 3.11-3.12) are that message's
failure alone.  SQS is a scripted peer (as in test_worker_edges.py); chains are on
DynamoDB Local."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from xor_ack_dynamodb.fleet import Completed, Envelope, Fleet, Message, SqsBatchHandler
from xor_ack_dynamodb.fleet.worker import Worker
from xor_ack_dynamodb.table import TableSpec

from .test_worker_edges import _message, _Peer, run_two


class _ListSender:
    def __init__(self) -> None:
        self.sent: list[Envelope] = []

    async def __call__(self, envelopes: Sequence[Envelope]) -> None:
        self.sent.extend(envelopes)


def _common(endpoint: str, table: TableSpec) -> dict[str, Any]:
    return {"table": table.name, "endpoint_url": endpoint, "region_name": "us-east-1"}


@pytest.mark.ddblocal
def test_a_continuation_that_calls_sys_exit_fails_its_message_and_the_worker_goes_on(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """A user's continuation calls a click command's ``main()`` (which ends in
    ``sys.exit(0)``), as the handler case in test_worker_edges.py does.  The handler's
    ``SystemExit`` became ``HandlerExited`` (one failed message, the worker goes on), but
    the continuation's is not caught: it escapes the message's task, stops the worker's
    event loop and ``asyncio.run`` (``xor-ack worker``) exits; the other job's message in
    the next receive is never handled.  Since the acking message comes back and runs the
    continuation again, every worker that takes it dies, and the dead-letter drain too.
    Expected (docs/fleet.md, "No message stops the worker's loops"): the acking message
    counted ``failed`` and backed off, the next job handled."""

    def continuation(done: Completed) -> None:
        if done.tag == "review-exit-cont-1":
            sys.exit(0)

    async def main() -> tuple[Counter[str], _Peer]:
        async with Fleet.connect(
            **_common(ddb_local_endpoint, ddb_table),
            handler=lambda message: [],
            send=_ListSender(),
            continuation=continuation,
        ) as fleet:
            first = await fleet.submit("review-exit-cont-1", None)
            second = await fleet.submit("review-exit-cont-2", None)
            return await run_two(fleet, first, second)

    try:
        stats, peer = asyncio.run(main())
    except SystemExit as exc:
        pytest.fail(
            f"the continuation's SystemExit({exc.code}) escaped the worker and ended its loop"
        )
    assert stats["failed"] == 1 and stats["applied"] == 1, dict(stats)
    assert peer.deleted == ["r2"]


@pytest.mark.ddblocal
def test_a_continuation_that_calls_sys_exit_fails_only_its_record_in_a_lambda_batch(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """The same continuation on Lambda (``SqsBatchHandler``): the docs promise a batch
    names only the failed messages in ``batchItemFailures``.  The continuation's
    ``SystemExit`` escapes ``run_until_complete`` instead: the invocation fails as a whole,
    so SQS delivers the whole batch again (the other job's message too), every time."""

    def continuation(done: Completed) -> None:
        if done.tag == "review-exit-lambda-1":
            sys.exit(0)

    async def bodies() -> tuple[str, str]:
        async with Fleet.connect(
            **_common(ddb_local_endpoint, ddb_table), handler=lambda m: [], send=_ListSender()
        ) as fleet:
            first = await fleet.submit("review-exit-lambda-1", None)
            second = await fleet.submit("review-exit-lambda-2", None)
            return first.to_json(), second.to_json()

    first, second = asyncio.run(bodies())

    import contextlib

    @contextlib.asynccontextmanager
    async def open_fleet() -> Any:
        async with Fleet.connect(
            **_common(ddb_local_endpoint, ddb_table),
            handler=lambda m: [],
            send=_ListSender(),
            continuation=continuation,
        ) as fleet:
            yield fleet

    record = {"attributes": {"ApproximateReceiveCount": "1"}, "eventSource": "aws:sqs"}
    event = {
        "Records": [
            {**record, "messageId": "m-1", "body": first},
            {**record, "messageId": "m-2", "body": second},
        ]
    }
    handler = SqsBatchHandler(open_fleet)
    try:
        try:
            result = handler(event, None)
        except SystemExit as exc:
            pytest.fail(f"the continuation's SystemExit({exc.code}) failed the whole invocation")
        assert result == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    finally:
        with contextlib.suppress(BaseException):
            handler.close()


@pytest.mark.ddblocal
async def test_a_plain_handler_raising_stop_iteration_fails_its_message(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """A plain handler with a common slip, ``next(x for x in items if ...)`` finding
    nothing, raises ``StopIteration`` in its thread.  On Python 3.11 and 3.12 (the package
    takes >= 3.11) asyncio cannot put a ``StopIteration`` into the future ``to_thread``
    awaits (``TypeError: StopIteration interacts badly with generators``, logged as a
    callback error): the future never completes, so the message's handling hangs for ever.
    The worker keeps extending the message's visibility while it "works": it is never
    backed off, never counted failed, never dead-lettered, its job never ends, and the
    worker's slot is gone.  Expected: a handler's error like any other (``handler-failed``,
    backed off)."""

    def handler(message: Message) -> list[Any]:
        return [next(x for x in [1, 2, 3] if x > 5)]  # nothing matches: StopIteration

    async with Fleet.connect(
        **_common(ddb_local_endpoint, ddb_table), handler=handler, send=_ListSender()
    ) as fleet:
        root = await fleet.submit("review-stop-iteration", None)
        peer = _Peer([[_message(root.to_json(), "r1")]])
        worker = Worker(fleet, peer, "work", wait_time=1, visibility_timeout=3, shutdown_grace=0)  # type: ignore[arg-type]
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 6
        while not worker.stats["failed"] and loop.time() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        stats = await running
    extended = [seconds for receipt, seconds, _ in peer.visibility if seconds == 3]
    assert stats["failed"] == 1, (
        f"after 6 s the handler's StopIteration is still not a failure: {dict(stats)}; "
        f"visibility extended {len(extended)} times meanwhile"
    )
