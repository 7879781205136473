"""``chain_timeout``: a run's chains carry a deadline, so that the chains of a driver that
died before judging them are failed by a sweep ("timeout"), heard of like any stalled chain.

The driver's death is played in process: its job stops with an exception the run does not
catch, and its last act, failing the chains of the round that did not end, never happens
(``RoundChains.abandon`` does nothing), as with SIGKILL or a machine lost.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.dynamodb.sync import SyncXorAckDynamoDB
from xor_ack_dynamodb.spark import Sink, track
from xor_ack_dynamodb.spark.chain_batches import RoundChains
from xor_ack_dynamodb.spark.plan import file_tag
from xor_ack_dynamodb.spark.tracker import TrackerConfig

KEYS = ["a", "b", "c"]


def one_row() -> Any:
    def row(key: str, rows: Any) -> Any:
        import pyarrow as pa

        return pa.table({"v": [len(key)]})

    return row


class Killed(BaseException):
    """The driver's process ending where it stands."""


def test_the_chains_of_a_driver_killed_mid_round_are_failed_by_a_sweep_after_their_deadline(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    timeout = 60.0  # the round's stamps land well within it, however slow the machine
    done = track(
        local_spark, one_row(), "v long", Sink(str(tmp_path / "ok")), keys=KEYS,
        tracker=tracker, run_id="lives", chain_timeout=60.0,
    )  # fmt: skip
    assert done.ok and done.acked == len(KEYS)  # a deadline the run keeps changes nothing
    chains = tracker.chains()
    lived = chains.get(file_tag("lives", "a", 1))
    assert lived is not None and lived.acked

    def dies(chains: RoundChains, run_id: str, sums: Any) -> Any:
        raise Killed  # the rows are staged and summed, no commit stamp yet: the driver dies

    monkeypatch.setattr(RoundChains, "commit", dies)
    monkeypatch.setattr(RoundChains, "abandon", lambda chains, why, tell=None: None)
    created = time.time()
    with pytest.raises(Killed):
        track(
            local_spark, one_row(), "v long", Sink(str(tmp_path / "out")), keys=KEYS,
            tracker=tracker, run_id="killed", chain_timeout=timeout,
        )  # fmt: skip
    tags = [file_tag("killed", key, 1) for key in KEYS]
    states = chains.get_many(tags)
    for state in states.values():  # left open by the dead driver, each with its deadline
        assert state is not None and state.live and state.deadline is not None
        assert created + timeout - 1 <= state.deadline <= time.time() + timeout + 1
    # A sweep once the deadlines passed: its clock set past them (no minute's wait)
    past = max(s.deadline for s in states.values() if s and s.deadline) + 1
    later = SyncXorAckDynamoDB(
        tracker.client(), table=tracker.table, partition_key=tracker.partition_key,
        clock=lambda: past,
    )  # fmt: skip
    assert not {state.tag for state in chains.sweep()} & set(tags)  # not before them
    swept = {state.tag for state in later.sweep()}
    assert set(tags) <= swept
    for tag in tags:
        state = chains.get(tag)
        assert state is not None and state.failed and state.reason == "timeout"


def slow_first_page() -> Any:
    def row(key: str, rows: Any) -> Any:
        import time

        import pyarrow as pa

        if key == "a":
            time.sleep(6)
        return pa.table({"v": [len(key)]})

    return row


def test_a_later_pages_chains_are_created_when_its_round_starts(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """docs/spark.md: "Give more than a page's rounds take".  Page 2's chains were created
    ahead, when page 1's round started, so their deadline's clock ran through page 1 too:
    with a deadline a little over one page's round, page 2's inputs failed ``timeout``.
    Read from the chains, not the clock: with ``chain_timeout``, page 2's chains are
    created after page 1's acked (page 1's round takes over 6 s), each deadline counting
    from its own create."""
    report = track(
        local_spark,
        slow_first_page(),
        "v long",
        Sink(str(tmp_path / "out")),
        keys=["a", "b", "c", "d"],
        tracker=tracker,
        run_id="pages",
        page_size=2,
        input_tasks=1,
        chain_timeout=120,
        max_attempts=1,
    )
    assert report.ok and {e.key: e.history for e in report.inputs} == {
        key: ["acked"] for key in "abcd"
    }
    states = tracker.chains().get_many([file_tag("pages", key, 1) for key in "abcd"])
    first, second = (
        [s for tag, s in states.items() if s is not None and tag in page]
        for page in (
            {file_tag("pages", k, 1) for k in "ab"},
            {file_tag("pages", k, 1) for k in "cd"},
        )
    )
    assert len(first) == len(second) == 2
    page_one_acked = max(s.acked_at or 0.0 for s in first)
    assert all(s.acked for s in first + second)
    assert min(s.created_at for s in second) >= page_one_acked - 0.01, (
        "page 2's chains were created before page 1 ended"
    )
