"""Storm's acker: the seed's worked examples value by value, and Storm's cases."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from xor_ack_dynamodb.acker import (
    INT64_MAX,
    INT64_MIN,
    Acked,
    Acker,
    AckerMsg,
    AckerStats,
    Anchor,
    Fail,
    IdGenerator,
    Nacked,
    Ok,
    Pending,
    ResetTimeout,
    Track,
    acker_for,
    acker_index,
)
from xor_ack_dynamodb.errors import (
    InvalidArgument,
    InvalidListener,
    InvalidMessage,
    TagExists,
    ZeroBufferNoOp,
)
from xor_ack_dynamodb.memory import FailReason

AID = 0x5EED_0000_0000_0001
SPOUT, SOURCE = "spout-task-1", "db-row-42"


class Outcomes:
    def __init__(self, acker: Acker) -> None:
        self.log: list[Acked | Nacked] = []
        acker.on("acked", self.log.append)
        acker.on("failed", self.log.append)

    def take(self) -> list[Acked | Nacked]:
        log, self.log = self.log, []
        return log


def balanced(stats: AckerStats) -> bool:
    return stats.tracked == (
        stats.acked + stats.failed + stats.expired + stats.overflowed + stats.pending
    )


# -- the seed's tables ------------------------------------------------------------------

LINEAR = [  # Spout -> Bolt A -> Bolt B
    (Track(SPOUT, SOURCE, AID), 0),
    (Anchor(AID, 100), 100),  # spout route
    (Anchor(AID, 200), 100 ^ 200),  # Bolt A emit
    (Ok(AID, 100), 200),  # Bolt A done
    (Ok(AID, 200), None),  # Bolt B done: Complete -> Ack
]

FAN_OUT = [  # Spout -> Bolt A -> (Bolt B, Bolt C)
    (Track(SPOUT, SOURCE, AID), 0),
    (Anchor(AID, 100), 100),  # spout -> A
    (Anchor(AID, 200), 100 ^ 200),  # A -> B
    (Anchor(AID, 300), 100 ^ 200 ^ 300),  # A -> C
    (Ok(AID, 100), 200 ^ 300),  # A done
    (Ok(AID, 200), 300),  # B done
    (Ok(AID, 300), None),  # C done: Complete
]


@pytest.mark.parametrize("table", [LINEAR, FAN_OUT], ids=["linear", "fan-out"])
def test_seed_xor_accumulation_tables(table: list[tuple[AckerMsg, int | None]]) -> None:
    acker = Acker()
    outcomes = Outcomes(acker)
    for step, (msg, value) in enumerate(table, 1):
        outcome = acker.handle(msg)
        if value is None:  # the last step: Complete, Ack sent to the spout, entry removed
            assert outcome == Acked(AID, SPOUT, SOURCE)
            assert acker.state(AID) is None
        else:
            assert outcome is None, f"step {step}"
            assert acker.state(AID) == Pending(AID, SPOUT, SOURCE, value, True, False), step
    assert outcomes.take() == [Acked(AID, SPOUT, SOURCE)]
    assert acker.stats == AckerStats(1, 1, 0, 0, 0, 0, 0, 0, 0)


def test_seed_values_are_the_xor_of_the_ids() -> None:
    assert 100 ^ 200 == 172 and 100 ^ 200 ^ 300 == 384 and (100 ^ 200 ^ 300) ^ 100 == 200 ^ 300


def test_storm_folded_messages_complete_the_fan_out() -> None:
    """The same tree with Storm's folding: 4 messages instead of 7."""
    acker = Acker()
    assert acker.track(SPOUT, SOURCE, AID, 100) is None  # Track carries the root id
    assert acker.ok(AID, 100 ^ 200 ^ 300) is None  # A: ack its input, anchor B and C
    assert acker.state(AID) == Pending(AID, SPOUT, SOURCE, 200 ^ 300, True, False)
    assert acker.ok(AID, 200) is None
    assert acker.ok(AID, 300) == Acked(AID, SPOUT, SOURCE)


# -- Storm's cases ------------------------------------------------------------------------


def test_ack_before_init_is_kept_and_completes_at_the_track() -> None:
    acker = Acker()
    outcomes = Outcomes(acker)
    assert acker.ok(AID, 200) is None  # Bolt B's ack overtook everything
    assert acker.ok(AID, 100 ^ 200) is None  # Bolt A's folded ack too
    state = acker.state(AID)
    assert state is not None and not state.tracked and state.value == 100
    assert acker.stats.untracked == 1 and acker.stats.pending == 0
    assert acker.track(SPOUT, SOURCE, AID, 100) == Acked(AID, SPOUT, SOURCE)
    assert outcomes.take() == [Acked(AID, SPOUT, SOURCE)]
    assert acker.stats == AckerStats(1, 1, 0, 0, 0, 0, 0, 0, 0)


def test_ack_before_init_then_the_rest_after_it() -> None:
    acker = Acker()
    acker.ok(AID, 200)
    assert acker.track(SPOUT, SOURCE, AID, 100) is None
    assert acker.ok(AID, 100 ^ 200) == Acked(AID, SPOUT, SOURCE)


def test_fsshelter_anchor_and_ok_before_a_zero_track() -> None:
    acker = Acker()
    acker.anchor(AID, 100)
    acker.ok(AID, 100)
    assert acker.track(SPOUT, SOURCE, AID) == Acked(AID, SPOUT, SOURCE)


def test_a_zero_track_alone_is_not_complete() -> None:
    acker = Acker()
    assert acker.track(SPOUT, SOURCE, AID) is None
    assert acker.state(AID) == Pending(AID, SPOUT, SOURCE, 0, True, False)


def test_fail_after_partial_progress() -> None:
    acker = Acker(buckets=2)
    outcomes = Outcomes(acker)
    acker.track(SPOUT, SOURCE, AID, 100)
    acker.ok(AID, 100 ^ 200 ^ 300)  # A done, B and C anchored
    acker.ok(AID, 200)  # B done
    nacked = Nacked(AID, SPOUT, SOURCE, FailReason.FAILED)
    assert acker.fail(AID, 300) == nacked  # C failed: the whole tree fails
    assert acker.state(AID) is None
    assert acker.ok(AID, 300) is None  # a late message of the failed tree
    acker.tick()
    acker.tick()
    assert outcomes.take() == [nacked]
    stats = acker.stats
    assert (stats.failed, stats.orphaned, stats.pending, stats.untracked) == (1, 1, 0, 0)
    assert balanced(stats)


def test_zero_value_takes_precedence_over_a_fail_that_came_first() -> None:
    acker = Acker()
    acker.ok(AID, 200)
    acker.fail(AID, 300)  # e.g. a duplicate of a tuple whose original succeeded
    acker.ok(AID, 100 ^ 200)
    assert acker.state(AID) == Pending(AID, None, None, 100, False, True)
    assert acker.track(SPOUT, SOURCE, AID, 100) == Acked(AID, SPOUT, SOURCE)


def test_a_fail_that_came_first_fails_the_tree_at_its_track() -> None:
    acker = Acker()
    acker.fail(AID)
    assert acker.track(SPOUT, SOURCE, AID, 100) == Nacked(AID, SPOUT, SOURCE, FailReason.FAILED)
    acker2 = Acker()
    acker2.fail(AID)
    acker2.ok(AID, 5)
    assert acker2.track(SPOUT, SOURCE, AID) == Nacked(AID, SPOUT, SOURCE, FailReason.FAILED)


def test_a_fail_that_came_first_with_no_work_yet_is_not_a_zero_ack() -> None:
    acker = Acker()
    acker.fail(AID)
    assert acker.track(SPOUT, SOURCE, AID) == Nacked(AID, SPOUT, SOURCE, FailReason.FAILED)


def test_late_fail_after_completion_never_nacks() -> None:
    acker = Acker(buckets=3)
    outcomes = Outcomes(acker)
    acker.track(SPOUT, SOURCE, AID, 100)
    acker.ok(AID, 100)
    assert acker.fail(AID, 100) is None
    assert [acker.tick() for _ in range(3)] == [[], [], []]
    assert outcomes.take() == [Acked(AID, SPOUT, SOURCE)]
    assert acker.stats.orphaned == 1


@pytest.mark.parametrize("buckets", [2, 3, 4])
def test_timeout_by_bucket_rotation(buckets: int) -> None:
    acker = Acker(buckets=buckets)
    outcomes = Outcomes(acker)
    acker.track(SPOUT, SOURCE, AID, 100)
    acker.ok(AID, 100 ^ 200)
    for _ in range(buckets - 1):
        assert acker.tick() == []
    nacked = Nacked(AID, SPOUT, SOURCE, FailReason.TIMEOUT)
    assert acker.tick() == [nacked]
    assert outcomes.take() == [nacked]
    assert acker.stats.expired == 1 and len(acker) == 0


def test_reset_timeout_keeps_a_slow_tree_alive() -> None:
    acker = Acker(buckets=2)
    acker.track(SPOUT, SOURCE, AID, 100)
    for hop in range(1, 20):  # a long, slow chain of bolts
        acker.tick()
        acker.handle(ResetTimeout(AID))
        acker.ok(AID, (100 + hop - 1) ^ (100 + hop))
    acker.tick()
    assert acker.ok(AID, 100 + 19) == Acked(AID, SPOUT, SOURCE)
    assert acker.reset_timeout(AID) is False


def test_capacity_overflow_nacks_a_new_tree_at_once() -> None:
    acker = Acker(high_water=2)
    outcomes = Outcomes(acker)
    acker.track(SPOUT, "a", 1, 11)
    acker.track(SPOUT, "b", 2, 22)
    overflow = Nacked(3, SPOUT, "c", FailReason.OVERFLOW)
    assert acker.handle(Track(SPOUT, "c", 3, 33)) == overflow
    assert acker.state(3) is None
    assert acker.ok(4, 44) is None  # an unknown tree's message: dropped, no room
    assert acker.stats.dropped == 1
    acker.ok(1, 11)
    assert acker.track(SPOUT, "d", 5, 55) is None  # room again
    assert outcomes.take() == [overflow, Acked(1, SPOUT, "a")]
    stats = acker.stats
    assert (stats.tracked, stats.overflowed, stats.pending) == (4, 1, 2)
    assert balanced(stats)


# -- protocol errors ------------------------------------------------------------------------


def test_track_of_a_tracked_tree_raises_tag_exists() -> None:
    acker = Acker()
    acker.track(SPOUT, SOURCE, AID, 100)
    with pytest.raises(TagExists):
        acker.track(SPOUT, SOURCE, AID, 100)
    assert acker.state(AID) == Pending(AID, SPOUT, SOURCE, 100, True, False)


@pytest.mark.parametrize("bad", [INT64_MAX + 1, INT64_MIN - 1, 1.0, "1", True, None])
def test_ids_must_be_int64(bad: object) -> None:
    acker = Acker()
    for call in (
        lambda: acker.track(SPOUT, SOURCE, bad, 1),  # type: ignore[arg-type]
        lambda: acker.track(SPOUT, SOURCE, 1, bad),  # type: ignore[arg-type]
        lambda: acker.ok(bad, 1),  # type: ignore[arg-type]
        lambda: acker.anchor(1, bad),  # type: ignore[arg-type]
        lambda: acker.fail(bad),  # type: ignore[arg-type]
        lambda: acker.reset_timeout(bad),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidArgument):
            call()
    assert len(acker) == 0


def test_zero_tuple_id_is_refused() -> None:
    acker = Acker()
    acker.track(SPOUT, SOURCE, AID, 100)
    with pytest.raises(ZeroBufferNoOp):
        acker.ok(AID, 0)
    assert acker.state(AID) == Pending(AID, SPOUT, SOURCE, 100, True, False)


def test_handle_refuses_other_objects() -> None:
    with pytest.raises(TypeError):
        Acker().handle("Ok")  # type: ignore[arg-type]


def test_a_wrong_message_or_listener_gets_a_typed_error_and_changes_nothing() -> None:
    acker = Acker()
    with pytest.raises(InvalidMessage, match="Track, Anchor, Ok, Fail or ResetTimeout"):
        acker.handle(("Ok", AID, 7))  # type: ignore[arg-type]
    for event in ("acked", "failed", "event"):
        with pytest.raises(InvalidListener, match="callable"):
            acker.on(event, "print")  # type: ignore[call-overload]
    assert isinstance(InvalidMessage("m"), TypeError) and isinstance(
        InvalidListener("m"), TypeError
    )
    assert len(acker) == 0 and acker.track(SPOUT, SOURCE, AID, 5) is None
    assert acker.ok(AID, 5) == Acked(AID, SPOUT, SOURCE)  # no listener was registered to fail


def test_acker_configuration_is_validated() -> None:
    for bad in (1, 0, True, 2.5):
        with pytest.raises(InvalidArgument):
            Acker(buckets=bad)  # type: ignore[arg-type]
    for bad_hw in (0, -3, True, 1.5):
        with pytest.raises(InvalidArgument):
            Acker(high_water=bad_hw)  # type: ignore[arg-type]
    acker = Acker(buckets=5, high_water=9)
    assert (acker.buckets, acker.high_water) == (5, 9)
    with pytest.raises(InvalidArgument):
        acker.on("done", print)  # type: ignore[call-overload]


def test_listener_errors_do_not_lose_outcomes() -> None:
    acker = Acker(buckets=2)
    seen: list[Hashable] = []

    def boom(nacked: Nacked) -> None:
        seen.append(nacked.source_id)
        raise RuntimeError(nacked.source_id)

    acker.on("failed", boom)
    acker.track(SPOUT, "a", 1, 1)
    acker.track(SPOUT, "b", 2, 2)
    acker.tick()
    with pytest.raises(ExceptionGroup):
        acker.tick()
    assert sorted(seen, key=str) == ["a", "b"] and len(acker) == 0


# -- ids and sharding ---------------------------------------------------------------------


def test_id_generator_never_yields_zero() -> None:
    gen = IdGenerator(seed=7)
    ids = [gen() for _ in range(10_000)]
    assert all(ids) and all(INT64_MIN <= i <= INT64_MAX for i in ids)
    assert len(set(ids)) == len(ids)
    assert any(i < 0 for i in ids) and any(i > 0 for i in ids)
    assert IdGenerator(seed=7)() == ids[0]


def test_id_generator_skips_a_zero_draw() -> None:
    gen = IdGenerator(seed=1)
    draws = iter([2**63, 2**63, 2**63 + 5])  # 2**63 - 2**63 == 0: must be skipped

    class Scripted:
        def getrandbits(self, k: int) -> int:
            assert k == 64
            return next(draws)

    gen._random = Scripted()  # type: ignore[assignment]
    assert gen() == 5


@pytest.mark.parametrize(
    ("anchor", "n", "index"),
    [
        (7, 3, 1),
        (-7, 3, 1),  # .NET: -7 % 3 == -1 -> abs 1; Python's -7 % 3 == 2 would differ
        (-8, 3, 2),
        (-1, 2, 1),
        (0, 5, 0),
        (INT64_MAX, 10, 7),
        (INT64_MIN, 3, 2),
        (INT64_MIN, 2, 0),
    ],
)
def test_acker_index_is_fsshelter_abs_of_truncated_remainder(
    anchor: int, n: int, index: int
) -> None:
    assert acker_index(anchor, n) == index
    ackers = [f"acker-{i}" for i in range(n)]
    assert acker_for(ackers, anchor) == f"acker-{index}"


def test_acker_index_spreads_random_anchors() -> None:
    gen = IdGenerator(seed=3)
    counts = [0] * 4
    for _ in range(4000):
        counts[acker_index(gen(), 4)] += 1
    assert min(counts) > 800


def test_acker_index_validation() -> None:
    with pytest.raises(InvalidArgument):
        acker_index(5, 0)
    with pytest.raises(InvalidArgument):
        acker_index(2**64, 3)


def test_fail_message_default_and_reset_of_untracked_tree() -> None:
    acker = Acker()
    acker.handle(Fail(AID))
    assert acker.reset_timeout(AID) is True
    state = acker.state(AID)
    assert state is not None and state.failed and not state.tracked


def test_the_shard_of_a_negative_anchor_is_abs_anchor_mod_n_not_pythons_abs_of_mod() -> None:
    # docs/trackers.md: ackers[abs(anchor_id) % N]; Python's abs(anchor_id % N) differs.
    assert acker_index(-7, 4) == 3 != abs(-7 % 4)
    assert acker_index(-7, 3) == 1 != abs(-7 % 3)
