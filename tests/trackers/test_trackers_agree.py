"""Differential: PyAck, CAck and the Acker, fed the same random operations, send the same events.

The three trackers share one idea (XOR to zero, early messages kept, rotating
timeout generations, a high-water mark) and one timeout engine; this checks
they agree, event by event and counter by counter.  An Ack chain ``str(k)``
is the Acker's tree ``k``; ``add`` is ``Track``, ``stamp`` is ``Ok`` (8-byte
stamps are int64 ids).

One difference is by design and bridged here: when an ``add`` claims an entry
whose stamps came first, ``Ack`` gives the chain a whole timeout from its add,
while a ``Track`` leaves the tree in the generation of its first message.  The
Acker's side therefore sends a ``ResetTimeout`` after such a ``Track`` (what a
spout that wants Ack's behaviour would do).  That also makes the order of the
timeouts *within one tick* differ, so a tick's events are compared as a set.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xor_ack_dynamodb.acker import Acked, Acker, Nacked
from xor_ack_dynamodb.memory import CAck, PyAck

KEYS = [7, -9, 12]
#: Small ids, so that random sequences complete chains: 1 ^ 2 ^ 3 == 0, 3 ^ 5 ^ 6 == 0.
IDS = [1, 2, 3, 5, 6, -1]

operations = st.one_of(
    st.tuples(st.sampled_from(["add", "stamp"]), st.sampled_from(KEYS), st.sampled_from(IDS)),
    st.tuples(st.sampled_from(["fail", "reset"]), st.sampled_from(KEYS)),
    st.tuples(st.just("tick")),
)
Op = tuple[Any, ...]
Trace = list[tuple[Any, ...]]


def stamp(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def trace_ack(ack: PyAck, ops: list[Op], *, tick_as_set: bool = True) -> Trace:
    events: list[tuple[Any, ...]] = []
    ack.on("acked", lambda tag: events.append(("acked", int(tag))))
    ack.on("failed", lambda tag, reason: events.append(("failed", int(tag), str(reason))))
    trace: Trace = []
    for verb, *args in ops:
        error = None
        try:
            if verb == "add":
                ack.add(str(args[0]), stamp(args[1]))
            elif verb == "stamp":
                ack.stamp(str(args[0]), stamp(args[1]))
            elif verb == "fail":
                ack.fail(str(args[0]))
            elif verb == "reset":
                ack.reset_timeout(str(args[0]))
            else:
                ack.tick()
        except Exception as exc:
            error = type(exc).__name__
        trace.append(step(verb, error, events, tick_as_set))
    s = ack.stats
    counters = (s.added, s.acked, s.failed, s.expired, s.overflowed, s.pending)
    trace.append((*counters, s.unclaimed, s.orphaned, s.dropped))
    return trace


def trace_acker(acker: Acker, ops: list[Op]) -> Trace:
    events: list[tuple[Any, ...]] = []

    def on_acked(acked: Acked) -> None:
        events.append(("acked", acked.anchor_id))

    def on_nacked(nacked: Nacked) -> None:
        events.append(("failed", nacked.anchor_id, str(nacked.reason)))

    acker.on("acked", on_acked)
    acker.on("failed", on_nacked)
    trace: Trace = []
    for verb, *args in ops:
        error = None
        try:
            if verb == "add":
                held = acker.state(args[0])
                acker.track("spout", f"source-{args[0]}", args[0], args[1])
                if held is not None and not held.tracked:  # claimed: see the module docstring
                    acker.reset_timeout(args[0])
            elif verb == "stamp":
                acker.ok(args[0], args[1])
            elif verb == "fail":
                acker.fail(args[0])
            elif verb == "reset":
                acker.reset_timeout(args[0])
            else:
                acker.tick()
        except Exception as exc:
            error = type(exc).__name__
        trace.append(step(verb, error, events, True))
    s = acker.stats
    counters = (s.tracked, s.acked, s.failed, s.expired, s.overflowed, s.pending)
    trace.append((*counters, s.untracked, s.orphaned, s.dropped))
    return trace


def step(
    verb: str, error: str | None, events: list[tuple[Any, ...]], tick_as_set: bool
) -> tuple[Any, ...]:
    """One op's line of the trace: its error and the events it sent (a tick's maybe as a set)."""
    sent = sorted(events) if verb == "tick" and tick_as_set else list(events)
    events.clear()
    return (verb, error, sent)


def ack_classes() -> list[type[PyAck]]:
    """Both Ack cores; the C one is left out only if the extension is not built (and allowed)."""
    if CAck is None:
        if os.environ.get("XOR_ACK_REQUIRE_EXTENSION"):
            pytest.fail(
                "XOR_ACK_REQUIRE_EXTENSION is set but the C extension _ackcore is not built"
            )
        return [PyAck]
    return [PyAck, CAck]  # type: ignore[list-item]


SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(
    ops=st.lists(operations, max_size=50),
    buckets=st.integers(2, 4),
    high_water=st.one_of(st.none(), st.integers(1, 3)),
)
def test_ack_cores_and_acker_send_the_same_events(
    ops: list[Op], buckets: int, high_water: int | None
) -> None:
    expected = trace_acker(Acker(buckets=buckets, high_water=high_water), ops)
    for cls in ack_classes():
        assert trace_ack(cls(buckets=buckets, high_water=high_water), ops) == expected, cls


@SETTINGS
@given(
    ops=st.lists(operations, max_size=50),
    buckets=st.integers(2, 4),
    high_water=st.one_of(st.none(), st.integers(1, 3)),
)
def test_the_two_ack_cores_agree_in_every_order(
    ops: list[Op], buckets: int, high_water: int | None
) -> None:
    """Between the cores nothing is bridged: a tick's events must come in the same order."""
    traces = [
        trace_ack(cls(buckets=buckets, high_water=high_water), ops, tick_as_set=False)
        for cls in ack_classes()
    ]
    assert len(traces) == 2 or CAck is None
    assert all(trace == traces[0] for trace in traces)


def test_a_claimed_tree_keeps_its_generation_in_the_acker_but_not_in_ack() -> None:
    """The difference the differential test bridges, pinned so that changing it is a decision."""
    ack, acker = PyAck(buckets=2), Acker(buckets=2)
    ack.stamp("7", stamp(1))
    acker.ok(7, 1)
    ack.tick()
    acker.tick()
    ack.add("7", stamp(2))
    acker.track("spout", "s", 7, 2)
    assert ack.tick() == 0  # a whole timeout from the add
    assert [n.reason for n in acker.tick()] == ["timeout"]  # the generation of the first Ok
