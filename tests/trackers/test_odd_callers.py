"""What callers hand the in-memory trackers that is not quite what it looks like: a tree
helper copied into forked processes, an object whose ``__call__`` is async, a ``Stamp``
subclass with a ``__bytes__`` of its own, a ticker left in a closed event loop, a blocking
sink whose methods return coroutines.  Each one once gave a wrong answer."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from xor_ack_dynamodb.acker import Acker
from xor_ack_dynamodb.errors import InvalidArgument, InvalidListener
from xor_ack_dynamodb.memory import CAck, PyAck
from xor_ack_dynamodb.memory.tuple_tree import AckerSink, AckSink, TupleTree
from xor_ack_dynamodb.stamps import Stamp


class _Recorder:
    """A blocking sink that only records the folded values a bolt stamps."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def init(self, anchor_id: int, value: int, *, task_id: Any, source_id: Any) -> bool:
        return False

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        self.sent.append(value)
        return False

    def fail(self, anchor_id: int) -> None:
        pass


# -- an unseeded IdGenerator repeats its ids in every forked process ---------------------


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_bolts_forked_from_one_process_draw_the_same_child_ids_and_falsely_ack_the_tree() -> None:
    """A TupleTree (its default ``IdGenerator()``, "random int64s") made before a fork -- a
    prefork worker pool, multiprocessing's fork start method -- hands every process the same
    Mersenne Twister state.  Two bolts in two processes then draw the same child id; their
    folded stamps cancel each other's children, and the tree reads zero -- "acked" -- while
    both children are still to be processed."""
    ack = PyAck()
    acked: list[str] = []
    ack.on("acked", acked.append)
    spout = TupleTree(AckSink(ack))
    started = spout.start(roots=2)
    first, second = started.roots

    bolt = TupleTree(_Recorder())  # the workers' bolt helper, made before the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process: one bolt acks `first`, 1 child
        try:
            emitted = bolt.ack(first, children=1)
            os.write(write, f"{bolt.sink.sent[0]} {emitted.children[0].tuple_id}".encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child_value, child_child = (int(x) for x in os.read(read, 200).split())
    os.close(read)
    emitted = bolt.ack(second, children=1)  # this process's bolt acks `second`, 1 child

    sink = AckSink(ack)  # both bolts' stamps reach the tracker
    sink.xor(started.anchor_id, child_value, token=None)
    completed = sink.xor(started.anchor_id, bolt.sink.sent[0], token=None)
    # two children (one per process) are still pending: the tree must not be acked
    assert not completed and acked == [], (
        f"tree acked while children {child_child} and {emitted.children[0].tuple_id} are pending"
    )


# -- an async listener that is an object with ``async def __call__`` is not refused ------


class _AsyncCallable:
    def __init__(self) -> None:
        self.ran: list[object] = []

    async def __call__(self, *args: object) -> None:  # called, never awaited: never runs
        self.ran.append(args)


def test_an_object_whose_call_is_async_is_refused_like_an_async_def_listener(
    Ack: type[PyAck],
) -> None:
    """docs/trackers.md: "Listeners are called, never awaited, so an ``async def`` one is
    refused (``InvalidListener``)".  An object whose ``__call__`` is ``async def`` is taken,
    and every event it should get is lost (a coroutine made and never awaited)."""
    for tracker in (Ack(), Acker()):
        for event in ("acked", "failed", "event"):
            with pytest.raises(InvalidListener):
                tracker.on(event, _AsyncCallable())  # type: ignore[call-overload]


# -- the two cores read a Stamp subclass differently ---------------------------------------


class _WrappedStamp(Stamp):
    """A Stamp subclass whose ``__bytes__`` is not its buffer (a wrapper's own encoding)."""

    __slots__ = ()

    def __bytes__(self) -> bytes:
        return b"\x01" * len(self)


@pytest.mark.skipif(CAck is None, reason="C extension _ackcore not built")
def test_both_cores_read_a_stamp_subclass_by_its_buffer() -> None:
    """The C core reads a Stamp subclass by its buffer; PyAck (``_checked`` ->
    ``int.from_bytes``) by its ``__bytes__``: one call, two states, and on one core the
    chain is acked while on the other it is pending."""
    results = {}
    for cls in (PyAck, CAck):
        ack = cls()
        ack.add("t", b"\x00\x05")
        results[cls.implementation] = (ack.stamp("t", _WrappedStamp(b"\x00\x05")), "t" in ack)
    assert results["python"] == results["c"] == (True, False)


# -- a ticker left in a closed event loop blocks every later ticker of its Ack ------------


def test_a_ticker_whose_event_loop_is_closed_does_not_keep_a_new_ticker_from_starting(
    Ack: type[PyAck],
) -> None:
    """A ticker started (``ticker.start()``) in a loop that was closed without stopping it
    (``loop.run_until_complete(...)`` then ``loop.close()``, as older code and per-test loops
    do) can never tick again, yet ``running`` stays True for good: every later
    ``ack.ticking()`` -- in a new loop -- raises ``TickerRunning``, so the Ack's chains never
    time out again (and ``stop()`` on the old one raises a bare ``RuntimeError``)."""
    ack = Ack(timeout=0.05)
    old_loop = asyncio.new_event_loop()

    async def start_and_leave() -> None:
        ack.ticking().start()
        await asyncio.sleep(0)

    old_loop.run_until_complete(start_and_leave())
    old_loop.close()

    async def tick_in_a_new_loop() -> None:
        async with ack.ticking():  # TickerRunning: "another ticker of this Ack is already running"
            ack.add("job-1", b"\x01")
            await asyncio.sleep(0.3)

    asyncio.run(tick_in_a_new_loop())
    assert ack.stats.expired == 1


# -- a blocking TupleTree takes the coroutines of a sink's plain methods for "completed" ---


class _AsyncAckerSink:
    """An async sink over in-process ackers."""

    def __init__(self) -> None:
        self.acker = Acker()
        self.inner = AckerSink([self.acker])

    async def init(self, anchor_id: int, value: int, *, task_id: Any, source_id: Any) -> bool:
        return self.inner.init(anchor_id, value, task_id=task_id, source_id=source_id)

    async def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> bool:
        return self.inner.xor(anchor_id, value, token=token)

    async def fail(self, anchor_id: int) -> None:
        self.inner.fail(anchor_id)


class _PlainDefAdapter:
    """A sink written with plain ``def`` methods that hand back an async sink's calls (a
    thin wrapper, or a decorator that hides ``async def``): ``iscoroutinefunction`` is False."""

    def __init__(self, sink: _AsyncAckerSink) -> None:
        self.sink = sink

    def init(self, anchor_id: int, value: int, *, task_id: Any, source_id: Any) -> Any:
        return self.sink.init(anchor_id, value, task_id=task_id, source_id=source_id)

    def xor(self, anchor_id: int, value: int, *, token: bytes | None) -> Any:
        return self.sink.xor(anchor_id, value, token=token)

    def fail(self, anchor_id: int) -> Any:
        return self.sink.fail(anchor_id)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the coroutines never awaited
def test_a_blocking_tree_never_takes_a_coroutine_for_completed() -> None:
    """memory/tuple_tree.py's _Driver: "a blocking driver would take an async sink's
    coroutines for answers (a truthy 'completed', nothing written)" -- checked only by
    ``iscoroutinefunction`` of the sink's methods.  A sink whose plain methods return
    coroutines passes that check: ``start()`` and ``ack()`` report ``completed`` as a
    (truthy) coroutine, and the tree was never written anywhere."""
    async_sink = _AsyncAckerSink()
    tree = TupleTree(_PlainDefAdapter(async_sink))
    try:
        started = tree.start()
        emitted = tree.ack(started.roots[0], children=2)
    except InvalidArgument:
        return  # refused: fine
    assert started.completed is False and emitted.completed is False, (
        f"completed={emitted.completed!r} while the acker holds {len(async_sink.acker)} trees"
    )
