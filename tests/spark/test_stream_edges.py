"""``track_stream`` at its edges: an ``on_event`` that is no function (refused before the
checkpoint), DynamoDB failing the marks of a batch gone past as incurable (``DynamoDBFailed``),
a batch longer than ``retention`` (what it committed is remembered), a report past a
mebibyte (read back, and its batch commits)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.dynamodb.sync import SyncXorAckDynamoDB
from xor_ack_dynamodb.spark import InvalidArgument, Sink, track_stream
from xor_ack_dynamodb.spark.examples.wordcount import SCHEMA, count_file, total_by_word
from xor_ack_dynamodb.spark.stream_marks import StreamMarks
from xor_ack_dynamodb.spark.tracker import TrackerConfig

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _inbox(tmp_path: Path, files: dict[str, str]) -> Path:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for age, (name, text) in enumerate(files.items()):
        (inbox / name).write_text(text)
        os.utime(inbox / name, (1_000_000 + age, 1_000_000 + age))
    return inbox


def _stream(spark: Any, inbox: Path, *, short_key: bool = False) -> Any:
    from pyspark.sql import functions as F

    path = F.col("_metadata.file_path")
    key = F.element_at(F.split(path, "/"), -1) if short_key else path
    return spark.readStream.text(str(inbox)).select("value", key.alias("file"))


def _sink(out: Path) -> Sink:
    return Sink(str(out), format="csv", options={"header": "true"}, finish=total_by_word, files=1)


def _no_table(key: str, rows: Any) -> Any:
    return None  # no rows table for any input: Incurable (output at fault)


def test_a_non_callable_on_event_is_refused_before_the_checkpoint_is_written(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """``on_event`` is checked by ``check_options`` (InvalidArgument), but ``track_stream``
    keeps it out of the options it checks when it starts: it is refused only by the first
    micro-batch, after Spark wrote the checkpoint (a StreamingQueryException)."""
    inbox = _inbox(tmp_path, {"a.txt": "one two\n"})
    before = sorted(p.name for p in tmp_path.iterdir())
    query = None
    try:
        with pytest.raises(InvalidArgument, match="on_event"):
            query = track_stream(
                _stream(local_spark, inbox),
                count_file,
                SCHEMA,
                _sink(tmp_path / "out"),
                key="file",
                checkpoint=str(tmp_path / "checkpoint"),
                available_now=True,
                on_event="print",  # not callable
                tracker=tracker,
            )
    finally:
        if query is not None:
            with contextlib.suppress(Exception):
                query.awaitTermination(120)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no checkpoint, no output


def test_dynamodb_failing_the_marks_of_a_batch_gone_past_as_incurable_is_dynamodb_failed(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stop_on_failure=False``, a batch whose every input's function returned no table
    (``Incurable``): ``track_stream`` fails their marks itself, outside the job's ``run()``,
    so DynamoDB failing there escapes as the internal ``Unanswered`` (not a
    ``SparkTrackingError``), where the same failure inside a run is ``DynamoDBFailed``
    (phase ``marks before commit``)."""
    from botocore.exceptions import EndpointConnectionError

    inbox = _inbox(tmp_path, {"a.txt": "one two\n", "b.txt": "three four\n"})
    fail = SyncXorAckDynamoDB.fail

    def unreachable(self: Any, tag: str, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("reason") == "failed: not committed":
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
        return fail(self, tag, *args, **kwargs)

    monkeypatch.setattr(SyncXorAckDynamoDB, "fail", unreachable)
    query = track_stream(
        _stream(local_spark, inbox),
        _no_table,
        SCHEMA,
        _sink(tmp_path / "out"),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        tracker=tracker,
        stop_on_failure=False,
    )
    with pytest.raises(Exception) as stopped:
        query.awaitTermination(240)
    said = [line.strip() for line in str(stopped.value).splitlines() if "marks" in line]
    assert said, "the injected failure did not stop the query"
    assert "DynamoDBFailed: DynamoDB failed the driver during the failing" in said[-1], said[-1]
    assert "Unanswered" not in str(stopped.value)


def _slow_count_noting(done: Path) -> Any:
    """``count_file`` after 4 s; the time it returned, written to ``done``."""

    def count(key: str, rows: Any) -> Any:
        time.sleep(4)
        done.write_text(repr(time.time()))
        return count_file(key, rows)

    return count


def test_a_batch_longer_than_retention_still_remembers_what_it_committed(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """A mark was created with TTL ``retention`` when the batch started; the batch commits
    after that TTL passed, its ack stamp meets an expired mark (``ChainMoved``), which
    ``_stamp_acked`` ignored: the input, committed a moment ago, was not remembered at all
    (``retention``: "seconds it remembers an input it committed"), so a restart without
    the checkpoint committed it a second time.  The mark is read as it is in the table,
    not through the clock: acked, and kept ``retention`` seconds from the commit."""
    inbox = _inbox(tmp_path, {"a.txt": "one two\n"})
    out = tmp_path / "out"
    done = tmp_path / "returned"
    query = track_stream(
        _stream(local_spark, inbox, short_key=True),
        _slow_count_noting(done),
        SCHEMA,
        _sink(out),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        tracker=tracker,
        name="review-retention",
        retention=3.0,
    )
    query.awaitTermination(240)
    assert query.exception() is None
    assert len(list(out.glob("batch=*"))) == 1  # a.txt committed
    marks = StreamMarks(None, tracker, "review-retention", str(out), "later")
    key = {tracker.partition_key: {"S": marks.tag("a.txt")}}
    item = tracker.client().get_item(TableName=tracker.table, Key=key, ConsistentRead=True)
    mark = item["Item"]
    assert set(mark["stamp"]["B"]) == {0}, "the commit's stamp did not land on the mark"
    assert "acked_at" in mark
    # Kept `retention` seconds from the commit, which came after the function returned
    # (the mark was made 4 s before that): a run reading a.txt again in that time skips it.
    assert int(mark["expires_at"]["N"]) >= float(done.read_text()) + 3.0


def test_a_report_of_more_than_a_mebibyte_reads_back(tmp_path: Path) -> None:
    """``Endings.lines`` reads a chunk with ``readlines(1 << 20)``, which iterates the text
    file (``next()``): when the chunk stops before the end of the file, the next
    ``tell()`` raises ``OSError: telling position disabled by next() call``.  Every
    report past 1 MiB of endings (some 7,000 inputs with paths as keys) cannot be read
    back: ``endings()``, ``inputs``, ``failed``, and a stream's marks before its commit."""
    from xor_ack_dynamodb.spark.report import InputResult, TrackedReport

    report = TrackedReport("r", "out", True, report_path=str(tmp_path / "run.jsonl"))
    for i in range(3_000):
        report.ended(InputResult(f"file:/data/corpus/{i:06d}-" + "x" * 400, "acked", 1, ["acked"]))
    assert sum(1 for _ in report.endings()) == 3_000


def _big_batch(key: str, rows: Any) -> Any:
    import pyarrow as pa

    schema = pa.schema([("word", pa.string()), ("n", pa.int64())])
    return pa.table({"word": [key[-6:]], "n": [1]}, schema=schema)


def test_a_micro_batch_whose_report_passes_a_mebibyte_commits(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """A micro-batch of 30 inputs with keys of ~40,000 characters: its endings pass 1 MiB,
    and ``StreamMarks.before_commit`` (``report.endings()``) raises a bare ``OSError``
    before the rename; the query stops, and stops again at every restart (the batch is
    run again, as big)."""
    from pyspark.sql import functions as F

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "lines.txt").write_text("".join(f"{i:06d}\n" for i in range(30)))
    stream = local_spark.readStream.text(str(inbox)).select(
        "value", F.concat(F.lit("k" * 40_000), F.col("value")).alias("file")
    )
    out = tmp_path / "out"
    query = track_stream(
        stream,
        _big_batch,
        SCHEMA,
        Sink(str(out), format="csv", options={"header": "true"}),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        tracker=tracker,
        partitions=2,
        input_tasks=2,
    )
    try:
        query.awaitTermination(400)
    except Exception as exc:  # the query stopped
        said = [line.strip() for line in str(exc).splitlines() if "Error: " in line]
        pytest.fail(f"the batch did not commit: {said[-1] if said else exc}")
    assert query.exception() is None
    assert len(list(out.glob("batch=*"))) == 1
