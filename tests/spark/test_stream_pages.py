"""A stream's micro-batches: pages never run, and a report named relative to the driver.

A micro-batch whose first page is Incurable while later pages were never run.

``stop_on_failure=False`` goes on past a batch whose every input's function returned no
table; a batch of several pages stopped at its first page had inputs never run, and was
recorded done all the same: they were lost until the checkpoint was.  A relative report is
where it was when the stream started.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.spark import Sink, track_stream
from xor_ack_dynamodb.spark.examples.wordcount import SCHEMA, count_file, total_by_word

from .conftest import read_counts


def _inbox(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for age, (name, text) in enumerate(files.items()):
        (root / name).write_text(text)
        os.utime(root / name, (1_000_000 + age, 1_000_000 + age))  # in this order
    return root


def _stream(spark: Any, inbox: Path) -> Any:
    from pyspark.sql import functions as F

    return spark.readStream.text(str(inbox)).select(
        "value", F.col("_metadata.file_path").alias("file")
    )


def _sink(out: Path) -> Sink:
    return Sink(str(out), format="csv", options={"header": "true"}, finish=total_by_word, files=1)


def _total(out: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for folder in sorted(out.glob("batch=*")):
        total.update(read_counts(folder))
    return total


def _none_for(*bad: str) -> Any:
    """The word count's function, returning no table for the files named in ``bad``."""

    def count(key: str, rows: Any) -> Any:
        if key.endswith(bad):
            return None
        return count_file(key, rows)

    return count


def test_a_batch_stopped_before_its_later_pages_stops_the_query_and_loses_nothing(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:
    """One micro-batch of four files, two per page; the function returns no table for
    a.txt and b.txt (the first page): that page is ``Incurable``.  c.txt and d.txt were
    never run, so the batch is not recorded done even with ``stop_on_failure=False``:
    the query stops, and started again with a mended function it commits all four."""
    inbox = _inbox(
        tmp_path / "inbox",
        {"a.txt": "one\n", "b.txt": "two\n", "c.txt": "three four\n", "d.txt": "five\n"},
    )
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    options: dict[str, Any] = dict(
        key="file",
        checkpoint=str(checkpoint),
        available_now=True,
        table=chains_env,
        stop_on_failure=False,
        page_size=2,
    )
    query = track_stream(
        _stream(local_spark, inbox), _none_for("a.txt", "b.txt"), SCHEMA, _sink(out), **options
    )
    with pytest.raises(Exception, match=r"Incurable|returned"):
        query.awaitTermination(240)
    assert _total(out) == Counter()  # nothing committed, the batch not recorded done
    again = track_stream(_stream(local_spark, inbox), count_file, SCHEMA, _sink(out), **options)
    again.awaitTermination(240)
    assert again.exception() is None
    assert _total(out) == {"one": 1, "two": 1, "three": 1, "four": 1, "five": 1}


def test_a_relative_report_stays_where_it_was_when_the_driver_changes_folder(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report="reports/run.jsonl"``: the output and the checkpoint are resolved when the
    stream starts; the report was resolved in each batch, against the working folder of
    then (a notebook's %cd): a raw FileNotFoundError stopped the query."""
    inbox = _inbox(tmp_path / "inbox", {"a.txt": "one\n"})
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    (home / "reports").mkdir(parents=True)
    elsewhere.mkdir()
    monkeypatch.chdir(home)
    query = track_stream(
        _stream(local_spark, inbox),
        count_file,
        SCHEMA,
        _sink(tmp_path / "out"),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        table=chains_env,
        report="reports/run.jsonl",
    )
    os.chdir(elsewhere)  # before the first batch runs
    query.awaitTermination(240)
    assert query.exception() is None
    assert [p.name.split(".batch=")[0] for p in (home / "reports").glob("run.batch=*.jsonl")] == [
        "run"
    ]
