"""The in-memory trackers give the same typed events as the DynamoDB stream (``on("event")``)."""

from __future__ import annotations

from typing import Any

import pytest

from xor_ack_dynamodb import events
from xor_ack_dynamodb.acker import Acker, Nacked
from xor_ack_dynamodb.errors import InvalidArgument, InvalidListener
from xor_ack_dynamodb.memory import PyAck


def test_ack_events_beside_the_seed_listeners(Ack: type[PyAck]) -> None:
    ack = Ack(high_water=2)
    seen: list[events.ChainEvent] = []
    plain: list[object] = []
    ack.on("acked", plain.append)
    ack.on("failed", lambda tag, reason: plain.append((tag, reason)))
    assert ack.on("event", seen.append) == seen.append
    ack.add("a", b"\x01" * 8)
    ack.stamp("a", b"\x01" * 8)  # the C fast path completes it
    ack.add("b", b"\x01" * 8)
    ack.fail("b")
    ack.add("c", b"\x02" * 8)
    ack.add("d", b"\x02" * 8)
    ack.add("e", b"\x02" * 8)  # high water: overflow
    ack.tick()
    ack.tick()
    ack.tick()  # c and d time out
    assert plain == ["a", ("b", "failed"), ("e", "overflow"), ("c", "timeout"), ("d", "timeout")]
    assert [(type(e), e.tag) for e in seen] == [
        (events.Acked, "a"),
        (events.Failed, "b"),
        (events.Failed, "e"),
        (events.TimedOut, "c"),
        (events.TimedOut, "d"),
    ]
    assert [getattr(e, "reason", None) for e in seen] == [
        None,
        "failed",
        "overflow",
        "timeout",
        "timeout",
    ]
    acked = seen[0]
    assert isinstance(acked, events.Acked)
    assert (acked.chain_id, acked.latency) == (b"", None)
    assert len({e.id for e in seen}) == len(seen)


def test_ack_off_event_removes_both_adapters(Ack: type[PyAck]) -> None:
    ack = Ack()
    seen: list[events.ChainEvent] = []
    ack.on("event", seen.append)
    assert ack.off("event", seen.append) is True
    assert ack.off("event", seen.append) is False
    ack.add("a", b"\x01" * 8)
    ack.stamp("a", b"\x01" * 8)
    ack.add("b", b"\x01" * 8)
    ack.fail("b")
    assert seen == []


def test_ack_off_removes_only_the_registration_of_the_event_it_names(Ack: type[PyAck]) -> None:
    ack = Ack()
    seen: list[object] = []
    ack.on("event", seen.append)  # fn(event)
    assert ack.off("acked", seen.append) is False  # never an "acked" listener: nothing changes
    ack.add("a", b"\x01" * 8)
    ack.stamp("a", b"\x01" * 8)
    assert [type(e) for e in seen] == [events.Acked]
    seen.clear()
    ack.on("acked", seen.append)  # the same callable as fn(tag) too
    assert ack.off("event", seen.append) is True  # the event adapters go, fn(tag) stays
    ack.add("b", b"\x01" * 8)
    ack.stamp("b", b"\x01" * 8)
    ack.add("c", b"\x01" * 8)
    ack.fail("c")
    assert seen == ["b"]


def test_an_async_listener_is_refused_rather_than_never_run(Ack: type[PyAck]) -> None:
    # Listeners are called, not awaited: an async one would only make a coroutine.
    async def on_acked(tag: str) -> None:
        raise AssertionError("never runs")

    for tracker in (Ack(), Acker()):
        for event in ("acked", "failed", "event"):
            with pytest.raises(InvalidListener, match="create_task"):
                tracker.on(event, on_acked)  # type: ignore[call-overload]
        assert tracker.off("acked", on_acked) is False  # nothing was registered
        assert tracker.off("event", on_acked) is False


def test_ack_refuses_a_listener_that_is_not_callable(Ack: type[PyAck]) -> None:
    for event in ("acked", "failed", "event"):
        with pytest.raises(InvalidListener, match="callable"):
            Ack().on(event, "print")  # type: ignore[call-overload]
    with pytest.raises(InvalidArgument, match='"event"'):
        Ack().on("done", print)  # type: ignore[call-overload]


def test_acker_listeners_can_be_removed_as_an_acks() -> None:
    acker = Acker()
    seen: list[object] = []
    acker.on("acked", seen.append)
    acker.on("failed", seen.append)
    acker.on("event", seen.append)
    assert acker.off("event", seen.append) is True
    assert acker.off("acked", seen.append) is True
    assert acker.off("acked", seen.append) is False
    acker.track("spout", "row-1", anchor_id=7, value=5)
    acker.ok(7, 5)
    acker.track("spout", "row-2", anchor_id=8, value=5)
    acker.fail(8, 5)
    assert [type(e) for e in seen] == [Nacked]  # only the plain "failed" listener is left
    with pytest.raises(InvalidArgument):
        acker.off("done", print)  # type: ignore[arg-type]


def test_acker_events() -> None:
    acker = Acker()
    seen: list[events.ChainEvent] = []
    acker.on("event", seen.append)
    acker.track("spout", "row-1", anchor_id=7, value=5)
    acker.ok(7, 5)
    acker.track("spout", "row-2", anchor_id=-8, value=5)
    acker.fail(-8, 5)
    acker.track("spout", "row-3", anchor_id=9, value=5)
    for _ in range(3):
        acker.tick()
    assert [(type(e), e.tag) for e in seen] == [
        (events.Acked, "7"),
        (events.Failed, "-8"),
        (events.TimedOut, "9"),
    ]


def test_one_transition_has_one_id_for_every_event_listener(Ack: type[PyAck]) -> None:
    """docs/events.md: a transition seen by two consumers gives the same id.  Each listener
    made its own event, with its own ``time``: deduplicating by id counted each twice.  The
    same tag finished again is another transition, with another id."""
    ack = Ack(high_water=10)
    metrics: list[events.ChainEvent] = []
    audit: list[events.ChainEvent] = []
    ack.on("event", metrics.append)
    ack.on("acked", lambda tag: None)  # a plain listener between them changes nothing
    ack.on("event", audit.append)
    tag = "job-1"
    for _ in range(2):
        ack.add(tag, b"\x01" * 8)
        ack.stamp(tag, b"\x01" * 8)
    ack.add("job-2", b"\x02" * 8)
    ack.fail("job-2")
    expected = [("acked", "job-1"), ("acked", "job-1"), ("failed", "job-2")]
    assert [(e.kind, e.tag) for e in metrics] == expected
    assert [e.id for e in metrics] == [e.id for e in audit]
    assert len({e.id for e in metrics}) == 3


def test_one_tree_has_one_id_for_every_event_listener() -> None:
    acker = Acker()
    first: list[events.ChainEvent] = []
    second: list[events.ChainEvent] = []
    acker.on("event", first.append)
    acker.on("event", second.append)
    acker.track("spout", "row-1", 7, 5)
    acker.ok(7, 5)
    acker.track("spout", "row-2", 8, 6)
    acker.fail(8)
    assert [e.kind for e in first] == ["acked", "failed"]
    assert [e.id for e in first] == [e.id for e in second]


def test_an_async_generator_listener_is_refused_as_an_async_one() -> None:
    """``async def ... yield``: a call makes an async generator and runs none of its code."""

    async def listener(event: events.ChainEvent) -> Any:
        yield event

    for tracker in (PyAck(), Acker()):
        with pytest.raises(InvalidListener, match="async"):
            tracker.on("event", listener)


def test_an_acker_is_neither_copied_nor_pickled() -> None:
    """A copy shared the trees and kept counters of its own: two trackers of one state."""
    import copy
    import pickle

    acker = Acker()
    acker.track("spout", "row-1", 7, 5)
    for copy_of in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot pickle or copy 'Acker'"):
            copy_of(acker)
