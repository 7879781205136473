"""Structured Streaming: files arriving in a folder, each tracked to completion per batch."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.pipeline.faults import FaultConfig
from xor_ack_dynamodb.spark import Sink, TrackedReport, track_stream
from xor_ack_dynamodb.spark.examples.wordcount import SCHEMA, count_file, total_by_word
from xor_ack_dynamodb.table import TableSpec

from .conftest import independent_count, make_corpus, read_counts


def test_stream_of_files_every_file_acked_and_counts_exact(
    local_spark: Any,
    tmp_path: Path,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pyspark.sql import functions as F

    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb_local_endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    inbox = make_corpus(tmp_path / "inbox", files=6, lines=20, seed=5)
    stream = (
        local_spark.readStream.option("recursiveFileLookup", "true")
        .option("maxFilesPerTrigger", 3)
        .text(str(inbox))
        .select("value", F.col("_metadata.file_path").alias("file"))
    )
    reports: dict[int, TrackedReport] = {}
    out = tmp_path / "counts"
    query = track_stream(
        stream,
        count_file,
        SCHEMA,
        Sink(str(out), format="csv", options={"header": "true"}, finish=total_by_word, files=1),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        on_batch=lambda batch_id, report: reports.__setitem__(batch_id, report),
        table=ddb_table.name,
        faults=FaultConfig.rate(0.3, seed=1),
        partitions=4,
    )
    query.awaitTermination(240)
    assert query.exception() is None
    assert len(reports) >= 2, "the files did not arrive over several micro-batches"
    inputs = [i for report in reports.values() for i in report.inputs]
    assert len(inputs) == 6 and all(i.status == "acked" for i in inputs)
    total: Counter[str] = Counter()
    for folder in sorted(out.glob("batch=*")):
        total.update(read_counts(folder))
    assert total == independent_count(inbox)
