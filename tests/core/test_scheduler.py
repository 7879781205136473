"""The coalescing plan both clients drive (``_coalescing``), without I/O, and its two drivers.

The plan's tests use ``concurrent.futures`` futures (and asyncio futures where
cancellation matters) as the waiters, and a stand-in core whose ``stamp_batch``
returns or raises at once.  The drivers' tests hold a real client's writes on
a gate to put callers in flight, queued, cancelled.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Generator
from concurrent.futures import Future
from typing import Any

import aioboto3
import boto3
import pytest
from botocore.exceptions import ClientError

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, XorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.dynamodb._coalescing import Merge, Merging
from xor_ack_dynamodb.dynamodb._core.effects import Effect, Entry, Outcome
from xor_ack_dynamodb.errors import InterruptedWrite, TagNotFound
from xor_ack_dynamodb.retry import botocore_config
from xor_ack_dynamodb.table import TableSpec

from .hooks import assert_applied_once, client_error

Waiter = Future[Outcome]


def entry(byte: int) -> Entry:
    return Entry(Stamp(bytes([byte])))


def sent(merge: Merge[Any]) -> list[bytes]:
    return [bytes(e.stamp) for e in merge.entries]


def queue(plan: Merging[Waiter], byte: int) -> Waiter:
    """Submit a stamp while "t" has a write in flight: its caller waits."""
    waiter = plan.submit("t", entry(byte), Future)
    assert isinstance(waiter, Future)
    return waiter


def test_the_first_stamp_is_written_by_its_caller_and_the_next_ones_queue() -> None:
    plan: Merging[Waiter] = Merging()
    first = plan.submit("t", entry(1), Future)
    assert isinstance(first, Merge) and sent(first) == [b"\x01"] and first.waiters == [None]
    second, third = plan.submit("t", entry(2), Future), plan.submit("t", entry(3), Future)
    assert isinstance(second, Future) and isinstance(third, Future)
    other = plan.submit("u", entry(4), Future)  # another chain has no write in flight
    assert isinstance(other, Merge) and sent(other) == [b"\x04"]


def test_the_next_write_carries_what_queued_in_call_order_and_each_caller_its_outcome() -> None:
    plan: Merging[Waiter] = Merging()
    first = plan.submit("t", entry(1), Future)
    assert isinstance(first, Merge)
    waiters = [queue(plan, b) for b in (2, 3, 4)]
    merged = plan.finished(first, [Stamp(b"\x01")])
    assert merged is not None and sent(merged) == [b"\x02", b"\x03", b"\x04"]
    assert not any(w.done() for w in waiters)  # their write has not happened yet
    outcomes: list[Outcome] = [Stamp(b"\x03"), TagNotFound("t"), Stamp(b"\x04")]
    assert plan.finished(merged, outcomes) is None  # nothing queued meanwhile: idle
    assert [w.result() for w in waiters] == outcomes  # a typed error is a caller's result
    assert isinstance(plan.submit("t", entry(5), Future), Merge)  # idle: written at once


def merged_in_flight(
    plan: Merging[Waiter], queued_then: int
) -> tuple[Merge[Waiter], Waiter, list[Waiter]]:
    """A merged write of stamp 2 in flight on "t" (after stamp 1's), ``queued_then`` queued."""
    first = plan.submit("t", entry(1), Future)
    assert isinstance(first, Merge)
    inflight = queue(plan, 2)
    merged = plan.finished(first, [Stamp(b"\x01")])
    assert merged is not None and merged.waiters == [inflight]
    return merged, inflight, [queue(plan, 3 + n) for n in range(queued_then)]


def test_stamps_arriving_while_a_merged_write_is_in_flight_go_in_the_write_after() -> None:
    plan: Merging[Waiter] = Merging()
    merged, early, late = merged_in_flight(plan, 2)
    after = plan.finished(merged, [Stamp(b"\x03")])
    assert early.result() == Stamp(b"\x03") and not any(w.done() for w in late)
    assert after is not None and sent(after) == [b"\x03", b"\x04"] and after.waiters == late
    assert plan.finished(after, [Stamp(b"\x07"), Stamp(b"\x03")]) is None
    assert [w.result() for w in late] == [Stamp(b"\x07"), Stamp(b"\x03")]


def test_an_error_raised_by_a_write_reaches_its_callers_and_the_queue_goes_on() -> None:
    plan: Merging[Waiter] = Merging()
    merged, inflight, queued = merged_in_flight(plan, 1)
    after = plan.finished(merged, RuntimeError("not a chain's error"))
    with pytest.raises(RuntimeError):
        inflight.result()
    assert after is not None and after.waiters == queued and not queued[0].done()


def test_an_abandoned_write_hands_its_error_to_its_callers_and_to_the_queue() -> None:
    plan: Merging[Waiter] = Merging()
    merged, inflight, queued = merged_in_flight(plan, 1)
    plan.abandon(merged, KeyboardInterrupt())
    for waiter in (inflight, *queued):
        with pytest.raises(KeyboardInterrupt):
            waiter.result()
    assert isinstance(plan.submit("t", entry(4), Future), Merge)  # the chain is idle again


async def test_a_cancelled_asyncio_waiter_is_left_out_of_the_next_write() -> None:
    loop = asyncio.get_running_loop()
    plan: Merging[asyncio.Future[Outcome]] = Merging()
    first = plan.submit("t", entry(1), loop.create_future)
    assert isinstance(first, Merge)
    gone, kept = (plan.submit("t", entry(b), loop.create_future) for b in (2, 3))
    assert isinstance(gone, asyncio.Future) and isinstance(kept, asyncio.Future)
    gone.cancel()  # its caller's task was cancelled while it waited
    merged = plan.finished(first, [Stamp(b"\x01")])
    assert merged is not None and sent(merged) == [b"\x03"] and merged.waiters == [kept]
    only = plan.submit("t", entry(4), loop.create_future)
    assert isinstance(only, asyncio.Future)
    only.cancel()
    assert plan.finished(merged, [Stamp(b"\x02")]) is None  # no one left: idle
    assert kept.result() == Stamp(b"\x02")


class _Core:
    """A stand-in for ``Chains``: ``stamp_batch`` returns ``result`` or raises it, at once."""

    def __init__(self, result: list[Outcome] | BaseException) -> None:
        self.result = result

    def stamp_batch(self, tag: str, entries: list[Entry]) -> Generator[Effect, Any, list[Outcome]]:
        if isinstance(self.result, BaseException):
            raise self.result
        return self.result
        yield  # a generator, as the core's operations are


def _drive(merge: Merge[Any], core: _Core) -> list[Outcome]:
    op = merge.write(core)  # type: ignore[arg-type]
    try:
        next(op)
    except StopIteration as stop:
        result: list[Outcome] = stop.value
        return result
    raise AssertionError("the stand-in core sends nothing")


def test_a_chains_error_is_each_merged_stamps_outcome_and_other_errors_propagate() -> None:
    merge: Merge[Waiter] = Merge("t", [entry(1), entry(2)], [None, Future()])
    refused = client_error("GetItem", "ResourceNotFoundException")
    first, second = _drive(merge, _Core(refused))
    assert first is refused  # each caller its own instance, the same error
    assert isinstance(second, ClientError) and second is not refused
    assert str(second) == str(refused) and second.__cause__ is refused
    assert _drive(merge, _Core([Stamp(b"\x01"), Stamp(b"\x03")])) == [b"\x01", b"\x03"]
    with pytest.raises(ZeroDivisionError):
        _drive(merge, _Core(ZeroDivisionError()))


# -- the drivers: a real client whose stamp writes wait at a gate ---------------------


class _GatedAsync:
    """An aiobotocore client whose ``update_item`` calls each wait for a pass (:meth:`let`)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.passes: asyncio.Queue[None] = asyncio.Queue()
        self.waiting = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def let(self, writes: int = 1) -> None:
        for _ in range(writes):
            self.passes.put_nowait(None)

    async def update_item(self, **params: Any) -> Any:
        self.waiting += 1
        await self.passes.get()
        self.waiting -= 1
        return await self._inner.update_item(**params)


@pytest.fixture
async def gated(backend: tuple[str, TableSpec]) -> AsyncIterator[tuple[XorAckDynamoDB, Any]]:
    endpoint, spec = backend
    async with aioboto3.Session().client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
    ) as client:
        gate = _GatedAsync(client)
        yield XorAckDynamoDB(gate, table=spec.name), gate


async def _until(condition: Any) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the writes never reached the gate")


async def test_a_stamp_cancelled_while_queued_is_not_written(
    gated: tuple[XorAckDynamoDB, _GatedAsync],
) -> None:
    ack, gate = gated
    root, a, b, c = (new_stamp() for _ in range(4))
    gate.let()
    await ack.create("t", xor(root, a, c))
    first = asyncio.create_task(ack.stamp("t", root))
    await _until(lambda: gate.waiting == 1)  # the first stamp's write is in flight
    cancelled = asyncio.create_task(ack.stamp("t", b))
    kept = asyncio.create_task(ack.stamp("t", a))
    await asyncio.sleep(0)
    cancelled.cancel()
    gate.let(3)
    assert (await first) == xor(a, c)
    assert (await kept) == c  # b was never XORed in
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert (await ack.stamp("t", c)).acked


async def test_a_cancelled_writer_task_reaches_every_caller_it_carried(
    gated: tuple[XorAckDynamoDB, _GatedAsync],
) -> None:
    ack, gate = gated
    root, a, b = (new_stamp() for _ in range(3))
    gate.let()
    await ack.create("t", xor(root, a, b))
    first = asyncio.create_task(ack.stamp("t", root))
    await _until(lambda: gate.waiting == 1)
    riders = [asyncio.create_task(ack.stamp("t", s)) for s in (a, b)]
    await asyncio.sleep(0)
    gate.let()
    await first
    await _until(lambda: gate.waiting == 1)  # the writer task's merged write is in flight
    for writer in list(ack._writers):
        writer.cancel()
    done, pending = await asyncio.wait(riders, timeout=5)
    assert not pending, "a caller of the cancelled write was left waiting"
    # Not the writer's CancelledError (a task never cancelled ended as cancelled, and a
    # TaskGroup dropped it): the package's error for a write cut short, as the sync
    # client's (it may have landed: resend with a token).
    for task in done:
        assert not task.cancelled()
        assert isinstance(task.exception(), InterruptedWrite), task.exception()
    await ack.drain()


def test_what_queued_behind_a_sync_caller_is_written_by_a_thread_of_its_own(
    backend: tuple[str, TableSpec],
) -> None:
    endpoint, spec = backend
    inner = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    entered, release = threading.Event(), threading.Event()
    writers: list[str] = []

    class Gated:
        def __getattr__(self, name: str) -> Any:
            return getattr(inner, name)

        def update_item(self, **params: Any) -> Any:
            writers.append(threading.current_thread().name)
            entered.set()
            release.wait(5)
            return inner.update_item(**params)

    ack = SyncXorAckDynamoDB(Gated(), table=spec.name)
    root, a, b = new_stamp(), new_stamp(), new_stamp()
    release.set()
    ack.create("t", xor(root, a, b))
    release.clear()
    entered.clear()
    del writers[:]
    seen: dict[str, Stamp] = {}

    def stamp(name: str, value: Stamp) -> threading.Thread:
        thread = threading.Thread(
            target=lambda: seen.update({name: ack.stamp("t", value)}), name=name
        )
        thread.start()
        return thread

    threads = [stamp("root", root)]
    assert entered.wait(5)  # the first stamp's write is in flight
    threads += [stamp("a", a), stamp("b", b)]
    while len(ack._merging.queues["t"]) < 2:
        threading.Event().wait(0.01)
    release.set()
    for thread in threads:
        thread.join(10)
    # its own write in its thread; the merged one in another (the caller returned)
    assert writers[0] == "root" and len(writers) == 2 and writers[1] not in seen
    assert_applied_once(xor(root, a, b), {"root": root, "a": a, "b": b}, seen)
    inner.close()
