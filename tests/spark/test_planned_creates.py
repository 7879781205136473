"""A round's job starts while its chains are being created: the stamps wait, never stray.

The driver plans each chain's state (``plan_creates``), hands it to the tasks in the
marker rows and sends the creates in a thread.  A task's stamp on a chain not made
yet is sent again until it is (``tracker.Pause``); a chain under the tag that is not
the planned one (its create was refused) takes no stamp; a create that fails cancels
the round's job, and the run stops claiming nothing.  On DynamoDB Local.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from xor_ack_dynamodb import new_stamp
from xor_ack_dynamodb.errors import CreateManyFailed
from xor_ack_dynamodb.spark import Sink, chain_batches, task_stamps, track
from xor_ack_dynamodb.spark import tracker as tracker_module
from xor_ack_dynamodb.spark.chain_batches import RoundChains
from xor_ack_dynamodb.spark.plan import file_tag
from xor_ack_dynamodb.spark.tracker import TrackerConfig, stamp_once

KEYS = [f"k{i}" for i in range(6)]


def stamps_for(tags: list[str]) -> list[task_stamps.Stamp]:
    return [(tag, new_stamp(), f"tok-{tag}".encode(), None) for tag in tags]


def test_a_stamp_on_a_chain_still_being_created_waits_for_it_and_lands(
    tracker: TrackerConfig,
) -> None:
    chains = tracker.chains()
    firsts = {f"late-{i}": new_stamp() for i in range(30)}
    planned = chains.plan_creates(firsts)
    batch = [(t, new_stamp(), f"tok-{t}".encode(), planned[t]) for t in firsts]
    creating = threading.Timer(
        0.4, lambda: chains.create_many(firsts, via="partiql", planned=planned)
    )
    creating.start()
    started = time.monotonic()
    task_stamps._write(SimpleNamespace(tracker=tracker), batch)  # type: ignore[arg-type]
    creating.join()
    assert time.monotonic() - started >= 0.4  # it waited for the creates
    states = chains.get_many(list(firsts))
    assert all(s is not None and s.version == 2 for s in states.values())
    for tag, value, token, _ in batch:
        state = states[tag]
        assert state is not None and state.holds(token)
        assert bytes(state.stamp) == bytes(a ^ b for a, b in zip(firsts[tag], value, strict=True))


@pytest.mark.parametrize("partiql", [True, False])
def test_a_stamp_never_lands_on_another_chain_under_its_tag(
    tracker: TrackerConfig, partiql: bool
) -> None:
    """The planned create was refused (a live chain holds the tag): that chain is not ours."""
    via = tracker if partiql else TrackerConfig(**{**tracker.__dict__, "partiql": False})
    chains = tracker.chains()
    tag = f"held-{partiql}"
    chains.create(tag, new_stamp())
    mine = chains.plan_creates({tag: new_stamp()})[tag]
    with pytest.raises(CreateManyFailed):
        chains.create_many({tag: mine.stamp}, via="partiql", planned={tag: mine})
    task_stamps._write(SimpleNamespace(tracker=via), [(tag, new_stamp(), b"t1", mine)])  # type: ignore[arg-type]
    held = chains.get(tag)
    assert held.version == 1 and held.chain_id != mine.chain_id  # untouched


def test_a_chain_that_never_comes_is_waited_for_within_the_budget_then_left(
    tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tracker_module, "CREATE_WAIT", 0.5)
    chains = tracker.chains()
    planned = chains.plan_creates({"never": new_stamp()})["never"]
    started = time.monotonic()
    task_stamps._write(SimpleNamespace(tracker=tracker), [("never", new_stamp(), b"t", planned)])  # type: ignore[arg-type]
    stamp_once(chains, "never", new_stamp(), b"u", planned, wait=True)
    waited = time.monotonic() - started
    assert 0.9 <= waited < 5.0  # twice the budget, then nothing written
    assert chains.get_many(["never"]) == {"never": None}
    started = time.monotonic()
    stamp_once(chains, "never", new_stamp(), b"v", planned)  # the driver's: no wait
    assert time.monotonic() - started < 0.5


def test_a_round_whose_creates_land_late_still_acks_every_input_exactly(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = RoundChains._plan

    def slow(chains: RoundChains, tags: Any) -> Any:
        states, write = plan(chains, tags)

        def late() -> None:
            time.sleep(1.5)  # the job's tasks stamp before their chains exist
            write()

        return states, late

    monkeypatch.setattr(RoundChains, "_plan", slow)

    def rows(key: str, _: Any) -> Any:
        import pyarrow as pa

        return pa.table({"v": [len(key)] * 3})

    out = tmp_path / "out"
    report = track(local_spark, rows, "v long", Sink(str(out)), keys=KEYS, tracker=tracker)
    assert report.ok and report.acked == len(KEYS) and len(report.rounds) == 1
    states = tracker.chains().get_many([file_tag(report.run_id, k, 1) for k in KEYS])
    assert all(s is not None and s.acked for s in states.values())
    assert local_spark.read.parquet(str(out)).count() == 3 * len(KEYS)


def test_a_create_refused_while_the_job_runs_cancels_it_and_changes_no_other_chain(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live chain already holds one input's tag (the run id used again): the run stops
    with the create's refusal, no output, and that chain as it was."""
    held = file_tag("again", "k3", 1)
    chains = tracker.chains()
    chains.create(held, new_stamp())
    before = chains.get(held)
    cancelled: list[BaseException | None] = []
    run = chain_batches.RoundChains.wait_created

    def seen(self: RoundChains) -> None:
        cancelled.append(self.creating.exception() if self.creating else None)
        run(self)

    monkeypatch.setattr(chain_batches.RoundChains, "wait_created", seen)

    def rows(key: str, _: Any) -> Any:
        import time as t

        import pyarrow as pa

        t.sleep(0.5)  # the job is still running when the create is refused
        return pa.table({"v": [len(key)]})

    out = tmp_path / "out"
    with pytest.raises(CreateManyFailed) as refused:
        track(
            local_spark, rows, "v long", Sink(str(out)), keys=KEYS, tracker=tracker, run_id="again"
        )
    assert list(refused.value.errors) == [held]
    assert isinstance(cancelled[0], CreateManyFailed)
    assert not out.exists()
    after = chains.get(held)
    assert after == before  # never stamped, never failed: not this run's chain
    others = chains.get_many([file_tag("again", k, 1) for k in KEYS if k != "k3"])
    assert all(s is not None and s.failed for s in others.values())  # none left live
