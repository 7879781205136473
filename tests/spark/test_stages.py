"""The executors' stage functions, called directly against DynamoDB Local (no Spark job).

What a chain says after the produce stamp (``F ^ D``) and the commit check's stamp
(``C``) for the rows that were committed: zero exactly when they are the rows
produced, once each; a re-run attempt's stamps never count twice; an input the
function rejects fails at once with its reason.
"""

from __future__ import annotations

import dataclasses
import pickle
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from botocore.exceptions import ClientError

pytest.importorskip("pyspark")

from xor_ack_dynamodb.dynamodb.sync import SyncXorAckDynamoDB
from xor_ack_dynamodb.spark import InputRejected
from xor_ack_dynamodb.spark.check import staged_sums_by
from xor_ack_dynamodb.spark.digest import MOD
from xor_ack_dynamodb.spark.errors import InputsInterleaved
from xor_ack_dynamodb.spark.keyed import Keyed
from xor_ack_dynamodb.spark.plan import file_tag
from xor_ack_dynamodb.spark.stages import (
    CREATED,
    HASH_HIGH,
    HASH_LOW,
    ID,
    INPUT,
    KEY,
    MARKER,
    TAG,
    RoundSpec,
    key_bytes,
    stamp_committed,
)
from xor_ack_dynamodb.spark.stages import produce as produce_task
from xor_ack_dynamodb.spark.tracker import TrackerConfig, chains_for

pytestmark = pytest.mark.ddblocal

RUN = "stage-test"
SCHEMA = pa.schema([("word", pa.string()), ("n", pa.int64())])


#: What ``words`` rejects, by key, with its message
REJECTED = {
    "file:/bad": "not-utf8: invalid start byte at byte 3",
    "file:/bad-timeout": "timeout",  # the deadline's own reason: fail() refuses it
    "file:/bad-empty": "",  # no reason at all: fail() refuses it too
}


def words(key: str, rows: Any) -> Any:
    if key in REJECTED:
        raise InputRejected(REJECTED[key])
    return pa.table({"word": ["a", "b", "c", "d"], "n": [1, 2, 3, 4]}, schema=SCHEMA)


@pytest.fixture
def chains(tracker: TrackerConfig) -> SyncXorAckDynamoDB:
    return tracker.chains()


def start(chains: SyncXorAckDynamoDB, key: str) -> tuple[str, Any]:
    """A new chain for ``key`` (stamp F, as the driver makes it) and its marker row."""
    tag = file_tag(f"{RUN}-{uuid.uuid4().hex}", key, 1)
    chains.create(tag, Keyed(RUN).file_stamp(tag))
    return tag, lines_of(chains, tag, key, 0, [])


def produce(s: RoundSpec, *inputs: Any) -> Any:
    """``stages.produce`` as one task over ``inputs`` (each an input's rows, in turn)."""
    batches = [batch for table in inputs for batch in table.to_batches()]
    out_schema = pa.schema(
        [*SCHEMA, (ID, pa.int32()), (HASH_HIGH, pa.int64()), (HASH_LOW, pa.int64())]
    )
    return pa.Table.from_batches(list(produce_task(s, iter(batches))), out_schema)


def spec(tracker: TrackerConfig) -> RoundSpec:
    return RoundSpec(RUN, 1, words, ("word", "n"), SCHEMA, (), tracker)


def commit(s: RoundSpec, chains: SyncXorAckDynamoDB, tag: str, *committed: Any) -> None:
    """The commit check over ``committed`` (the produced tables Spark committed): the
    hashes the rows carry, added up as the driver adds them, stamped on the chain as
    the driver read it after the job."""
    total = sum(sum(staged_sums_by(table).values()) for table in committed)
    stamp_committed(s, tag, total % MOD, chains.get(tag))


def test_the_rows_produced_committed_once_ack(tracker: TrackerConfig, chains: Any) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    out = produce(s, marker)
    assert out.num_rows == 4
    commit(s, chains, tag, out.slice(0, 1), out.slice(1))  # in two staging files: sums add up
    assert chains.get(tag).acked


def test_a_rerun_attempt_does_not_apply_its_stamps_twice(
    tracker: TrackerConfig, chains: Any
) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    out = produce(s, marker)
    produce(s, marker)  # Spark ran the task again: the same stamp, the same token
    commit(s, chains, tag, out)
    commit(s, chains, tag, out)  # and the check too
    state = chains.get(tag)
    assert state.acked and state.version == 3


def test_a_lost_row_keeps_the_chain_open(tracker: TrackerConfig, chains: Any) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    out = produce(s, marker)
    commit(s, chains, tag, out.slice(1))
    assert not chains.get(tag).acked


def test_every_row_lost_keeps_the_chain_open(tracker: TrackerConfig, chains: Any) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    produce(s, marker)
    commit(s, chains, tag)  # nothing of the input was committed: only its marker reaches the check
    assert not chains.get(tag).acked


def test_rows_committed_twice_keep_the_chain_open(tracker: TrackerConfig, chains: Any) -> None:
    # Two attempts' files both committed (a duplicate): a sum, not an XOR, so they show.
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    out = produce(s, marker)
    commit(s, chains, tag, out, out)
    assert not chains.get(tag).acked


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("file:/bad", "not-utf8: invalid start byte at byte 3"),
        # the empty one raised InvalidReason in the task; "timeout" read back as the
        # deadline's, and fail() refuses it now
        ("file:/bad-timeout", "rejected: timeout"),
        ("file:/bad-empty", "rejected: no reason given"),
    ],
)
def test_a_rejected_input_fails_at_once_with_its_reason(
    tracker: TrackerConfig, chains: Any, key: str, reason: str
) -> None:
    tag, marker = start(chains, key)
    s = spec(tracker)
    out = produce(s, marker)
    assert out.num_rows == 0 and out.column_names == ["word", "n", ID, HASH_HIGH, HASH_LOW]
    commit(s, chains, tag, out)  # the check's stamp is refused by the closed chain
    state = chains.get(tag)
    assert state.failed and not state.acked
    assert state.reason == reason


def lines_of(
    chains: SyncXorAckDynamoDB, tag: str, key: str, input_id: int, lines: list[str]
) -> Any:
    """An input's source rows (``value``) followed by its marker row, which carries
    its chain as the driver read it after creating it."""
    n = len(lines) + 1
    created = pickle.dumps(chains.get(tag))
    return pa.table(
        {
            INPUT: [key] * n,
            ID: pa.array([input_id] * n, pa.int32()),
            TAG: [tag] * n,
            MARKER: [False] * len(lines) + [True],
            CREATED: pa.array([None] * len(lines) + [created], pa.binary()),
            KEY: pa.array([None] * len(lines) + [key_bytes(key)], pa.binary()),
            "value": pa.array([*lines, None], pa.string()),
        }
    )


def test_a_task_runs_each_of_its_inputs_once_and_ends_with_every_stamp_written(
    tracker: TrackerConfig, chains: Any
) -> None:
    calls: list[tuple[str, list[str]]] = []

    def first_words(key: str, rows: Any) -> Any:
        lines = [str(v) for v in rows.column("value").to_pylist()]
        calls.append((key, lines))
        return pa.table({"word": [line.split()[0] for line in lines], "n": [1] * len(lines)})

    s = RoundSpec(RUN, 1, first_words, ("word", "n"), SCHEMA, ("value",), tracker)
    keys = ["file:/a", "file:/b", "file:/c"]
    tags = [start(chains, key)[0] for key in keys]
    tables = [
        lines_of(chains, tag, key, i, [f"{key} line {n}" for n in range(i + 2)])
        for i, (tag, key) in enumerate(zip(tags, keys, strict=True))
    ]
    # Batches cut across inputs: one ends in the middle of "b", the next starts there.
    whole = pa.concat_tables(tables).combine_chunks()
    # And an empty batch between them, as Arrow streams may carry.
    first = whole.slice(0, 4).to_batches()[0]
    batches = [first, first.slice(0, 0), whole.slice(4).to_batches()[0]]
    out = pa.Table.from_batches(list(produce_task(s, iter(batches))))
    assert calls == [(key, [f"{key} line {n}" for n in range(i + 2)]) for i, key in enumerate(keys)]
    # The task has ended: every input's produce stamp is in, before any commit check.
    assert [chains.get(tag).version for tag in tags] == [2, 2, 2]
    for i, tag in enumerate(tags):
        mine = out.filter(pc.equal(out.column(ID), i))
        commit(s, chains, tag, mine)
        assert chains.get(tag).acked


def test_an_input_whose_rows_come_in_two_runs_fails_the_task(
    tracker: TrackerConfig, chains: Any
) -> None:
    s = spec(tracker)
    (_, a), (_, b) = start(chains, "file:/a"), start(chains, "file:/b")
    b = b.set_column(1, ID, pa.array([1], pa.int32()))
    with pytest.raises(InputsInterleaved, match="rows of input 0 came in two runs"):
        produce(s, a, b, a)


def test_a_stamp_that_cannot_be_written_fails_the_task(tracker: TrackerConfig) -> None:
    gone = dataclasses.replace(tracker, table="no-such-table")
    marker = pa.table(
        {
            INPUT: ["file:/a"],
            ID: pa.array([0], pa.int32()),
            TAG: ["t"],
            MARKER: [True],
            CREATED: pa.array([None], pa.binary()),
            KEY: pa.array([key_bytes("file:/a")], pa.binary()),
        }
    )
    with pytest.raises(ClientError, match="non-existent table"):
        produce(spec(gone), marker)


@pytest.fixture
def requests(tracker: TrackerConfig) -> Iterator[list[str]]:
    """The DynamoDB operations the stages' client (this process's, as a worker's) sends."""
    sent: list[str] = []
    events = chains_for(tracker)._client.meta.events

    def record(model: Any, **_: Any) -> None:
        sent.append(model.name)

    events.register("before-call.dynamodb", record)
    yield sent
    events.unregister("before-call.dynamodb", record)


def test_each_stamp_on_a_chain_as_known_is_one_write_without_a_read(
    tracker: TrackerConfig, chains: Any, requests: list[str]
) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    out = produce(s, marker)
    assert requests == ["UpdateItem"]  # on the chain as created: no GetItem first
    commit(s, chains, tag, out)
    assert requests == ["UpdateItem", "UpdateItem"]
    assert chains.get(tag).acked


def test_a_rerun_on_a_chain_that_moved_on_reads_and_applies_nothing(
    tracker: TrackerConfig, chains: Any, requests: list[str]
) -> None:
    tag, marker = start(chains, "file:/a.txt")
    s = spec(tracker)
    produce(s, marker)
    requests.clear()
    produce(s, marker)  # the created state is old now: the write is refused, then a read
    assert "GetItem" in requests and requests.count("UpdateItem") == 1
    assert chains.get(tag).version == 2
