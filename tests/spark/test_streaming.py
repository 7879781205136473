"""Structured Streaming: files arriving in a folder, each tracked to completion per batch."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.events import Acked, Failed
from xor_ack_dynamodb.spark import (
    FinishFailed,
    InputRejected,
    InvalidArgument,
    KeyColumnMissing,
    OutputUnwritable,
    PartitionColumnMissing,
    ReservedColumn,
    SchemaInvalid,
    Sink,
    TrackingNotConfigured,
    track_stream,
)
from xor_ack_dynamodb.spark.examples.wordcount import SCHEMA, count_file, total_by_word
from xor_ack_dynamodb.spark.faults import FaultConfig
from xor_ack_dynamodb.spark.report_stream import read_report

from .conftest import independent_count, make_corpus, read_counts


def file_stream(spark: Any, inbox: Path, per_trigger: int) -> Any:
    """The files under ``inbox`` (at any depth) as a stream of lines, ``per_trigger`` files
    per micro-batch, each line with its file (the key)."""
    from pyspark.sql import functions as F

    return (
        spark.readStream.option("recursiveFileLookup", "true")
        .option("maxFilesPerTrigger", per_trigger)
        .text(str(inbox))
        .select("value", F.col("_metadata.file_path").alias("file"))
    )


def counts_sink(out: Path) -> Sink:
    """The word counts' sink: one CSV file per batch folder, each word's total."""
    return Sink(str(out), format="csv", options={"header": "true"}, finish=total_by_word, files=1)


def test_stream_of_files_every_file_acked_and_counts_exact(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:

    inbox = make_corpus(tmp_path / "inbox", files=6, lines=20, seed=5)
    stream = file_stream(local_spark, inbox, per_trigger=3)
    events: list[Acked | Failed] = []
    out = tmp_path / "counts"
    query = track_stream(
        stream,
        count_file,
        SCHEMA,
        counts_sink(out),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        on_event=events.append,
        table=chains_env,
        faults=FaultConfig.rate(0.3, seed=1),
        partitions=4,
    )
    query.awaitTermination(240)
    assert query.exception() is None
    folders = sorted(out.glob("batch=*"))
    assert len(folders) >= 2, "the files did not arrive over several micro-batches"
    # One Acked event per file (its chain: RUN/FILE#ROUND); a Failed one per replayed chain.
    acked = [e.tag.rsplit("#", 1)[0].split("/", 1)[1] for e in events if isinstance(e, Acked)]
    assert len(acked) == len(set(acked)) == 6  # the empty file has no row: no input
    failed = [e for e in events if isinstance(e, Failed)]
    assert failed, "the faults caused no replay: the events prove nothing"
    assert all(e.reason for e in failed)
    total: Counter[str] = Counter()
    for folder in folders:
        total.update(read_counts(folder))
    assert total == independent_count(inbox)


@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        ({"max_attempts": 0}, InvalidArgument),
        ({"page_size": 0}, InvalidArgument),
        ({"schema": "word strin, n long"}, SchemaInvalid),
        ({"key": "path"}, KeyColumnMissing),
        ({"table": None}, TrackingNotConfigured),
        ({"schema": "word string, _xa_n long"}, ReservedColumn),
        ({"sink": {"partition_by": ("nope",)}}, PartitionColumnMissing),
        ({"sink": {"finish": lambda rows: rows.select("nope")}}, FinishFailed),
        ({"schema": "word string, n array<long>", "sink": {"format": "csv"}}, OutputUnwritable),
        ({"retention": 0}, InvalidArgument),
        ({"retention": float("nan")}, InvalidArgument),
        ({"retention": 101 * 365 * 86_400.0}, InvalidArgument),
        ({"retention": 10**400}, InvalidArgument),  # was a bare OverflowError
        ({"run_id": "r" * 60}, InvalidArgument),
    ],
    ids=[
        "max_attempts",
        "page_size",
        "schema",
        "key",
        "no table",
        "reserved column",
        "partition_by",
        "finish",
        "format",
        "retention 0",
        "retention nan",
        "retention over 100 years",
        "retention an int too big for a float",
        "run_id too long for a batch run",
    ],
)
def test_a_stream_that_a_batch_would_refuse_is_refused_before_the_checkpoint_is_written(
    local_spark: Any,
    tmp_path: Path,
    chains_env: str,
    monkeypatch: pytest.MonkeyPatch,
    given: dict[str, Any],
    refusal: type[Exception],
) -> None:
    from pyspark.sql import functions as F

    monkeypatch.delenv("XOR_ACK_TABLE", raising=False)
    inbox = make_corpus(tmp_path / "inbox", files=2, lines=2)
    stream = local_spark.readStream.text(str(inbox / "part-0")).select(
        "value", F.col("_metadata.file_path").alias("file")
    )
    options: dict[str, Any] = {"schema": SCHEMA, "key": "file", "table": chains_env, **given}
    sink = Sink(str(tmp_path / "counts"), **options.pop("sink", {}))
    checkpoint = tmp_path / "checkpoint"
    with pytest.raises(refusal):
        track_stream(
            stream,
            count_file,
            sink=sink,
            checkpoint=str(checkpoint),
            available_now=True,
            **options,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox"]  # no checkpoint, no output


def _as_over_connect(monkeypatch: pytest.MonkeyPatch) -> None:
    """``track_stream`` on the local session as it runs over Spark Connect."""
    from xor_ack_dynamodb.spark import commit as commit_module
    from xor_ack_dynamodb.spark import streaming as streaming_module

    monkeypatch.setattr(commit_module, "is_connect", lambda spark: True)
    monkeypatch.setattr(streaming_module, "is_connect", lambda spark: True)


def _start_over_connect(
    spark: Any, folder: Path, table: str, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> Any:
    """``track_stream`` of one small file under ``folder``, as over Spark Connect."""
    from pyspark.sql import functions as F

    inbox = make_corpus(folder / "inbox", files=1, lines=2)
    stream = spark.readStream.text(str(inbox / "part-0")).select(
        "value", F.col("_metadata.file_path").alias("file")
    )
    _as_over_connect(monkeypatch)
    options.setdefault("checkpoint", str(folder / "progress"))
    sink = Sink(str(folder / "counts"))
    return track_stream(stream, count_file, SCHEMA, sink, key="file", table=table, **options)


def test_a_relative_checkpoint_over_spark_connect_is_refused_before_anything_is_written(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sink's folder was refused when relative over Spark Connect, the checkpoint was
    sent as given: the server kept the query's progress in its own working directory."""
    from xor_ack_dynamodb.spark import RelativePath

    monkeypatch.chdir(tmp_path)
    with pytest.raises(RelativePath, match="checkpoint 'progress' is relative"):
        _start_over_connect(local_spark, tmp_path, chains_env, monkeypatch, checkpoint="progress")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox"]


def test_a_relative_report_over_spark_connect_is_refused_before_anything_is_written(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batches write the report in the server, whose working directory is not the
    client's: a relative one is refused, naming it."""
    from xor_ack_dynamodb.spark import RelativePath

    monkeypatch.chdir(tmp_path)
    with pytest.raises(RelativePath, match=r"report 'run\.jsonl' is relative"):
        _start_over_connect(local_spark, tmp_path, chains_env, monkeypatch, report="run.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox"]


def test_over_spark_connect_a_stream_s_report_is_judged_where_its_batches_write_it(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over Spark Connect the batches write the report on the server's disk: the stream
    refused a report whose folder the client lacks.  Its name is judged at the start (one
    inside the output is refused, nothing written); its folder by each batch, there."""
    from xor_ack_dynamodb.spark import InvalidArgument

    inside = str(tmp_path / "counts" / "run.jsonl")
    with pytest.raises(InvalidArgument, match="inside the output folder"):
        _start_over_connect(local_spark, tmp_path, chains_env, monkeypatch, report=inside)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox"]
    elsewhere = "/only/on/the/server/run.jsonl"  # no such folder on this disk: not judged here
    query = _start_over_connect(
        local_spark, tmp_path, chains_env, monkeypatch, report=elsewhere, available_now=True
    )
    with pytest.raises(Exception, match="is in no folder"):  # the batch's own check
        query.awaitTermination(120)


def test_a_stream_tries_its_sink_s_format_once_not_in_every_micro_batch(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each micro-batch wrote a probe of the format into OUTPUT/.batch=...-check: a Spark
    job per batch, and a folder a watcher stopped (Ctrl-C) mid-probe left in OUTPUT."""
    from xor_ack_dynamodb.spark import output as output_module

    probed: list[str] = []
    real = output_module.probe_format

    def counted(spark: Any, struct: Any, sink: Sink, scratch: str, files: Any) -> None:
        probed.append(scratch)
        real(spark, struct, sink, scratch, files)

    monkeypatch.setattr(output_module, "probe_format", counted)
    inbox = make_corpus(tmp_path / "inbox", files=3, lines=3, seed=2)
    out = tmp_path / "counts"
    query = track_stream(
        file_stream(local_spark, inbox, per_trigger=2),
        count_file,
        SCHEMA,
        counts_sink(out),  # CSV with options: a format that is tried
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        table=chains_env,
    )
    query.awaitTermination(240)
    assert query.exception() is None
    assert len(list(out.glob("batch=*"))) >= 2
    assert len(probed) == 1 and ".counts.xor-ack-" in probed[0], probed  # beside OUTPUT
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("batch=")) == []


def test_a_stream_s_report_keeps_every_batch_s_endings(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:
    from pyspark.sql import functions as F

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for age, name in enumerate(["a.txt", "b.txt"]):
        (inbox / name).write_text(f"{name} words\n")
        os.utime(inbox / name, (1_000_000 + age, 1_000_000 + age))  # a's batch, then b's
    stream = (
        local_spark.readStream.option("maxFilesPerTrigger", 1)
        .text(str(inbox))
        .select("value", F.col("_metadata.file_path").alias("file"))
    )
    out = tmp_path / "counts"
    query = track_stream(
        stream,
        count_file,
        SCHEMA,
        counts_sink(out),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        table=chains_env,
        report=tmp_path / "stream.jsonl",
    )
    query.awaitTermination(240)
    assert query.exception() is None
    folders = sorted(out.glob("batch=*"))
    assert len(folders) == 2
    keys = []
    for folder in folders:  # one report per batch run, named after its folder
        endings, summary = read_report(tmp_path / f"stream.{folder.name}.jsonl")
        assert summary["ok"] and summary["acked"] == len(endings) == 1
        keys += [Path(ending["key"]).name for ending in endings]
    assert keys == ["a.txt", "b.txt"]
    assert not (tmp_path / "stream.jsonl").exists()


def test_the_chains_table_is_resolved_when_the_stream_starts_not_in_each_batch(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over Spark Connect a batch runs in the server's Python, which does not see the
    caller's environment: the table, endpoint and region named there when track_stream
    was called are the ones each batch uses (here: gone from the environment since)."""
    from pyspark.sql import functions as F

    inbox, out = tmp_path / "inbox", tmp_path / "counts"
    inbox.mkdir()
    monkeypatch.setenv("XOR_ACK_TABLE", chains_env)
    stream = local_spark.readStream.text(str(inbox)).select(
        "value", F.col("_metadata.file_path").alias("file")
    )
    query = track_stream(
        stream,
        count_file,
        SCHEMA,
        counts_sink(out),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
    )
    try:
        for name in ("XOR_ACK_TABLE", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_REGION"):
            monkeypatch.delenv(name)  # what a Spark Connect server's Python does not have
        (inbox / "a.txt").write_text("one two two\n")
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    (folder,) = out.glob("batch=*")
    assert read_counts(folder) == {"one": 1, "two": 2}


def rejecting(bad: str) -> Any:
    """The word count's function, which rejects the file named ``bad`` (a closure: pickled
    by value)."""

    def count(key: str, rows: Any) -> Any:
        if key.endswith(bad):
            raise InputRejected(f"not this one: {bad}")
        return count_file(key, rows)

    return count


@pytest.mark.parametrize("stop", [True, False], ids=["stops", "goes on"])
def test_a_stream_with_an_input_that_fails_for_good_stops_or_goes_on_as_asked(
    local_spark: Any, tmp_path: Path, chains_env: str, stop: bool
) -> None:

    inbox = make_corpus(tmp_path / "inbox", files=4, lines=10, seed=3)
    files = sorted(p for p in inbox.rglob("*") if p.is_file())
    bad = files[0].name
    stream = file_stream(local_spark, inbox, per_trigger=2)
    events: list[Acked | Failed] = []
    out = tmp_path / "counts"
    query = track_stream(
        stream,
        rejecting(bad),
        SCHEMA,
        counts_sink(out),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        on_event=events.append,
        table=chains_env,
        stop_on_failure=stop,
    )
    if stop:
        # the input, why it failed and what to do (it named the input only)
        named = (
            rf"BatchFailed: micro-batch \d+: 1 inputs failed \([^;]*{re.escape(bad)}; "
            rf"[^;]*: .*not this one: {re.escape(bad)}\).*restart the query.*stop_on_failure=False"
        )
        with pytest.raises(Exception, match=named):
            query.awaitTermination(240)
    else:
        query.awaitTermination(240)
        assert query.exception() is None
    failed = [e for e in events if isinstance(e, Failed)]
    assert [e.reason for e in failed] == [f"not this one: {bad}"]
    if stop:
        return
    acked = {e.tag.rsplit("#", 1)[0].rsplit("/", 1)[1] for e in events if isinstance(e, Acked)}
    assert acked == {f.name for f in files[1:] if f.stat().st_size}  # every other file
    total: Counter[str] = Counter()
    for folder in sorted(out.glob("batch=*")):
        total.update(read_counts(folder))
    rejected = Counter(re.findall(r"\w+", files[0].read_text(encoding="utf-8").lower()))
    assert total == independent_count(inbox) - rejected  # every word but the rejected file's


def test_stop_on_failure_is_true_or_false(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:
    stream = local_spark.readStream.text(str(tmp_path)).withColumnRenamed("value", "file")
    with pytest.raises(InvalidArgument, match="stop_on_failure='no'"):
        track_stream(
            stream,
            count_file,
            SCHEMA,
            Sink(str(tmp_path / "counts")),
            key="file",
            checkpoint=str(tmp_path / "checkpoint"),
            table=chains_env,
            stop_on_failure="no",  # type: ignore[arg-type]
        )
