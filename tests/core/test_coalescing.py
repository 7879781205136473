"""Concurrent stamps on one chain inside one client merge into one write, and stay exact."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, XorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.dynamodb._core.effects import Entry
from xor_ack_dynamodb.dynamodb._core.merged import plan_batch
from xor_ack_dynamodb.errors import (
    BufferLengthsUnequal,
    TagNotFound,
)
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client
from .hooks import _Hooked, hooked_client


def test_plan_batch_reports_each_callers_serial_state() -> None:
    state = Stamp(bytes.fromhex("29"))
    entries = [Entry(Stamp(bytes.fromhex(h))) for h in ("4c", "25", "a9")]
    seen, new_state, n = plan_batch(state, entries)
    assert seen == [bytes.fromhex(h) for h in ("65", "40", "e9")]
    assert new_state == bytes.fromhex("e9") and n == 3


def test_plan_batch_stops_at_the_first_zero() -> None:
    a = Stamp(b"\x0f")
    seen, new_state, n = plan_batch(a, [Entry(a), Entry(Stamp(b"\x01"))])
    assert seen == [b"\x00"] and new_state.acked and n == 1


@pytest.fixture
async def ack(backend: tuple[str, TableSpec]) -> AsyncIterator[XorAckDynamoDB]:
    endpoint, spec = backend
    async with open_client("async", endpoint, spec.name) as client:
        yield client


async def test_64_concurrent_stamps_merge_and_ack_exactly_once(ack: XorAckDynamoDB) -> None:
    root = new_stamp()
    children = [new_stamp() for _ in range(64)]
    await ack.create("hot", root)
    await ack.stamp("hot", xor(root, *children))
    writes = ack.stats.writes
    results = await asyncio.gather(*(ack.stamp("hot", c) for c in children))
    assert sum(r.acked for r in results) == 1
    assert results[-1].acked  # the serial order of one merged write is the call order
    assert len(set(results)) == 64  # every caller saw its own intermediate state
    assert ack.stats.writes - writes < 64
    assert ack.stats.stamps == 2 + 64 - 1 + 1 - 1  # create is not a stamp: 1 + 64


async def test_stamps_after_a_completing_stamp_are_refused(ack: XorAckDynamoDB) -> None:
    a = new_stamp()
    await ack.create("t", a)
    done, late = await asyncio.gather(
        ack.stamp("t", a), ack.stamp("t", new_stamp()), return_exceptions=True
    )
    assert isinstance(done, Stamp) and done.acked
    assert isinstance(late, TagNotFound)
    assert (await ack.get("t")).acked  # type: ignore[union-attr]


async def test_one_bad_stamp_does_not_sink_the_others(ack: XorAckDynamoDB) -> None:
    a, b = new_stamp(), new_stamp()
    await ack.create("t", xor(a, b))
    results = await asyncio.gather(
        ack.stamp("t", a), ack.stamp("t", new_stamp(8)), ack.stamp("t", b), return_exceptions=True
    )
    assert isinstance(results[1], BufferLengthsUnequal)
    assert isinstance(results[2], Stamp) and results[2].acked


async def test_an_error_reaches_every_caller(backend: tuple[str, TableSpec]) -> None:
    endpoint, _ = backend
    async with open_client("async", endpoint, "no-such-table") as ack:
        results = await asyncio.gather(
            *(ack.stamp("t", new_stamp()) for _ in range(5)), return_exceptions=True
        )
    assert all(isinstance(r, ClientError) for r in results)
    assert {r.response["Error"]["Code"] for r in results} == {"ResourceNotFoundException"}
    # Each caller its own instance: one raised in five tasks gathered all five tracebacks.
    assert len({id(r) for r in results}) == len(results)
    assert len({str(r) for r in results}) == 1


async def test_same_token_twice_in_one_merge_lands_once(ack: XorAckDynamoDB) -> None:
    a, b = new_stamp(), new_stamp()
    await ack.create("t", xor(a, b))
    first, second = await asyncio.gather(
        ack.stamp("t", a, token=b"once"), ack.stamp("t", a, token=b"once")
    )
    assert first == second == b
    assert (await ack.stamp("t", b)).acked


@pytest.mark.ddblocal
async def test_coalescing_off_is_one_write_per_stamp(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    # DynamoDB Local only: with coalescing off the stamps race each other, and moto's
    # server was seen letting two concurrent conditional writes on one item both pass.
    async with open_client("async", ddb_local_endpoint, ddb_table.name, coalesce=False) as ack:
        root = new_stamp()
        children = [new_stamp() for _ in range(8)]
        await ack.create("t", xor(root, *children))
        await ack.stamp("t", root)
        results = await asyncio.gather(*(ack.stamp("t", c) for c in children))
        assert sum(r.acked for r in results) == 1
        assert ack.stats.writes >= 1 + 1 + 8


def test_sync_client_threads_merge_and_ack_once(backend: tuple[str, TableSpec]) -> None:
    endpoint, spec = backend
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    ack = SyncXorAckDynamoDB(client, table=spec.name)
    root = new_stamp()
    children = [new_stamp() for _ in range(32)]
    ack.create("t", xor(root, *children))
    ack.stamp("t", root)
    results: list[Stamp] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(children))

    def work(child: Stamp) -> None:
        barrier.wait()
        result = ack.stamp("t", child)
        with lock:
            results.append(result)

    threads = [threading.Thread(target=work, args=(c,)) for c in children]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 32 and sum(r.acked for r in results) == 1
    assert ack.stats.conflicts == 0  # merged in-process: no client races with itself


def until(check: Callable[[], bool]) -> None:
    for _ in range(500):
        if check():
            return
        time.sleep(0.01)
    raise AssertionError("the stamps never queued")


def _sync_callers(
    backend: tuple[str, TableSpec], before_update: Callable[[int, Any], None]
) -> tuple[SyncXorAckDynamoDB, Callable[[str], threading.Thread], dict[str, object]]:
    """A sync client on chain "t" (the XOR of ``STAMPS``) whose n-th UpdateItem first
    calls ``before_update(n, client)``; a way to start a thread that stamps one of
    ``STAMPS`` with its name as token, and what each was told (Ctrl-C included)."""
    endpoint, spec = backend
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    writes: list[int] = []

    def before(params: dict[str, Any]) -> None:
        writes.append(1)
        before_update(len(writes), ack)

    ack = SyncXorAckDynamoDB(_Hooked(client, {"update_item": before}, {}), table=spec.name)
    SyncXorAckDynamoDB(client, table=spec.name).create("t", xor(*STAMPS.values()))
    told: dict[str, object] = {}

    def stamp(name: str) -> None:
        try:
            told[name] = ack.stamp("t", STAMPS[name], token=name)
        except BaseException as exc:  # what each caller was told, Ctrl-C included
            told[name] = exc

    def start(name: str) -> threading.Thread:
        thread = threading.Thread(target=stamp, args=(name,))
        thread.start()
        return thread

    return ack, start, told


def queued(ack: SyncXorAckDynamoDB) -> int:
    with ack._queue_lock:
        return len(ack._merging.queues.get("t", []))


def test_sync_caller_interrupted_in_its_write_leaves_no_stamp_stranded(
    backend: tuple[str, TableSpec],
) -> None:
    """A caller is interrupted (Ctrl-C) in its own write while stamps wait behind it: it
    gets the interruption, those queued behind it are written by another thread, and its
    stamp sent again with its token lands once."""
    started = threading.Event()

    def before_update(n: int, ack: SyncXorAckDynamoDB) -> None:
        if n == 1:  # a's own write: b and c queue behind it, then Ctrl-C (before sending)
            started.set()
            until(lambda: queued(ack) == 2)
            raise KeyboardInterrupt

    ack, start, told = _sync_callers(backend, before_update)
    threads = [start("a")]
    assert started.wait(5)
    threads += [start("b"), start("c")]
    for thread in threads:
        thread.join(10)
    assert isinstance(told["a"], KeyboardInterrupt)
    assert all(isinstance(told[n], Stamp) and not told[n].acked for n in "bc"), told
    assert not ack.stamp("t", STAMPS["a"], token="a").acked
    assert ack.stamp("t", STAMPS["d"], token="d").acked  # a, b, c and d, each once


def test_a_sync_caller_returns_once_its_own_stamp_is_written(
    backend: tuple[str, TableSpec],
) -> None:
    """The caller that wrote first went on writing the stamps that queued behind it, and
    those queued behind those: under steady contention it never returned.  Now its
    stamp is told as soon as it is written; the others are written by another thread."""
    a_done = threading.Event()
    order: list[str] = []

    def before_update(n: int, ack: SyncXorAckDynamoDB) -> None:
        if n == 1:  # a's own write: b queues behind it
            until(lambda: queued(ack) == 1)
        elif n == 2:  # b's: written once a was told (or, before, never: a wrote it)
            order.append("b's write" if a_done.wait(5) else "b's write, a still in stamp()")

    ack, start, told = _sync_callers(backend, before_update)
    a = start("a")
    until(lambda: "t" in ack._merging.queues)
    b = start("b")
    a.join(10)
    a_done.set()
    b.join(10)
    assert isinstance(told["a"], Stamp) and isinstance(told["b"], Stamp)
    assert order == ["b's write"]


class _NoWriterThreads(threading.Thread):
    """A process out of threads (a pids limit, Lambda's 1,024, interpreter shutdown): the
    client's writer thread is refused as CPython refuses one then; the test's start."""

    def start(self) -> None:
        if getattr(getattr(self, "_target", None), "__name__", "") == "_write_rest":
            raise RuntimeError("can't start new thread")
        super().start()


def test_a_sync_caller_writes_what_queued_behind_it_when_no_thread_can_start(
    backend: tuple[str, TableSpec], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller whose stamp landed was told ``RuntimeError`` (it would stamp again: XOR
    twice), the stamp queued behind it was never written nor told, and the tag stayed in
    flight: every later stamp on it waited forever.  It writes them itself instead."""

    def before_update(n: int, ack: SyncXorAckDynamoDB) -> None:
        if n == 1:  # a's own write: b queues behind it
            until(lambda: queued(ack) == 1)

    ack, start, told = _sync_callers(backend, before_update)
    monkeypatch.setattr(threading, "Thread", _NoWriterThreads)
    a = start("a")
    until(lambda: "t" in ack._merging.queues)
    threads = [a, start("b")]
    for thread in threads:
        thread.join(10)
    assert isinstance(told["a"], Stamp) and isinstance(told["b"], Stamp), told
    assert "t" not in ack._merging.queues  # nothing in flight: the next stamp is written
    assert not ack.stamp("t", STAMPS["c"], token="c").acked
    assert ack.stamp("t", STAMPS["d"], token="d").acked


STAMPS = {name: new_stamp() for name in "abcd"}


class Boom(ConnectionResetError):
    """What a client you pass may raise that is no botocore error (a wrapper's own)."""


async def _three_callers(
    kind: str, local: tuple[str, TableSpec], fail_write: int
) -> tuple[dict[str, Any], Any, dict[str, Stamp], Stamp]:
    """a stamps; b and c queue behind a's write; the ``fail_write``-th UpdateItem of the
    stamping client (1: a's own; 2: the merge of b and c) raises ``Boom``.  Returns what
    each caller was told, the chain as it is, the stamps and the root."""
    endpoint, spec = local
    stamps = {name: new_stamp() for name in "abc"}
    root = xor(new_stamp(), *stamps.values())  # never acked by a, b, c
    setup = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1"), table=spec.name
    )
    setup.create("t", root)
    told: dict[str, Any] = {}
    writes: list[int] = []

    if kind == "async":

        def before_async(params: dict[str, Any]) -> None:
            writes.append(1)
            if len(writes) == fail_write:
                raise Boom("wrapper refused the request")

        async with hooked_client(
            "async", endpoint, spec.name, before={"update_item": before_async}
        ) as ack:
            results = await asyncio.gather(
                *(ack.stamp("t", stamps[n]) for n in "abc"), return_exceptions=True
            )
            await ack.drain()
        told = dict(zip("abc", results, strict=True))
    else:
        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
        started = threading.Event()
        ack: Any = None

        def queued() -> int:
            with ack._queue_lock:
                return len(ack._merging.queues.get("t", []))

        def before_sync(params: dict[str, Any]) -> None:
            writes.append(1)
            if len(writes) == 1:  # a's own write: b and c queue behind it
                started.set()
                until(lambda: queued() == 2)
            if len(writes) == fail_write:
                raise Boom("wrapper refused the request")

        ack = SyncXorAckDynamoDB(_Hooked(client, {"update_item": before_sync}, {}), table=spec.name)

        def stamp(name: str) -> None:
            try:
                told[name] = ack.stamp("t", stamps[name])
            except Exception as exc:
                told[name] = exc

        threads = {n: threading.Thread(target=stamp, args=(n,)) for n in "abc"}
        threads["a"].start()
        assert started.wait(5)
        threads["b"].start()
        threads["c"].start()
        for thread in threads.values():
            thread.join(10)
    state = setup.get("t")
    return told, state, stamps, root


@pytest.mark.ddblocal
@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_landed_stamp_is_not_told_the_error_of_a_later_merge(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """a's write lands; the merge of b and c (written after it) raises.  a's stamp is in
    the chain, so a is told its state: the sync client told it the error of the others'
    write (a caller told an error for a stamp that landed stamps again, and XOR twice
    cancels it out)."""
    told, state, stamps, root = await _three_callers(kind, local, fail_write=2)
    assert state.stamp == xor(root, stamps["a"])  # a landed, b and c did not
    assert isinstance(told["b"], Boom) and isinstance(told["c"], Boom)
    assert told["a"] == xor(root, stamps["a"]), f"{kind}: a's landed stamp told {told['a']!r}"


@pytest.mark.ddblocal
@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_stamps_queued_behind_a_failed_first_write_are_treated_alike(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    """a's own write raises (no botocore error): b and c, queued and never sent, are
    written by the next merge, by both clients (as after a botocore error, and as the
    sync one did after an interruption); the sync client failed them with a's error
    without sending them."""
    told, state, stamps, root = await _three_callers(kind, local, fail_write=1)
    assert isinstance(told["a"], Boom)
    ok = [n for n in "bc" if isinstance(told[n], Stamp)]
    expected = root if not ok else xor(root, *(stamps[n] for n in ok))
    assert state.stamp == expected  # never lies, either way
    assert ok == ["b", "c"], f"{kind}: queued stamps told {told['b']!r}, {told['c']!r}"
