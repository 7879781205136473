"""The library on local[*]: exact counts, every input acked, faults injected, writes bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xor_ack_dynamodb.spark.examples.wordcount import wordcount
from xor_ack_dynamodb.spark.faults import FaultConfig

from .conftest import independent_count, read_counts


def test_three_writes_per_input_at_200_shuffle_partitions(
    local_spark: Any, corpus: Path, tmp_path: Path, chains_env: str
) -> None:
    out = tmp_path / "counts"
    report = wordcount(local_spark, str(corpus), str(out), table=chains_env, partitions=200)
    assert report.ok and len(report.rounds) == 1
    assert read_counts(out) == dict(independent_count(corpus))
    # create + the produce stamp + the commit check's stamp: one each, not one per partition
    assert report.writes_per_input == 3


def test_faults_replayed_until_every_input_is_acked_and_counts_exact(
    local_spark: Any, corpus: Path, tmp_path: Path, chains_env: str
) -> None:
    out = tmp_path / "counts"
    report = wordcount(
        local_spark,
        str(corpus),
        str(out),
        table=chains_env,
        # Seed 7: two of the inputs' produce tasks lose rows in round 1 (and others crash).
        faults=FaultConfig.rate(0.3, seed=7),
        partitions=16,
    )
    replayed = [i.key for i in report.inputs if i.attempts > 1]
    assert report.ok, report.to_json()
    assert replayed, "the faults caused no replay: the test proves nothing"
    assert read_counts(out) == dict(independent_count(corpus))
    assert all(i.history[-1] == "acked" for i in report.inputs)


def noisy() -> Any:
    """A function returning one row of random bytes, another on every call, as one that
    reads a clock would (a closure: pickled by value, the workers cannot import tests)."""

    def rows_of(key: str, rows: Any) -> Any:
        import os

        import pyarrow as pa  # type: ignore[import-untyped]

        return pa.table({"n": pa.array([int.from_bytes(os.urandom(4), "big")], pa.int64())})

    return rows_of


def test_an_input_whose_attempts_returned_different_rows_fails_saying_so(
    local_spark: Any, tmp_path: Path, tracker: Any
) -> None:
    # Two attempts of one task that returned different rows both stamp the chain, which then
    # cannot reach zero whatever was committed: the input failed as "not zero when its round
    # ended", which says nothing of why.
    from xor_ack_dynamodb.spark import Sink, track

    keys = [f"input-{i}" for i in range(8)]
    report = track(
        local_spark,
        noisy(),
        "n long",
        Sink(str(tmp_path / "out"), format="parquet"),
        keys=keys,
        tracker=tracker,
        # Every task's first attempt crashes, before its stamp or after (seed 3: both).
        faults=FaultConfig(crash_rate=1.0, max_attempt=1, seed=3),
        max_attempts=1,
    )
    said = {e.key: e.history for e in report.inputs}
    differing = [k for k, h in said.items() if h != ["acked"]]
    assert differing and len(differing) < len(keys), said  # crashed after the stamp: not acked
    assert all(
        said[k]
        == [
            "incomplete: its task ran more than once and the attempts returned different rows "
            "(is the function deterministic?)"
        ]
        for k in differing
    ), said
