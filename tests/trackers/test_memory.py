"""The in-memory tracker: the seed's verbs and events, Storm's tolerances, timeouts, high water."""

from __future__ import annotations

import asyncio
import copy
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

import xor_ack_dynamodb
from xor_ack_dynamodb.errors import (
    BufferLengthsUnequal,
    InvalidArgument,
    InvalidStamp,
    InvalidTag,
    InvalidTimeout,
    TagExists,
    TickerRunning,
    ZeroBufferNoOp,
)
from xor_ack_dynamodb.memory import AckStats, CAck, FailReason, PyAck
from xor_ack_dynamodb.memory.acker import Acker
from xor_ack_dynamodb.stamps import AppliedBefore, Stamp, new_stamp, xor


class Events:
    """Records every event of one tracker, in order."""

    def __init__(self, ack: PyAck) -> None:
        self.log: list[tuple[str, ...]] = []
        ack.on("acked", lambda tag: self.log.append(("acked", tag)))
        ack.on("failed", lambda tag, reason: self.log.append(("failed", tag, reason)))

    def take(self) -> list[tuple[str, ...]]:
        log, self.log = self.log, []
        return log


def b(hex_: str) -> bytes:
    return bytes.fromhex(hex_)


def check_balance(stats: AckStats) -> None:
    assert stats.added == (
        stats.acked + stats.failed + stats.expired + stats.overflowed + stats.pending
    )


# -- the seed's worked example, value by value ---------------------------------


def test_seed_readme_example(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    tag = "unique-file-tag"
    file_stamp, w1, w2, w3 = b("29"), b("25"), b("a9"), b("e9")
    assert xor(file_stamp, w1, w2, w3) == b("4c")

    assert ack.add(tag, file_stamp) is False
    assert ack.state(tag) == b("29")
    assert ack.stamp(tag, b("4c")) is False
    assert ack.state(tag) == b("65")
    assert ack.stamp(tag, w1) is False
    assert ack.state(tag) == b("40")
    assert ack.stamp(tag, w2) is False
    assert ack.state(tag) == b("e9")
    assert events.take() == []
    assert ack.stamp(tag, w3) is True
    assert events.take() == [("acked", tag)]
    assert ack.state(tag) is None
    assert tag not in ack


def test_add_then_one_stamp_of_all_children_then_each_child(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    root, *words = (new_stamp() for _ in range(4))
    ack.add("f", root)
    assert ack.stamp("f", xor(root, *words)) is False
    assert [ack.stamp("f", w) for w in words] == [False, False, True]
    assert events.take() == [("acked", "f")]


def test_state_is_a_stamp_of_the_chain_length(Ack: type[PyAck]) -> None:
    ack = Ack()
    ack.add("t", b"\x00\x01")
    state = ack.state("t")
    assert isinstance(state, Stamp)
    assert state == b"\x00\x01" and not state.acked


# -- errors: typed, and bad input changes nothing ------------------------------


def test_add_of_a_pending_tag_raises_tag_exists_and_changes_nothing(Ack: type[PyAck]) -> None:
    ack = Ack()
    ack.add("t", b"\x01")
    with pytest.raises(TagExists) as info:
        ack.add("t", b"\x02")
    assert info.value.tag == "t" and info.value.code == "TagExists"
    assert str(info.value) == '"t" already exists'
    assert ack.state("t") == b"\x01"
    assert ack.stats.added == 1


# An AppliedBefore (what the DynamoDB client returns) says False to .acked: an all-zero one
# started a chain already at zero (never acked: it could only time out)
@pytest.mark.parametrize("zero", [b"\x00\x00", AppliedBefore(bytes(2))], ids=["bytes", "applied"])
@pytest.mark.parametrize("verb", ["add", "stamp"])
def test_zero_stamp_raises_zero_buffer_noop(Ack: type[PyAck], verb: str, zero: bytes) -> None:
    ack = Ack()
    ack.add("t", b"\x05\x00")
    with pytest.raises(ZeroBufferNoOp):
        getattr(ack, verb)("t" if verb == "stamp" else "u", zero)
    assert ack.state("t") == b"\x05\x00"
    assert "u" not in ack
    assert ack.stats.unclaimed == 0 and ack.stats.added == 1


@pytest.mark.parametrize("bad", [None, "ab", 5, [1], b""])
@pytest.mark.parametrize("verb", ["add", "stamp"])
def test_stamp_that_is_not_bytes_raises_invalid_stamp(
    Ack: type[PyAck], verb: str, bad: Any
) -> None:
    ack = Ack()
    ack.add("t", b"\x05")
    with pytest.raises(InvalidStamp):
        getattr(ack, verb)("t" if verb == "stamp" else "u", bad)
    assert ack.state("t") == b"\x05"
    assert ack.stats.added == 1 and ack.stats.unclaimed == 0


@pytest.mark.parametrize("bad", ["", None, 7, b"t"])
def test_bad_tag_raises_invalid_tag(Ack: type[PyAck], bad: Any) -> None:
    ack = Ack()
    calls: list[Callable[[], object]] = [
        lambda: ack.add(bad, b"\x01"),
        lambda: ack.stamp(bad, b"\x01"),
        lambda: ack.fail(bad),
        lambda: ack.reset_timeout(bad),
    ]
    for call in calls:
        with pytest.raises(InvalidTag):
            call()
    assert ack.stats == Ack().stats


def test_stamp_of_another_length_raises_and_changes_nothing(Ack: type[PyAck]) -> None:
    ack = Ack()
    ack.add("t", b"\x01\x02")
    with pytest.raises(BufferLengthsUnequal):
        ack.stamp("t", b"\x01")
    with pytest.raises(BufferLengthsUnequal):
        ack.stamp("t", b"\x01\x02\x03")
    assert ack.state("t") == b"\x01\x02"
    assert ack.stamp("t", b"\x01\x02") is True


def test_add_of_another_length_than_its_early_stamps_raises(Ack: type[PyAck]) -> None:
    ack = Ack()
    ack.stamp("t", b"\x01\x02")
    with pytest.raises(BufferLengthsUnequal):
        ack.add("t", b"\x01")
    assert ack.stats.unclaimed == 1 and ack.stats.added == 0
    assert ack.add("t", b"\x01\x02") is True


def test_bytes_like_stamps_are_accepted(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    ack.add("t", bytearray(b"\x0f\xf0"))
    ack.stamp("t", memoryview(b"\x0f\x00"))
    assert ack.stamp("t", Stamp(b"\x00\xf0")) is True
    assert events.take() == [("acked", "t")]


def test_str_subclass_tags_work(Ack: type[PyAck]) -> None:
    class Tag(str):
        pass

    ack = Ack()
    ack.add(Tag("t"), b"\x01")
    assert ack.stamp(Tag("t"), b"\x01") is True


def test_add_and_stamp_take_their_arguments_by_name(Ack: type[PyAck]) -> None:
    """``tag=`` / ``stamp=``, as ``PyAck`` and the stubs (``_ackcore.pyi``) declare them: the
    C core's methods used to refuse them (``Core.add() takes no keyword arguments``)."""
    ack = Ack()
    events = Events(ack)
    assert ack.add(tag="t", stamp=b"\x05" * 8) is False
    assert ack.stamp(stamp=b"\x01" * 8, tag="t") is False
    assert ack.stamp("t", stamp=b"\x04" * 8) is True
    assert events.take() == [("acked", "t")]
    # By name, the calls that are not the plain case reach the same slow path.
    assert ack.stamp(tag="u", stamp=bytearray(b"\x01")) is False
    assert ack.stats.unclaimed == 1
    with pytest.raises(ZeroBufferNoOp):
        ack.add(tag="v", stamp=b"\x00")
    with pytest.raises(InvalidTag):
        ack.add(stamp=b"\x01", tag="")


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        pytest.param(("t",), {}, "missing", id="stamp missing"),
        pytest.param((), {"stamp": b"\x01"}, "missing", id="tag missing"),
        pytest.param(("t", b"\x01", b"\x01"), {}, "positional argument", id="three arguments"),
        pytest.param(("t",), {"tag": "u"}, "multiple values for argument 'tag'", id="tag twice"),
        pytest.param(("t",), {"stamps": b"\x01"}, "unexpected keyword argument", id="misspelt"),
    ],
)
@pytest.mark.parametrize("verb", ["add", "stamp"])
def test_add_and_stamp_refuse_arguments_that_do_not_bind_and_change_nothing(
    Ack: type[PyAck], verb: str, args: tuple[Any, ...], kwargs: dict[str, Any], error: str
) -> None:
    ack = Ack()
    with pytest.raises(TypeError, match=error):
        getattr(ack, verb)(*args, **kwargs)
    assert len(ack) == 0 and ack.stats == Ack().stats


# -- a finished tag is forgotten -------------------------------------------------


def test_acked_tag_can_start_again(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    for _ in range(3):
        ack.add("t", b"\x07")
        assert ack.stamp("t", b"\x07") is True
    assert events.take() == [("acked", "t")] * 3
    assert ack.stats.acked == 3 and len(ack) == 0


def test_failed_tag_can_start_again(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    ack.add("t", b"\x07")
    assert ack.fail("t") is True
    ack.add("t", b"\x09")
    assert ack.stamp("t", b"\x09") is True
    assert events.take() == [("failed", "t", "failed"), ("acked", "t")]


def test_fail_of_a_pending_chain(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    ack.add("t", b"\x07")
    ack.stamp("t", b"\x01")
    assert ack.fail("t") is True
    (event,) = events.take()
    assert event == ("failed", "t", "failed")
    reason: object = event[2]
    assert reason is FailReason.FAILED
    assert "t" not in ack
    assert ack.stats.failed == 1 and ack.stats.pending == 0


# -- Storm's tolerances: nothing that arrives early is lost ---------------------


def test_stamps_before_add_are_kept_and_complete_the_chain(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    root, w1, w2 = new_stamp(), new_stamp(), new_stamp()
    assert ack.stamp("t", w1) is False  # a child finished before anyone added the chain
    assert ack.stamp("t", xor(root, w1, w2)) is False
    assert "t" not in ack and ack.stats.unclaimed == 1
    assert ack.add("t", root) is False
    assert ack.stats.unclaimed == 0 and ack.stats.pending == 1
    assert ack.state("t") == w2
    assert ack.stamp("t", w2) is True
    assert events.take() == [("acked", "t")]


def test_add_completes_a_chain_whose_other_stamps_all_came_first(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    root, w = new_stamp(), new_stamp()
    ack.stamp("t", xor(root, w))
    ack.stamp("t", w)
    assert ack.add("t", root) is True
    assert events.take() == [("acked", "t")]
    stats = ack.stats
    assert (stats.added, stats.acked, stats.pending, stats.unclaimed) == (1, 1, 0, 0)


def test_fail_before_add_fails_the_chain_at_its_add(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    assert ack.fail("t") is False
    assert ack.stats.unclaimed == 1
    assert ack.add("t", b"\x05") is False
    assert events.take() == [("failed", "t", "failed")]
    assert "t" not in ack and ack.stats.failed == 1 and ack.stats.unclaimed == 0
    check_balance(ack.stats)


def test_zero_wins_over_a_fail_that_came_first(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    ack.fail("t")
    ack.stamp("t", b"\x05")  # the whole rest of the chain, also before its add
    assert ack.add("t", b"\x05") is True
    assert events.take() == [("acked", "t")]


def test_fail_then_stamps_before_add(Ack: type[PyAck]) -> None:
    ack = Ack()
    events = Events(ack)
    ack.fail("t")
    ack.stamp("t", b"\x05\x00")
    ack.stamp("t", b"\x00\x06")
    with pytest.raises(BufferLengthsUnequal):
        ack.add("t", b"\x05")
    ack.add("t", b"\x05\x07")
    assert events.take() == [("failed", "t", "failed")]


def test_late_fail_after_ack_changes_nothing_and_is_dropped_at_expiry(
    Ack: type[PyAck],
) -> None:
    ack = Ack(buckets=2)
    events = Events(ack)
    ack.add("t", b"\x05")
    ack.stamp("t", b"\x05")
    assert ack.fail("t") is False  # a late fail: the chain has already completed
    ack.tick()
    ack.tick()
    assert events.take() == [("acked", "t")]
    stats = ack.stats
    assert (stats.acked, stats.failed, stats.expired, stats.orphaned) == (1, 0, 0, 1)
    assert stats.unclaimed == 0


def test_early_stamp_never_claimed_is_orphaned_silently(Ack: type[PyAck]) -> None:
    ack = Ack(buckets=3)
    events = Events(ack)
    ack.stamp("ghost", b"\x01")
    assert [ack.tick() for _ in range(3)] == [0, 0, 0]
    assert events.take() == []
    assert ack.stats.orphaned == 1 and ack.stats.unclaimed == 0
    ack.add("ghost", b"\x01")  # a later chain under the tag starts clean
    assert ack.state("ghost") == b"\x01"


# -- timeouts (rotating buckets) ---------------------------------------------------


@pytest.mark.parametrize("buckets", [2, 3, 5])
def test_a_chain_times_out_after_buckets_ticks(Ack: type[PyAck], buckets: int) -> None:
    ack = Ack(buckets=buckets)
    events = Events(ack)
    ack.add("t", b"\x01")
    for _ in range(buckets - 1):
        assert ack.tick() == 0
        assert "t" in ack
    assert ack.tick() == 1
    assert events.take() == [("failed", "t", "timeout")]
    assert ack.stats.expired == 1 and ack.stats.pending == 0
    assert ack.stamp("t", b"\x01") is False  # late: kept as an unclaimed entry
    check_balance(ack.stats)


def test_a_chain_lives_between_n_minus_1_and_n_tick_intervals(Ack: type[PyAck]) -> None:
    """Added just after a tick: N ticks to expire; just before a tick: N - 1 whole intervals."""
    ack = Ack(buckets=3)
    events = Events(ack)
    ack.add("early", b"\x01")  # start of interval 0
    ack.add("late", b"\x02")  # "end" of interval 0: same generation
    ack.tick()
    ack.add("next", b"\x03")
    ack.tick()
    assert events.take() == []
    ack.tick()  # the end of interval 2: both of generation 0 expire
    assert sorted(events.take()) == [("failed", "early", "timeout"), ("failed", "late", "timeout")]
    ack.tick()
    assert events.take() == [("failed", "next", "timeout")]


def test_timeout_sets_the_tick_interval(Ack: type[PyAck]) -> None:
    assert Ack(timeout=30.0).tick_interval == 15.0
    assert Ack(timeout=30.0, buckets=4).tick_interval == 10.0
    assert Ack().tick_interval is None and Ack().timeout is None
    assert Ack(timeout=2).timeout == 2.0


def test_completed_chains_leave_their_bucket(Ack: type[PyAck]) -> None:
    ack = Ack(buckets=2)
    events = Events(ack)
    for i in range(100):
        ack.add(f"t{i}", b"\x01")
        ack.stamp(f"t{i}", b"\x01")
    assert all(not bucket for bucket in ack._buckets)
    assert [ack.tick(), ack.tick()] == [0, 0]
    assert len(events.take()) == 100


def test_reset_timeout_keeps_a_slow_chain_alive(Ack: type[PyAck]) -> None:
    ack = Ack(buckets=3)
    events = Events(ack)
    root, w = new_stamp(), new_stamp()
    ack.add("slow", root)
    for _ in range(10):  # progress, slowly: each step takes two ticks
        ack.tick()
        ack.tick()
        assert ack.reset_timeout("slow") is True
    ack.stamp("slow", xor(root, w))
    ack.tick()
    ack.tick()
    assert ack.stamp("slow", w) is True
    assert events.take() == [("acked", "slow")]


def test_reset_timeout_restarts_the_whole_timeout(Ack: type[PyAck]) -> None:
    ack = Ack(buckets=3)
    events = Events(ack)
    ack.add("t", b"\x01")
    ack.tick()
    ack.tick()
    ack.reset_timeout("t")
    ack.tick()
    ack.tick()
    assert events.take() == []
    ack.tick()
    assert events.take() == [("failed", "t", "timeout")]


def test_reset_timeout_of_an_unknown_tag(Ack: type[PyAck]) -> None:
    ack = Ack()
    assert ack.reset_timeout("nope") is False
    assert ack.stats.unclaimed == 0


def test_listener_may_add_the_expired_tag_again(Ack: type[PyAck]) -> None:
    ack = Ack(buckets=2)
    replayed: list[str] = []

    def replay(tag: str, reason: str) -> None:
        replayed.append(tag)
        ack.add(tag, b"\x02")

    ack.on("failed", replay)
    ack.add("a", b"\x01")
    ack.add("b", b"\x01")
    ack.tick()
    assert ack.tick() == 2
    assert sorted(replayed) == ["a", "b"]
    assert ack.state("a") == b"\x02" and ack.state("b") == b"\x02"
    ack.tick()
    assert ack.tick() == 2  # the replays time out in their turn


# -- high-water mark ------------------------------------------------------------------


def test_add_beyond_high_water_fails_at_once_with_overflow(Ack: type[PyAck]) -> None:
    ack = Ack(high_water=2)
    events = Events(ack)
    ack.add("a", b"\x01")
    ack.add("b", b"\x01")
    assert ack.add("c", b"\x01") is False
    assert events.take() == [("failed", "c", "overflow")]
    assert "c" not in ack and len(ack) == 2
    assert ack.stamp("a", b"\x01") is True
    ack.add("c", b"\x01")  # room again
    assert "c" in ack
    stats = ack.stats
    assert (stats.added, stats.overflowed, stats.pending) == (4, 1, 2)
    check_balance(stats)


def test_early_stamps_count_against_high_water_and_are_dropped_when_full(
    Ack: type[PyAck],
) -> None:
    ack = Ack(high_water=2)
    events = Events(ack)
    ack.stamp("x", b"\x01")
    ack.fail("y")
    ack.stamp("z", b"\x01")  # full: dropped
    assert ack.fail("w") is False  # full: dropped
    assert ack.stats.dropped == 2 and ack.stats.unclaimed == 2
    ack.add("v", b"\x01")
    assert events.take() == [("failed", "v", "overflow")]
    assert ack.add("x", b"\x01") is True  # claiming an entry needs no room


def test_high_water_validation(Ack: type[PyAck]) -> None:
    for bad in (0, -1, 1.5, True, "3"):
        with pytest.raises(InvalidArgument):
            Ack(high_water=bad)  # type: ignore[arg-type]
    for bad_buckets in (1, 0, 2.0, None):
        with pytest.raises(InvalidArgument):
            Ack(buckets=bad_buckets)  # type: ignore[arg-type]
    # 5e-324: a tick interval of 0 s (ticking() then named an interval never passed)
    for bad_timeout in (0, -1, float("inf"), float("nan"), "1", True, 5e-324):
        with pytest.raises(InvalidTimeout):
            Ack(timeout=bad_timeout)  # type: ignore[arg-type]
    assert Ack(high_water=5).high_water == 5 and Ack().high_water is None
    assert Ack(buckets=4).buckets == 4


@pytest.mark.parametrize("huge", [10**400, -(10**400), 10**5000], ids=["1e400", "-1e400", "1e5000"])
def test_an_int_too_big_for_a_float_is_refused_with_invalid_timeout(
    Ack: type[PyAck], huge: int
) -> None:
    """An int passes the type check and used to overflow in ``math.isfinite`` (a raw
    ``OverflowError``); 10**5000 is one whose repr Python refuses (over 4300 digits)."""
    with pytest.raises(InvalidTimeout, match="timeout must be a finite number of seconds"):
        Ack(timeout=huge)
    with pytest.raises(InvalidTimeout, match="interval must be a finite number of seconds"):
        Ack(timeout=1.0).ticking(huge)
    with pytest.raises(InvalidTimeout):
        Ack().ticking(huge)


@pytest.mark.parametrize(
    "settings",
    [{"high_water": -(10**5000)}, {"buckets": 10**5000}, {"high_water": 0}],
    ids=["high_water", "buckets", "small"],
)
def test_a_refused_setting_is_named_in_the_refusal_however_large(
    Ack: type[PyAck], settings: dict[str, int]
) -> None:
    """The message showed the value's ``repr``, which Python refuses for an int of over
    4300 digits: the refusal was a raw ``ValueError`` about integer string conversion."""
    ((name, value),) = settings.items()
    with pytest.raises(InvalidArgument, match=f"^{name} must be an int") as refused:
        Ack(**settings)
    assert str(refused.value).endswith("not 0" if value == 0 else "int of 16610 bits")


@pytest.mark.parametrize("high_water", [sys.maxsize - 1, sys.maxsize, 2**63, 10**30], ids=str)
def test_a_high_water_no_dict_can_reach_is_no_limit_on_both_cores(
    Ack: type[PyAck], high_water: int
) -> None:
    """The C core keeps the mark as a ``Py_ssize_t``: ``Ack(high_water=2**63)`` raised a raw
    ``OverflowError`` there while ``PyAck`` took it.  Both take it now, as no limit."""
    ack = Ack(high_water=high_water)
    assert ack.high_water == high_water
    events = Events(ack)
    assert ack.add("t", b"\x01" * 8) is False
    assert ack.stamp("u", b"\x01") is False  # an early stamp is kept, not dropped
    assert ack.add("w", bytearray(b"\x02")) is False  # the slow path's check too
    assert ack.stamp("t", b"\x01" * 8) is True
    assert events.take() == [("acked", "t")]
    stats = ack.stats
    assert stats.overflowed == stats.dropped == 0 and stats.unclaimed == 1 and len(ack) == 1


def test_an_absurd_number_of_buckets_is_refused_not_allocated(Ack: type[PyAck]) -> None:
    """``buckets`` makes one dict per generation up front: ``Ack(buckets=10**9)`` used to
    allocate a billion of them (the process killed for its memory) instead of saying no."""
    with pytest.raises(InvalidArgument, match=r"buckets must be an int from 2 to 1024, not 10+"):
        Ack(buckets=10**9)
    with pytest.raises(InvalidArgument, match="buckets"):
        Acker(buckets=1025)
    assert Ack(buckets=1024).buckets == 1024


# -- counters ---------------------------------------------------------------------------


def test_counters(Ack: type[PyAck]) -> None:
    ack = Ack(buckets=2, high_water=3)
    ack.add("acked", b"\x01")
    ack.stamp("acked", b"\x01")
    ack.add("failed", b"\x01")
    ack.fail("failed")
    ack.add("expired", b"\x01")
    ack.add("pending", b"\x01")
    ack.stamp("early", b"\x01")
    ack.add("overflow", b"\x01")  # 3 entries held: pending, expired and the early stamp
    ack.tick()
    ack.tick()  # expires "expired", "pending" and the early stamp
    ack.add("fresh", b"\x01")
    stats = ack.stats
    assert stats == AckStats(
        added=6,
        acked=1,
        failed=1,
        expired=2,
        overflowed=1,
        pending=1,
        unclaimed=0,
        orphaned=1,
        dropped=0,
        ack_time_total=stats.ack_time_total,
        ack_time_max=stats.ack_time_max,
    )
    assert 0 <= stats.ack_time_max <= stats.ack_time_total < 60
    assert stats.ack_time_mean == stats.ack_time_total
    check_balance(stats)


def test_ack_time_is_measured_from_add_to_ack(Ack: type[PyAck]) -> None:
    import time

    ack = Ack()
    assert ack.stats.ack_time_mean is None
    ack.add("t", b"\x01")
    time.sleep(0.05)
    ack.stamp("t", b"\x01")
    ack.add("u", b"\x01")
    ack.stamp("u", b"\x01")
    stats = ack.stats
    assert 0.05 <= stats.ack_time_max < 5
    assert stats.ack_time_max <= stats.ack_time_total < 2 * stats.ack_time_max
    assert stats.ack_time_mean == pytest.approx(stats.ack_time_total / 2)


def test_len_contains_repr(Ack: type[PyAck]) -> None:
    ack = Ack(timeout=10)
    ack.add("a", b"\x01")
    ack.stamp("b", b"\x01")
    assert len(ack) == 1
    assert "a" in ack and "b" not in ack and 3 not in ack
    assert "pending=1" in repr(ack) and "unclaimed=1" in repr(ack)


# -- listeners ------------------------------------------------------------------------------


def test_listeners_run_in_order_and_can_be_removed(Ack: type[PyAck]) -> None:
    ack = Ack()
    calls: list[str] = []

    def first(tag: str) -> None:
        calls.append("first:" + tag)

    def second(tag: str) -> None:
        calls.append("second:" + tag)

    assert ack.on("acked", first) is first
    ack.on("acked", second)
    ack.add("t", b"\x01")
    ack.stamp("t", b"\x01")
    assert calls == ["first:t", "second:t"]
    assert ack.off("acked", first) is True
    assert ack.off("acked", first) is False
    ack.add("t", b"\x01")
    ack.stamp("t", b"\x01")
    assert calls == ["first:t", "second:t", "second:t"]


def test_listener_registration_errors(Ack: type[PyAck]) -> None:
    ack = Ack()
    with pytest.raises(InvalidArgument):
        ack.on("done", print)  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        ack.on("acked", "not callable")  # type: ignore[call-overload]
    with pytest.raises(InvalidArgument):
        ack.off("done", print)  # type: ignore[arg-type]


def test_a_raising_listener_does_not_lose_the_chain(Ack: type[PyAck]) -> None:
    ack = Ack()
    later: list[str] = []

    def boom(tag: str) -> None:
        raise RuntimeError("listener bug")

    ack.on("acked", boom)
    ack.on("acked", later.append)
    ack.add("t", b"\x01")
    with pytest.raises(RuntimeError, match="listener bug"):
        ack.stamp("t", b"\x01")
    assert later == ["t"]
    assert "t" not in ack and ack.stats.acked == 1
    ack.add("t", b"\x01")  # the tag is free again


def test_several_raising_listeners_raise_an_exception_group(Ack: type[PyAck]) -> None:
    ack = Ack()

    def boom(tag: str) -> None:
        raise RuntimeError(tag)

    def bang(tag: str) -> None:
        raise KeyError(tag)

    ack.on("acked", boom)
    ack.on("acked", bang)
    ack.add("t", b"\x01")
    with pytest.raises(ExceptionGroup) as info:
        ack.stamp("t", b"\x01")
    assert [type(e) for e in info.value.exceptions] == [RuntimeError, KeyError]


def test_raising_failed_listener_during_tick_forgets_every_expired_chain(
    Ack: type[PyAck],
) -> None:
    ack = Ack(buckets=2)
    seen: list[str] = []

    def boom(tag: str, reason: str) -> None:
        seen.append(tag)
        raise RuntimeError(tag)

    ack.on("failed", boom)
    for tag in ("a", "b", "c"):
        ack.add(tag, b"\x01")
    ack.tick()
    with pytest.raises(ExceptionGroup) as info:
        ack.tick()
    assert len(info.value.exceptions) == 3
    assert sorted(seen) == ["a", "b", "c"]
    assert len(ack) == 0 and ack.stats.expired == 3


def test_keyboard_interrupt_in_a_listener_propagates_at_once(Ack: type[PyAck]) -> None:
    ack = Ack()
    later: list[str] = []

    def interrupt(tag: str) -> None:
        raise KeyboardInterrupt

    ack.on("acked", interrupt)
    ack.on("acked", later.append)
    ack.add("t", b"\x01")
    with pytest.raises(KeyboardInterrupt):
        ack.stamp("t", b"\x01")
    assert later == [] and "t" not in ack


def test_acked_listener_may_start_the_same_tag_again(Ack: type[PyAck]) -> None:
    ack = Ack()
    ack.on("acked", lambda tag: ack.add(tag, b"\x09") if tag == "t" else None)
    ack.add("t", b"\x01")
    assert ack.stamp("t", b"\x01") is True
    assert ack.state("t") == b"\x09"


# -- the asyncio ticker ------------------------------------------------------------------------


async def test_ticking_expires_chains_in_time(Ack: type[PyAck]) -> None:
    ack = Ack(timeout=0.2, buckets=2)
    assert ack.tick_interval == pytest.approx(0.2)
    loop = asyncio.get_running_loop()
    failed: asyncio.Future[tuple[str, str, float]] = loop.create_future()
    ack.on("failed", lambda tag, reason: failed.set_result((tag, reason, loop.time())))
    async with ack.ticking() as ticker:
        assert ticker.running
        start = loop.time()
        ack.add("t", b"\x01")
        tag, reason, at = await asyncio.wait_for(failed, 10)
    assert not ticker.running
    assert (tag, reason) == ("t", "timeout")
    assert at - start >= 0.2 - 0.05  # never before the timeout (timer slack aside)


async def test_a_late_tick_never_expires_a_chain_before_its_timeout(Ack: type[PyAck]) -> None:
    # A busy loop runs the first tick late, but before the second one is due; a chain
    # added just before that late tick must still get its whole timeout.
    ack = Ack(timeout=0.4, buckets=2)  # a tick every 0.4 s
    loop = asyncio.get_running_loop()
    failed: asyncio.Future[float] = loop.create_future()
    ack.on("failed", lambda tag, reason: failed.set_result(loop.time()))
    begin = loop.time()
    async with ack.ticking():
        await asyncio.sleep(0)  # the ticker is waiting for its first tick, due at begin + 0.4
        while loop.time() < begin + 0.6:  # the loop is blocked past it
            time.sleep(0.005)
        ack.add("t", b"\x01")  # the first tick runs right after this: late
        added = loop.time()
        failed_at = await asyncio.wait_for(failed, 10)
    assert failed_at - added >= 0.4 - 0.01  # not at begin + 0.8, 0.2 s after the add


async def test_ticker_survives_a_raising_listener(Ack: type[PyAck]) -> None:
    ack = Ack(buckets=2)
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    expired: list[str] = []

    def listener(tag: str, reason: str) -> None:
        expired.append(tag)
        if tag == "bad":
            raise RuntimeError("listener bug")

    ack.on("failed", listener)
    try:
        ack.add("bad", b"\x01")
        ticker = ack.ticking(0.01)
        ticker.start()
        with pytest.raises(RuntimeError):
            ticker.start()
        for _ in range(500):
            await asyncio.sleep(0.01)
            if expired:
                break
        ack.add("good", b"\x01")
        for _ in range(500):
            await asyncio.sleep(0.01)
            if "good" in expired:
                break
        await ticker.stop()
        await ticker.stop()  # idempotent
    finally:
        loop.set_exception_handler(previous)
    assert expired == ["bad", "good"]
    assert isinstance(reported[0]["exception"], RuntimeError)


async def test_a_second_ticker_of_one_ack_is_refused(Ack: type[PyAck]) -> None:
    """Two tickers would tick one Ack twice as often: its chains would fail before ``t``."""
    ack = Ack(timeout=0.4, buckets=2)
    loop = asyncio.get_running_loop()
    failed: asyncio.Future[float] = loop.create_future()
    ack.on("failed", lambda tag, reason: failed.set_result(loop.time()))
    async with ack.ticking() as first:
        second = ack.ticking()
        with pytest.raises(TickerRunning, match=r"await ticker\.stop\(\)"):
            second.start()
        with pytest.raises(TickerRunning):
            first.start()
        assert first.running and not second.running
        await asyncio.sleep(0.1)
        ack.add("t", b"\x01")
        added = loop.time()
        failed_at = await asyncio.wait_for(failed, 10)
    assert failed_at - added >= 0.4 - 0.01
    async with second:  # the first one stopped: another may tick now
        assert second.running


def test_ticking_needs_an_interval(Ack: type[PyAck]) -> None:
    with pytest.raises(InvalidTimeout):
        Ack().ticking()
    with pytest.raises(InvalidTimeout):
        Ack().ticking(0)
    assert Ack(timeout=4).ticking().interval == 2.0


# -- which core -----------------------------------------------------------------------------------


def test_public_ack_is_the_fastest_core_available() -> None:
    assert xor_ack_dynamodb.Ack is (CAck if CAck is not None else PyAck)
    assert PyAck.implementation == "python"
    if CAck is not None:
        assert CAck.implementation == "c"


def test_no_extensions_environment_variable_selects_pure_python() -> None:
    code = "from xor_ack_dynamodb import Ack; print(Ack.implementation)"
    env = {**os.environ, "XOR_ACK_NO_EXTENSIONS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "python"


class _OwnBytes(bytes):
    """A bytes subclass whose ``__bytes__`` is not its buffer (as some wrappers have)."""

    def __bytes__(self) -> bytes:
        return b"\x01" * len(self)


def test_both_cores_read_a_stamp_by_its_buffer_and_copy_neither(Ack: type[PyAck]) -> None:
    """The C core read a bytes subclass's buffer, PyAck its ``__bytes__``: two states for
    one call; and PyAck was deep-copied (live chains, listeners) where CAck raised."""
    ack = Ack()
    ack.add("t", _OwnBytes(b"\x00\x05"))
    assert ack.state("t") == b"\x00\x05"
    for copy_of in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match=f"cannot pickle or copy '{type(ack).__name__}'"):
            copy_of(ack)
