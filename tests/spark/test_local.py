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
