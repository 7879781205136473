"""A worker that stops (docs/fleet.md, The worker): the long poll under way is let end and
what it took released, so that another worker takes it at once (cut off on this side, a
long poll stays open at SQS and takes messages no worker then sees until their visibility
timeout); a second Ctrl-C stops at once; a handler's failure is logged with its job."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from xor_ack_dynamodb.fleet import Message
from xor_ack_dynamodb.fleet.worker import Worker
from xor_ack_dynamodb.table import TableSpec

from .sqs_fixtures import make_queues, sqs
from .test_worker import fleet_on

pytestmark = pytest.mark.ddblocal


def test_a_second_ctrl_c_stops_the_cli_worker_without_waiting_out_the_grace(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Any
) -> None:
    """`xor-ack worker`, default --shutdown-grace 30, a handler still working: Ctrl-C prints
    nothing, and a second and third Ctrl-C are ignored: the terminal is silent for 30 s.
    Expected (as a CLI user): a line saying it waits for N messages up to 30 s, and a second
    Ctrl-C that releases them and exits at once."""
    import signal
    import subprocess
    import time

    from .test_worker import stuck_cli_worker

    _, process = stuck_cli_worker(
        moto_endpoint, ddb_local_endpoint, ddb_table.name, tmp_path, "ctrl-c-twice"
    )
    try:
        process.send_signal(signal.SIGINT)
        time.sleep(1)
        process.send_signal(signal.SIGINT)
        began = time.monotonic()
        err = ""
        with contextlib.suppress(subprocess.TimeoutExpired):
            _, err = process.communicate(timeout=60)
        took = time.monotonic() - began
    finally:
        process.kill()
    assert took < 5, f"a second Ctrl-C was ignored: the worker exited {took:.0f} s after it"
    assert '"event":"stopping"' in err and '"in_hand":1' in err, err  # said, once stopping
    assert "Found credentials" not in err, err  # botocore's info lines are not the worker's


async def test_a_job_submitted_just_after_a_worker_stopped_is_not_swallowed_by_its_long_poll(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """A worker stopped while idle returned at once, but its receive was only cancelled on
    the client side: a root submitted before that poll's end (up to 20 s by default: a
    rolling restart) was received by it, invisible for --visibility-timeout, its receive
    count up by one, and no worker saw it."""
    work, _ = make_queues(moto_endpoint, visibility=60)
    async with fleet_on(
        moto_endpoint, ddb_local_endpoint, ddb_table.name, work, lambda m: [], []
    ) as (fleet, client):
        # A long poll of 4 s (20 by default): the worker's stop waits for it to end
        worker = Worker(fleet, client, work, wait_time=4, visibility_timeout=60)
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        await asyncio.sleep(1.5)  # idle, in its long poll
        stop.set()
        await running
        await fleet.submit("after-restart", None)
    await asyncio.sleep(1)
    again = sqs(moto_endpoint).receive_message(QueueUrl=work, WaitTimeSeconds=3)
    assert len(again.get("Messages", [])) == 1, (
        "the job's root, sent after the worker stopped, went to its abandoned long poll"
    )


async def test_a_handler_failed_line_names_the_job_it_belongs_to(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec, caplog: Any
) -> None:
    """The worker's `handler-failed` line carries SQS's MessageId under "message_id", while
    `submitted`/`applied` lines carry the fleet's message id under the same key, and it has
    no "tag": an operator cannot tell which job failed, nor match it to its other lines."""
    import json
    import logging

    work, _ = make_queues(moto_endpoint)

    def boom(message: Message) -> list[Any]:
        raise RuntimeError("boom")

    async with fleet_on(moto_endpoint, ddb_local_endpoint, ddb_table.name, work, boom, []) as (
        fleet,
        client,
    ):
        root = await fleet.submit("which-job-failed", None)
        worker = Worker(fleet, client, work, wait_time=1, visibility_timeout=30)
        stop = asyncio.Event()
        with caplog.at_level(logging.INFO):
            running = asyncio.ensure_future(worker.run(stop))
            for _ in range(100):
                if worker.stats["failed"]:
                    break
                await asyncio.sleep(0.1)
            stop.set()
            await running
    lines = []
    for record in caplog.records:
        with contextlib.suppress(ValueError):
            lines.append(json.loads(record.getMessage()))
    failed = [line for line in lines if line.get("event") == "handler-failed"]
    assert failed, lines
    assert failed[0].get("tag") == "which-job-failed", failed[0]
    assert failed[0].get("message_id") == root.message_id, failed[0]


async def test_a_worker_whose_run_is_cancelled_ends_with_its_dead_letter_drain(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """A service cancels its worker's task (or ``asyncio.wait_for`` times out): with a
    dead-letter queue the run waited for its drain, which ran until ``stop``, never set:
    the cancelled run never ended."""
    work, dlq = make_queues(moto_endpoint)
    async with fleet_on(
        moto_endpoint, ddb_local_endpoint, ddb_table.name, work, lambda m: [], []
    ) as (fleet, client):
        worker = Worker(fleet, client, work, wait_time=1, dead_letter_queue_url=dlq)
        running = asyncio.ensure_future(worker.run(asyncio.Event()))
        await asyncio.sleep(1.5)
        running.cancel()
        done, _ = await asyncio.wait({running}, timeout=15)
    assert done, "the cancelled run did not end"


async def stop_a_slow_drain(
    endpoints: tuple[str, str, str],
    monkeypatch: pytest.MonkeyPatch,
    settle_seconds: float,
    grace: float,
) -> tuple[str, Any, float]:
    """Three dead letters, each settled in ``settle_seconds``; the worker stopped as it
    settles the first: (the dead-letter queue, the worker's stats, seconds from the stop)."""
    from xor_ack_dynamodb.fleet import worker as worker_module

    moto_endpoint, ddb_endpoint, table = endpoints
    work, dlq = make_queues(moto_endpoint)  # visibility timeout 30 s
    for i in range(3):
        sqs(moto_endpoint).send_message(QueueUrl=dlq, MessageBody=f'{{"dead": {i}}}')
    settling = asyncio.Event()

    async def slow_settle(*args: Any) -> None:
        settling.set()
        await asyncio.sleep(settle_seconds)

    monkeypatch.setattr(worker_module, "settle_dead_letter", slow_settle)
    async with fleet_on(moto_endpoint, ddb_endpoint, table, work, lambda m: [], []) as (
        fleet,
        client,
    ):
        worker = Worker(
            fleet, client, work, wait_time=1, shutdown_grace=grace, dead_letter_queue_url=dlq
        )
        stop = asyncio.Event()
        running = asyncio.ensure_future(worker.run(stop))
        await asyncio.wait_for(settling.wait(), 20)
        began = asyncio.get_running_loop().time()
        stop.set()
        stats = await asyncio.wait_for(running, 15)
        return dlq, stats, asyncio.get_running_loop().time() - began


async def test_a_stopping_drain_releases_the_dead_letters_it_did_not_settle(
    moto_endpoint: str,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The drain settled every dead letter of its last receive after the stop (up to ten,
    each a DynamoDB write and its retries), past the shutdown grace: it settles the one in
    hand and puts the others back at once."""
    endpoints = (moto_endpoint, ddb_local_endpoint, ddb_table.name)
    dlq, stats, took = await stop_a_slow_drain(endpoints, monkeypatch, 2, grace=5)
    assert stats["dead_letters"] <= 1 and took < 5, (stats, took)  # not 3 x 2 s
    left = sqs(moto_endpoint).receive_message(QueueUrl=dlq, MaxNumberOfMessages=10)
    assert len(left.get("Messages", [])) >= 2, "the dead letters not settled are hidden"


async def test_a_drain_cut_off_by_the_grace_releases_the_letter_in_hand_and_the_rest(
    moto_endpoint: str,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Settling the dead letter in hand outlasts the grace (a slow continuation run from
    ``Fleet.dead_letter``, a throttled DynamoDB): the drain was cancelled and every dead
    letter of its receive, the one in hand too, stayed hidden for the queue's visibility
    timeout, where the work queue's messages in hand are released at once."""
    endpoints = (moto_endpoint, ddb_local_endpoint, ddb_table.name)
    dlq, _, _ = await stop_a_slow_drain(endpoints, monkeypatch, 30, grace=1)
    seen = 0
    for _ in range(3):
        left = sqs(moto_endpoint).receive_message(
            QueueUrl=dlq, MaxNumberOfMessages=10, WaitTimeSeconds=1
        )
        seen += len(left.get("Messages", []))
    assert seen == 3, f"after the stop {seen} of the 3 dead letters are visible, not all"
