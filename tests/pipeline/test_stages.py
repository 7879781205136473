"""The stages in-process against DynamoDB Local: what re-runs and lost records do to a chain."""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest

pytest.importorskip("pyspark")

from xor_ack_dynamodb.errors import ChainFailed
from xor_ack_dynamodb.pipeline.faults import FaultConfig
from xor_ack_dynamodb.pipeline.keyed import Keyed
from xor_ack_dynamodb.pipeline.plan import RoundPlan, TaskInfo, file_tag
from xor_ack_dynamodb.pipeline.stages import (
    TASK_TOTALS,
    BucketRecord,
    CommitRefused,
    StagingRow,
    count_buckets,
    split_files,
)
from xor_ack_dynamodb.sync import SyncXorAckDynamoDB

pytestmark = pytest.mark.ddblocal

P = 2
FILES = {
    "file:/c/a.txt": b"the cat and the hat\nthe end\n",
    "file:/c/b.txt": "Über café, café über alles\n".encode(),
    "file:/c/c.txt": b"one\n",
}


def make_plan(tracker: Any, run_id: str = "run-x", faults: FaultConfig | None = None) -> RoundPlan:
    paths = tuple(FILES)
    return RoundPlan(
        run_id=run_id,
        round=1,
        partitions=P,
        paths=paths,
        file_ids=tuple(range(len(paths))),
        tags=tuple(file_tag(run_id, p, 1) for p in paths),
        tracker=tracker,
        faults=faults or FaultConfig(),
    )


def create_chains(chains: SyncXorAckDynamoDB, plan: RoundPlan) -> None:
    keyed = Keyed(plan.run_id)
    for tag in plan.tags:
        chains.create(tag, keyed.file_stamp(tag))


def stage1(plan: RoundPlan, chains: SyncXorAckDynamoDB, attempt: int = 0) -> list[BucketRecord]:
    return list(split_files(plan, TaskInfo(0, attempt), FILES.items(), chains, Counter()))


def route(records: Iterable[BucketRecord]) -> dict[int, list[BucketRecord]]:
    by_partition: dict[int, list[BucketRecord]] = {p: [] for p in range(P)}
    for record in records:
        by_partition[record[0]].append(record)
    return by_partition


def stage2(
    plan: RoundPlan, chains: SyncXorAckDynamoDB, p: int, records: list[BucketRecord]
) -> list[StagingRow]:
    return list(count_buckets(plan, TaskInfo(p, 0), records, chains, Counter()))


def states(chains: SyncXorAckDynamoDB, plan: RoundPlan) -> list[Any]:
    return [chains.get(tag) for tag in plan.tags]


def without(records: list[BucketRecord], word: str) -> list[BucketRecord]:
    return [(p, (pos, [e for e in entries if e[0] != word])) for p, (pos, entries) in records]


@pytest.fixture
def chains(tracker: Any) -> SyncXorAckDynamoDB:
    return tracker.chains()  # type: ignore[no-any-return]


def test_clean_pass_acks_every_chain_and_emits_every_count(
    tracker: Any, chains: SyncXorAckDynamoDB
) -> None:
    plan = make_plan(tracker)
    create_chains(chains, plan)
    routed = route(stage1(plan, chains))
    rows = [row for p in range(P) for row in stage2(plan, chains, p, routed[p])]
    assert all(s is not None and s.acked for s in states(chains, plan))
    totals: Counter[str] = Counter()
    per_file: Counter[str] = Counter()
    for file_id, words, counts, blob in rows:
        if file_id == TASK_TOTALS:
            assert words is not None and counts is not None
            totals.update(dict(zip(words, counts, strict=True)))
        else:
            assert blob is not None
            for word, n in pickle.loads(blob):
                per_file[word] += n
    assert totals == per_file
    got = totals
    assert got == Counter(
        {
            "the": 3,
            "cat": 1,
            "and": 1,
            "hat": 1,
            "end": 1,
            "über": 2,
            "café": 2,
            "alles": 1,
            "one": 1,
        }
    )


def test_rerun_attempts_do_not_apply_their_stamps_twice(
    tracker: Any, chains: SyncXorAckDynamoDB
) -> None:
    plan = make_plan(tracker)
    create_chains(chains, plan)
    first = stage1(plan, chains, attempt=0)
    again = stage1(plan, chains, attempt=1)  # Spark re-ran the task: identical stamps
    assert first == again
    routed = route(again)
    for p in range(P):
        stage2(plan, chains, p, routed[p])
        stage2(plan, chains, p, routed[p])  # a speculative copy of the same task
    assert all(s is not None and s.acked for s in states(chains, plan))
    # Once more after the ack: the tombstone still holds the tokens, so it is recognised.
    assert stage2(plan, chains, 0, routed[0])


def test_a_lost_record_keeps_the_chain_open(tracker: Any, chains: SyncXorAckDynamoDB) -> None:
    plan = make_plan(tracker)
    create_chains(chains, plan)
    routed = route(stage1(plan, chains))
    p_cat = next(
        p for p, recs in routed.items() if any(e[0] == "cat" for _, (_, es) in recs for e in es)
    )
    for p in range(P):
        records = without(routed[p], "cat") if p == p_cat else routed[p]
        stage2(plan, chains, p, records)
    a, b, c = states(chains, plan)
    assert a is not None and not a.acked and not a.failed
    assert b is not None and b.acked and c is not None and c.acked


def test_complementary_losses_of_two_attempts_never_ack(
    tracker: Any, chains: SyncXorAckDynamoDB
) -> None:
    """Attempt 1 lost word x, attempt 2 lost word y of the same bucket: with stamps that are a
    plain XOR per record the two would add up to the declared set; content stamps do not."""
    plan = make_plan(tracker)
    create_chains(chains, plan)
    routed = route(stage1(plan, chains))
    p, words = next(
        (p, sorted({e[0] for _, (pos, es) in recs if pos == 0 for e in es}))
        for p, recs in routed.items()
        if len({e[0] for _, (pos, es) in recs if pos == 0 for e in es}) >= 2
    )
    stage2(plan, chains, p, without(routed[p], words[0]))
    stage2(plan, chains, p, without(routed[p], words[1]))
    stage2(plan, chains, 1 - p, routed[1 - p])
    state = chains.get(plan.tags[0])
    assert state is not None and not state.acked


def test_an_attempt_that_lost_all_of_a_files_records_is_noticed(
    tracker: Any, chains: SyncXorAckDynamoDB
) -> None:
    plan = make_plan(tracker)
    create_chains(chains, plan)
    routed = route(stage1(plan, chains))
    p = next(p for p, recs in routed.items() if any(pos == 2 for _, (pos, _) in recs))
    # The attempt that stamps first saw everything; a second attempt of the same task saw
    # nothing of file c ("one"): it still stamps c's chain (with the empty bucket's stamp).
    stage2(plan, chains, 1 - p, routed[1 - p])
    stage2(plan, chains, p, routed[p])
    lossy = [r for r in routed[p] if r[1][0] != 2]
    with pytest.raises(CommitRefused):
        stage2(plan, chains, p, lossy)  # chain c is complete: this output must not commit


def test_lossy_attempt_before_the_good_one_leaves_the_chain_open(
    tracker: Any, chains: SyncXorAckDynamoDB
) -> None:
    plan = make_plan(tracker)
    create_chains(chains, plan)
    routed = route(stage1(plan, chains))
    p = next(p for p, recs in routed.items() if any(pos == 2 for _, (pos, _) in recs))
    stage2(plan, chains, 1 - p, routed[1 - p])
    stage2(plan, chains, p, [r for r in routed[p] if r[1][0] != 2])
    stage2(plan, chains, p, routed[p])
    state = chains.get(plan.tags[2])
    assert state is not None and not state.acked


def test_undecodable_file_fails_its_chain_and_emits_nothing(
    tracker: Any, chains: SyncXorAckDynamoDB
) -> None:
    plan = make_plan(tracker)
    create_chains(chains, plan)
    bad = dict(FILES)
    bad["file:/c/b.txt"] = b"\xff\xfe caf\xe9"
    metrics: Counter[str] = Counter()
    records = list(split_files(plan, TaskInfo(0, 0), bad.items(), chains, metrics))
    assert all(pos != 1 for _, (pos, _) in records)
    assert metrics["files_undecodable"] == 1
    state = chains.get(plan.tags[1])
    assert state is not None and state.failed and (state.reason or "").startswith("not-utf8")
    routed = route(records)
    for p in range(P):
        stage2(plan, chains, p, routed[p])  # the failed chain refuses quietly
    with pytest.raises(ChainFailed):
        chains.stamp(plan.tags[1], b"\x01" * 16)
    assert chains.get(plan.tags[0]).acked  # type: ignore[union-attr]
