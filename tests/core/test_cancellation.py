"""The async client under asyncio cancellation (and ``asyncio.timeout``): a merged stamp
whose caller left before its write went out is not sent; cancelling ``drain`` stops the
wait, not the writes; a caller's own batched write cancelled in flight logs nothing.

Each test drives a real DynamoDB Local through a wrapper of the aiobotocore client whose
requests wait, before they are sent, on events the test holds: every interleaving is
forced, none is left to timing.  The client is built with ``direct=False`` so that its
requests go through the wrapper.
"""

from __future__ import annotations

import asyncio
import gc
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any

import aioboto3
import pytest
from botocore.exceptions import ClientError

from xor_ack_dynamodb import Stamp, XorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.errors import TableMismatch
from xor_ack_dynamodb.retry import botocore_config
from xor_ack_dynamodb.table import TableSpec


class Held:
    """Requests of the operations in ``held`` wait until the test lets them go; the
    request numbered in ``fail`` (per operation) raises instead of being sent."""

    def __init__(
        self,
        inner: Any,
        held: set[str],
        fail: dict[tuple[str, int], BaseException] | None = None,
    ) -> None:
        self.inner = inner
        self.held = held
        self.fail = fail or {}
        self.count: dict[str, int] = defaultdict(int)
        self.entered: dict[tuple[str, int], asyncio.Event] = defaultdict(asyncio.Event)
        self.go: dict[tuple[str, int], asyncio.Event] = defaultdict(asyncio.Event)
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if name not in self.held:
            return method

        async def call(**params: Any) -> Any:
            self.count[name] += 1
            key = (name, self.count[name])
            self.entered[key].set()
            await self.go[key].wait()
            if key in self.fail:
                raise self.fail[key]
            self.sent.append((name, params))
            return await method(**params)

        return call

    def let(self, op: str, n: int) -> None:
        self.go[(op, n)].set()

    async def reached(self, op: str, n: int) -> None:
        await asyncio.wait_for(self.entered[(op, n)].wait(), 10)


async def until(check: Callable[[], bool]) -> None:
    for _ in range(2000):
        if check():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never met")


@pytest.fixture
async def raw_client(local: tuple[str, TableSpec]) -> AsyncIterator[Any]:
    endpoint, _ = local
    async with aioboto3.Session().client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
    ) as client:
        yield client


async def test_a_merged_stamp_cancelled_before_anything_was_sent_is_not_sent(
    local: tuple[str, TableSpec], raw_client: Any
) -> None:
    """The user stamps a chain from two tasks at once (A, then B, which queues behind A's
    write to be merged) and cancels B (or B's ``asyncio.timeout`` expires) while the
    writer task that took B's stamp over is still reading the chain, before B's stamp was
    sent anywhere.  B is told ``CancelledError``: its call stopped.  Yet the writer task
    goes on and writes B's stamp afterwards, with nobody waiting for it: the chain holds
    it.  A user who stamps again after the timeout (no token) applies it twice, and the
    chain never completes.  A stamp cancelled while only queued is left out (design.md:
    "its stamp is not sent"), and so is a caller's own stamp cancelled during its read;
    a merged one cancelled before its write left should be too (or its caller should not
    be told it stopped until the write is settled)."""
    _, spec = local
    held = Held(raw_client, {"get_item"})
    ack = XorAckDynamoDB(held, table=spec.name, cache_size=0)  # every stamp reads first
    root = new_stamp()
    await ack.create("c", root)  # cache_size=0: not remembered
    stamp_a, stamp_b = new_stamp(), new_stamp()

    a = asyncio.create_task(ack.stamp("c", stamp_a))
    await held.reached("get_item", 1)  # A's own read waits: A's write is in progress
    b = asyncio.create_task(ack.stamp("c", stamp_b))
    await until(lambda: len(ack._merging.queues.get("c", [])) == 1)  # B queued behind A
    held.let("get_item", 1)
    assert await a == xor(root, stamp_a)
    await held.reached("get_item", 2)  # the writer task reads for B's merge: nothing sent
    assert not any(name == "update_item" and stamp_b in str(params) for name, params in held.sent)

    b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await b  # B is told its stamp stopped
    held.let("get_item", 2)
    await asyncio.wait_for(ack.drain(), 10)

    state = await raw_client.get_item(
        TableName=spec.name, Key={"tagID": {"S": "c"}}, ConsistentRead=True
    )
    now = bytes(state["Item"]["stamp"]["B"])
    assert now == xor(root, stamp_a), (
        "B was cancelled before its stamp was sent, yet the writer task wrote it afterwards"
        f" (chain holds root^A^B: {now == xor(root, stamp_a, stamp_b)})"
    )


async def test_cancelling_drain_stops_the_wait_not_another_tasks_stamp(
    local: tuple[str, TableSpec], raw_client: Any
) -> None:
    """The user bounds shutdown with ``asyncio.timeout`` / ``wait_for`` around
    ``ack.drain()`` (or an outer timeout expires while ``connect()``'s exit drains) while
    another task's stamp rides in a writer task.  ``drain`` only waits, but its
    ``asyncio.gather`` cancels the writer tasks when it is cancelled: the task that called
    ``stamp`` (never cancelled) gets a bare ``CancelledError`` and ends as cancelled (a
    ``TaskGroup`` drops it silently), and its stamp is not written.  Cancelling a wait
    should not stop the writes (shield them), or the caller should get an error of the
    package (the sync twin's ``InterruptedWrite`` for a write cut short)."""
    _, spec = local
    held = Held(raw_client, {"update_item"})
    ack = XorAckDynamoDB(held, table=spec.name)
    root = new_stamp()
    held.let("update_item", 1)
    await ack.create("d", root)  # remembered: each stamp below is one UpdateItem
    stamp_a, stamp_b = new_stamp(), new_stamp()

    a = asyncio.create_task(ack.stamp("d", stamp_a))
    await held.reached("update_item", 2)  # A's own write waits to go out
    b = asyncio.create_task(ack.stamp("d", stamp_b))
    await until(lambda: len(ack._merging.queues.get("d", [])) == 1)  # B queued behind A
    held.let("update_item", 2)
    assert await a == xor(root, stamp_a)
    await held.reached("update_item", 3)  # the writer task's write of B's stamp
    assert ack._writers

    draining = asyncio.create_task(ack.drain())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    draining.cancel()  # e.g. asyncio.timeout around the shutdown expired
    with pytest.raises(asyncio.CancelledError):
        await draining
    held.let("update_item", 3)
    await asyncio.wait({b}, timeout=10)
    assert b.done()
    told = "cancelled" if b.cancelled() else repr(b.exception() or b.result())
    assert not b.cancelled(), f"B was never cancelled, yet its stamp() ended {told}"


async def test_a_batched_write_cancelled_in_flight_logs_nothing(
    local: tuple[str, TableSpec], raw_client: Any
) -> None:
    """With ``batch_writes=True`` the user cancels a stamp (or its ``asyncio.timeout``
    expires) while its write is in flight.  The caller is told ``CancelledError``, as it
    should be; but ``_flush`` also sets a ``CancelledError`` on the write's own future,
    which nobody awaits any more: asyncio logs "Future exception was never retrieved"
    (an ERROR in the user's logs for every such cancellation).  Nothing should be logged."""
    _, spec = local
    held = Held(raw_client, {"update_item"})
    ack = XorAckDynamoDB(held, table=spec.name, batch_writes=True, write_slots=1)
    held.let("update_item", 1)
    root = new_stamp()
    await ack.create("e", root)  # remembered: the stamp below is its write alone

    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        task = asyncio.create_task(ack.stamp("e", new_stamp()))
        await held.reached("update_item", 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        del task
        for _ in range(3):
            gc.collect()
            await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    held.let("update_item", 2)
    await ack.drain()
    messages = [str(context.get("message")) for context in seen]
    assert not messages, messages
    held.let("update_item", 3)
    assert isinstance(await ack.stamp("e", new_stamp()), Stamp)  # still usable


async def test_drain_retrieves_a_failed_writer_tasks_error(
    local: tuple[str, TableSpec], raw_client: Any
) -> None:
    """The user stamps a chain from two tasks (B's stamp rides in a writer task) and the
    writer task's write fails with an error that is not the chain's (a RuntimeError from
    the transport): B is told that error.  The user's shutdown awaits ``ack.drain()`` (or
    leaves ``connect()``, which drains) while that write is in flight: ``drain`` retrieves
    the writer task's error, so asyncio logs nothing ("Task exception was never
    retrieved") for an error already handed to B."""
    _, spec = local
    boom = RuntimeError("transport broke")
    held = Held(raw_client, {"update_item"}, {("update_item", 3): boom})
    ack = XorAckDynamoDB(held, table=spec.name)
    root = new_stamp()
    held.let("update_item", 1)
    await ack.create("z1", root)  # remembered: each stamp below is one UpdateItem
    stamp_a, stamp_b = new_stamp(), new_stamp()

    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        a = asyncio.create_task(ack.stamp("z1", stamp_a))
        await held.reached("update_item", 2)  # A's own write waits to go out
        b = asyncio.create_task(ack.stamp("z1", stamp_b))
        await until(lambda: len(ack._merging.queues.get("z1", [])) == 1)  # B queued
        held.let("update_item", 2)
        assert await a == xor(root, stamp_a)
        await held.reached("update_item", 3)  # the writer task's write of B's stamp
        draining = asyncio.create_task(ack.drain())  # the user's shutdown, B in flight
        await asyncio.sleep(0)
        held.let("update_item", 3)  # ... fails
        with pytest.raises(RuntimeError):
            await b  # B is told
        await asyncio.wait_for(draining, 10)
        del draining
        for _ in range(3):
            gc.collect()
            await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    messages = [str(context.get("message")) for context in seen]
    assert not messages, messages


async def test_a_write_left_out_is_not_counted_as_sent(
    local: tuple[str, TableSpec], raw_client: Any
) -> None:
    """The user stamps a chain from two tasks and cancels B while the writer task that
    took B's stamp over is reading the chain: ``Merge.write`` leaves B's stamp out and
    the write is never sent (nobody is left).  The core counted it as it planned it:
    ``ack.stats`` takes the count back, so its requests and writes are those sent."""
    _, spec = local
    held = Held(raw_client, {"get_item", "update_item"}, {})
    ack = XorAckDynamoDB(held, table=spec.name, cache_size=0)  # every stamp reads first
    for n in range(1, 10):
        held.let("update_item", n)
    root = new_stamp()
    await ack.create("z2", root)
    stamp_a, stamp_b = new_stamp(), new_stamp()

    a = asyncio.create_task(ack.stamp("z2", stamp_a))
    await held.reached("get_item", 1)
    b = asyncio.create_task(ack.stamp("z2", stamp_b))
    await until(lambda: len(ack._merging.queues.get("z2", [])) == 1)
    held.let("get_item", 1)
    assert await a == xor(root, stamp_a)
    await held.reached("get_item", 2)  # the writer task reads for B's merge
    b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await b
    held.let("get_item", 2)
    await asyncio.wait_for(ack.drain(), 10)

    sent_updates = sum(1 for name, _ in held.sent if name == "update_item")
    counted = ack.stats.requests["UpdateItem"]
    assert counted == sent_updates, (
        f"stats count {counted} UpdateItem requests, {sent_updates} were sent "
        f"(writes counted {ack.stats.writes})"
    )


# -- a cancel in the loop turn one of a *_many call's requests fails ---------------------
# The *_many calls ran their requests under asyncio.gather: cancelled after one failed and
# before the gather heard of it, the caller got that request's error, not CancelledError
# (and a loop that reports and goes on ran on after its cancel).  No server: a fake
# aiobotocore client; the request of chain "a" (or the first transaction) is refused for
# its key (TableMismatch, which the *_many calls raise), the others wait; the caller's
# cancel is scheduled just before the refusal is raised.


def key_refusal(op: str) -> ClientError:
    return ClientError(
        {
            "Error": {
                "Code": "ValidationException",
                "Message": "The provided key element does not match the schema",
            },
            "ResponseMetadata": {"HTTPStatusCode": 400, "RetryAttempts": 0},
        },
        op,
    )


class Fake:
    """Refuses the first request for chain ``a`` (or the first transaction), cancelling the
    caller in that turn if asked; every other request waits until ``release``."""

    def __init__(self) -> None:
        self.caller: asyncio.Task[Any] | None = None
        self.cancel_once = True
        self.released = asyncio.Event()
        self.refused = 0
        self.transactions = 0

    def __getattr__(self, name: str) -> Any:
        async def call(**params: Any) -> Any:
            tag = params.get("Key", {}).get("tagID", {}).get("S")
            first_transaction = False
            if name == "transact_write_items":
                self.transactions += 1
                first_transaction = self.transactions == 1
            if tag == "a" or first_transaction:
                self.refused += 1
                if self.cancel_once and self.caller is not None:
                    self.cancel_once = False
                    asyncio.get_running_loop().call_soon(self.caller.cancel)
                raise key_refusal(name)
            await self.released.wait()
            raise key_refusal(name)

        return call


async def outcome(task: asyncio.Task[Any]) -> str:
    done, _ = await asyncio.wait({task}, timeout=5)
    if not done:
        return "still running"
    if task.cancelled():
        return "cancelled"
    return f"raised {type(task.exception()).__name__}"


def stamps(n: int) -> dict[str, Stamp]:
    return {tag: new_stamp() for tag in ["a", *(f"c{i}" for i in range(n - 1))]}


@pytest.mark.parametrize(
    "call",
    [
        lambda ack: ack.stamp_many(stamps(2)),  # one stamp per chain, side by side
        lambda ack: ack.create_many(stamps(101)),  # two transactions (pieces of 100)
    ],
    ids=["stamp_many", "create_many"],
)
async def test_a_many_call_cancelled_as_one_request_fails_is_cancelled(call: Any) -> None:
    fake = Fake()
    ack = XorAckDynamoDB(fake, table="t", direct=False)
    task = asyncio.ensure_future(call(ack))
    fake.caller = task
    try:
        assert await outcome(task) == "cancelled"
    finally:
        fake.released.set()
        await asyncio.wait_for(ack.drain(), 5)
        await asyncio.sleep(0.05)


async def test_a_loop_over_stamp_many_stops_when_cancelled() -> None:
    """A loop that reports a failed call and goes on (as the dashboard's counts did) is
    cancelled in the turn a call fails: it must stop, and whoever awaits it return."""
    fake = Fake()
    ack = XorAckDynamoDB(fake, table="t", direct=False)
    rounds = 0

    async def pump() -> None:
        nonlocal rounds
        while True:
            rounds += 1
            try:
                await ack.stamp_many({"a": new_stamp(), "b": new_stamp()})
            except TableMismatch:  # reported, tried again later
                await asyncio.sleep(0.05)

    task = asyncio.ensure_future(pump())
    fake.caller = task
    try:
        state = await outcome(task)
        assert state == "cancelled", f"{state} after its cancel ({rounds} rounds)"
    finally:
        task.cancel()
        await asyncio.wait({task}, timeout=5)
        fake.released.set()
        await asyncio.wait_for(ack.drain(), 5)
        await asyncio.sleep(0.05)
