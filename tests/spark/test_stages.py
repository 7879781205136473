"""The executors' stage functions, called directly against DynamoDB Local (no Spark job).

What a chain says after the produce stamp (``F ^ D``) and the commit check's stamp
(``C``) for the rows that were committed: zero exactly when they are the rows
produced, once each; a re-run attempt's stamps never count twice; an input the
function rejects fails at once with its reason.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline.keyed import Keyed
from xor_ack_dynamodb.pipeline.plan import file_tag
from xor_ack_dynamodb.pipeline.tracker import TrackerConfig
from xor_ack_dynamodb.spark import InputRejected
from xor_ack_dynamodb.spark.digest import MOD, lanes_sums_by
from xor_ack_dynamodb.spark.stages import (
    HASH_HIGH,
    HASH_LOW,
    ID,
    INPUT,
    MARKER,
    TAG,
    RoundSpec,
    produce,
    stamp_committed,
)
from xor_ack_dynamodb.sync import SyncXorAckDynamoDB

pytestmark = pytest.mark.ddblocal

RUN = "stage-test"
SCHEMA = pa.schema([("word", pa.string()), ("n", pa.int64())])


def words(key: str, rows: Any) -> Any:
    if key.endswith("bad"):
        raise InputRejected("not-utf8: invalid start byte at byte 3")
    return pa.table({"word": ["a", "b", "c", "d"], "n": [1, 2, 3, 4]}, schema=SCHEMA)


@pytest.fixture
def chains(tracker: TrackerConfig) -> SyncXorAckDynamoDB:
    return tracker.chains()


def start(chains: SyncXorAckDynamoDB, key: str) -> tuple[str, Any]:
    """A new chain for ``key`` (stamp F, as the driver makes it) and its marker row."""
    tag = file_tag(f"{RUN}-{uuid.uuid4().hex}", key, 1)
    chains.create(tag, Keyed(RUN).file_stamp(tag))
    marker = pa.table({INPUT: [key], ID: pa.array([0], pa.int32()), TAG: [tag], MARKER: [True]})
    return tag, marker


def spec(tracker: TrackerConfig) -> RoundSpec:
    return RoundSpec(RUN, 1, words, ("word", "n"), SCHEMA, (), tracker)


def commit(s: RoundSpec, tag: str, *committed: Any) -> None:
    """The commit check over ``committed`` (the produced tables Spark committed): the
    hashes the rows carry, added up as the driver's Spark job adds them."""
    total = 0
    for table in committed:
        ids = np.asarray(table.column(ID).to_numpy(zero_copy_only=False))
        lanes = [
            np.asarray(table.column(c).to_numpy(zero_copy_only=False)).view(np.uint64)
            for c in (HASH_HIGH, HASH_LOW)
        ]
        total += sum(lanes_sums_by(ids, lanes).values())
    stamp_committed(s, tag, total % MOD)


def test_the_rows_produced_committed_once_ack(tracker: TrackerConfig, chains: Any) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    out = produce(s, marker)
    assert out.num_rows == 4
    commit(s, tag, out.slice(0, 1), out.slice(1))  # in two staging files: sums add up
    assert chains.get(tag).acked


def test_a_rerun_attempt_does_not_apply_its_stamps_twice(
    tracker: TrackerConfig, chains: Any
) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    out = produce(s, marker)
    produce(s, marker)  # Spark ran the task again: the same stamp, the same token
    commit(s, tag, out)
    commit(s, tag, out)  # and the check too
    state = chains.get(tag)
    assert state.acked and state.version == 3


def test_a_lost_row_keeps_the_chain_open(tracker: TrackerConfig, chains: Any) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    out = produce(s, marker)
    commit(s, tag, out.slice(1))
    assert not chains.get(tag).acked


def test_every_row_lost_keeps_the_chain_open(tracker: TrackerConfig, chains: Any) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    produce(s, marker)
    commit(s, tag)  # nothing of the input was committed: only its marker reaches the check
    assert not chains.get(tag).acked


def test_rows_committed_twice_keep_the_chain_open(tracker: TrackerConfig, chains: Any) -> None:
    # Two attempts' files both committed (a duplicate): a sum, not an XOR, so they show.
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    out = produce(s, marker)
    commit(s, tag, out, out)
    assert not chains.get(tag).acked


def test_a_rejected_input_fails_at_once_with_its_reason(
    tracker: TrackerConfig, chains: Any
) -> None:
    tag, marker = start(chains, "file:/bad")
    s = spec(tracker)
    out = produce(s, marker)
    assert out.num_rows == 0 and out.column_names == ["word", "n", ID, HASH_HIGH, HASH_LOW]
    commit(s, tag, out)  # the check's stamp is refused by the closed chain
    state = chains.get(tag)
    assert state.failed and not state.acked
    assert state.reason == "not-utf8: invalid start byte at byte 3"
