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
    timeout = 3.0
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
    time.sleep(max(0.0, max(s.deadline for s in states.values() if s) - time.time()) + 0.1)
    swept = {state.tag for state in chains.sweep()}
    assert set(tags) <= swept
    for tag in tags:
        state = chains.get(tag)
        assert state is not None and state.failed and state.reason == "timeout"


def slow_first_of_each_page() -> Any:
    def row(key: str, rows: Any) -> Any:
        import time

        import pyarrow as pa

        if key in ("a", "c"):
            time.sleep(6)
        return pa.table({"v": [len(key)]})

    return row


def test_a_deadline_longer_than_each_pages_round_replays_no_input_of_a_later_page(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """docs/spark.md: "Give more than a page's rounds take".  Each page's round takes about
    7 s here, within ``chain_timeout=10``; but page 2's chains were created ahead, when page
    1's round started, so their clock ran through page 1 too: page 2's inputs failed
    ``timeout`` and were replayed (with ``max_attempts=1``: failed)."""
    report = track(
        local_spark,
        slow_first_of_each_page(),
        "v long",
        Sink(str(tmp_path / "out")),
        keys=["a", "b", "c", "d"],
        tracker=tracker,
        page_size=2,
        input_tasks=1,
        chain_timeout=10,
        max_attempts=1,
    )
    histories = {e.key: e.history for e in report.inputs}
    assert report.ok, (histories, [r.seconds for r in report.rounds])
    assert histories == {key: ["acked"] for key in "abcd"}
