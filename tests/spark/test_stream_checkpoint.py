"""A stream's state outlives its checkpoint: the chains say which inputs were committed.

The checkpoint's last commit log lost (Spark runs that batch again), then the whole
checkpoint deleted and new files added (Spark reads every file again): each file's
words are in the output once, none skipped.  And the marks alone, without Spark: a
run that stopped after its rename, or before it, is read right by the next one.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.events import Acked, Failed
from xor_ack_dynamodb.spark import InputResult, Sink, TrackedReport, track_stream
from xor_ack_dynamodb.spark.errors import TornBatch
from xor_ack_dynamodb.spark.examples.wordcount import SCHEMA, count_file, total_by_word
from xor_ack_dynamodb.spark.paths import MANIFEST, manifest_text
from xor_ack_dynamodb.spark.stream_marks import StreamMarks, batch_path
from xor_ack_dynamodb.spark.tracker import TrackerConfig

from .conftest import independent_count, make_corpus, read_counts


def _run(spark: Any, inbox: Path, out: Path, events: list[Acked | Failed], table: str) -> None:
    from pyspark.sql import functions as F

    stream = (
        spark.readStream.option("recursiveFileLookup", "true")
        .option("maxFilesPerTrigger", 2)
        .text(str(inbox))
        .select("value", F.col("_metadata.file_path").alias("file"))
    )
    query = track_stream(
        stream,
        count_file,
        SCHEMA,
        Sink(str(out), format="csv", options={"header": "true"}, finish=total_by_word, files=1),
        key="file",
        checkpoint=str(out.parent / "checkpoint"),
        available_now=True,
        on_event=events.append,
        table=table,
        partitions=2,
    )
    query.awaitTermination(240)
    assert query.exception() is None


def test_checkpoint_lost_between_batches_no_input_twice_none_skipped(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:
    inbox, out = tmp_path / "inbox", tmp_path / "run" / "counts"
    make_corpus(inbox / "first", files=4, lines=10, seed=3)
    events: list[Acked | Failed] = []
    _run(local_spark, inbox, out, events, chains_env)
    logs = tmp_path / "run" / "checkpoint" / "commits"
    last = max(int(p.name) for p in logs.iterdir() if p.name.isdigit())
    assert last >= 1, "the files did not arrive over several micro-batches"
    for lost in (logs / str(last), logs / f".{last}.crc"):  # Spark runs that batch again
        lost.unlink(missing_ok=True)
    _run(local_spark, inbox, out, events, chains_env)
    shutil.rmtree(tmp_path / "run" / "checkpoint")  # all of it: every file is read again
    make_corpus(inbox / "second", files=2, lines=10, seed=4)
    _run(local_spark, inbox, out, events, chains_env)
    acked = [e.tag.rsplit("#", 1)[0].split("/", 1)[1] for e in events if isinstance(e, Acked)]
    assert len(acked) == len(set(acked)) == 6  # each file acked once over the three runs
    assert not [e for e in events if isinstance(e, Failed)]
    total: Counter[str] = Counter()
    for folder in sorted(out.glob("batch=*")):
        total.update(read_counts(folder))
    assert total == independent_count(inbox)  # every word once: no file twice, none skipped


def test_a_batch_run_again_under_a_fixed_run_id_processes_what_it_never_committed(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.sql import functions as F

    inbox, out = tmp_path / "inbox", tmp_path / "out"
    inbox.mkdir()
    for age, (name, text) in enumerate([("a.txt", "one two\n"), ("b.txt", "three four\n")]):
        (inbox / name).write_text(text)
        os.utime(inbox / name, (1_000_000 + age, 1_000_000 + age))  # a's batch, then b's
    commit = StreamMarks.before_commit
    died: list[str] = []

    def dies_once_before_b_is_renamed(self: StreamMarks, report: TrackedReport) -> None:
        if not died and any(e.key.endswith("b.txt") for e in report.endings()):
            died.append("b")
            raise RuntimeError("the driver died before the rename")
        commit(self, report)

    monkeypatch.setattr(StreamMarks, "before_commit", dies_once_before_b_is_renamed)

    def start() -> Any:
        stream = (
            local_spark.readStream.option("maxFilesPerTrigger", 1)
            .text(str(inbox))
            .select("value", F.col("_metadata.file_path").alias("file"))
        )
        return track_stream(
            stream,
            count_file,
            SCHEMA,
            Sink(str(out), format="csv", options={"header": "true"}, finish=total_by_word, files=1),
            key="file",
            checkpoint=str(tmp_path / "checkpoint"),
            available_now=True,
            table=chains_env,
            run_id="nightly",
        )

    with pytest.raises(Exception, match="the driver died before the rename"):
        start().awaitTermination(240)
    again = start()  # Spark runs b's batch again: the checkpoint has no commit log for it
    again.awaitTermination(240)
    assert died and again.exception() is None
    total: Counter[str] = Counter()
    for folder in sorted(out.glob("batch=*")):
        total.update(read_counts(folder))
    assert total == independent_count(inbox)  # b once, not skipped as committed
    assert all("-nightly-" in folder.name for folder in out.glob("batch=*"))


@pytest.fixture
def marks_of(tracker: TrackerConfig, tmp_path: Path) -> Any:
    def make(run_id: str) -> StreamMarks:
        return StreamMarks(None, tracker, "stream-t", str(tmp_path / "out"), run_id)

    return make


def _commit(folder: Path, *, torn: bool = False) -> None:
    """A batch folder as a run's rename leaves it: its rows, ``_SUCCESS``, its manifest
    naming them; ``torn``: as a rename interrupted on an object store leaves it, the
    rows' file not there yet."""
    folder.mkdir(parents=True)
    (folder / "_SUCCESS").write_text("")
    if not torn:
        (folder / "part-00000.csv").write_text("word,n\n")
    text = manifest_text("run", "", ["_SUCCESS", "part-00000.csv"])
    (folder / MANIFEST).write_text(text)


def _report(**statuses: str) -> TrackedReport:
    report = TrackedReport("r", "out", True)
    report.inputs = [InputResult(key, status, 1) for key, status in statuses.items()]
    return report


def test_a_run_that_stopped_after_its_rename_committed_and_one_before_did_not(
    marks_of: Any, tmp_path: Path
) -> None:
    first = marks_of("run-a")
    assert list(first.unmarked(iter(["a", "b", "c"]))) == ["a", "b", "c"]
    first.before_commit(_report(a="acked", b="acked", c="failed"))
    _commit(Path(batch_path(str(tmp_path / "out"), 0, "run-a")))
    # run-a stopped here: renamed into place, its marks of a and b still live
    second = marks_of("run-b")
    assert list(second.unmarked(iter(["a", "b", "c", "d"]))) == ["c", "d"]
    assert second.skipped == 2
    # run-b stopped before its rename: no folder of run-b
    third = marks_of("run-c")
    assert list(third.unmarked(iter(["a", "c", "d"]))) == ["c", "d"]
    third.before_commit(_report(c="acked", d="acked"))
    _commit(Path(batch_path(str(tmp_path / "out"), 1, "run-c")))
    third.after_commit(_report(c="acked", d="acked"))
    assert list(marks_of("run-d").unmarked(iter(["a", "b", "c", "d", "e"]))) == ["e"]


def test_a_batch_folder_torn_by_an_interrupted_rename_stops_the_query_until_moved_away(
    marks_of: Any, tmp_path: Path
) -> None:
    """On S3A or GCS a folder's rename copies object by object: a driver killed half-way
    leaves the folder, named for its run, without some of its rows.  Taken as committed,
    its inputs would be left out; processed again, the rows that did arrive would be in
    the output twice.  The next run stops, naming the folder, before it marks anything
    more; moved away, its inputs are processed again."""
    first = marks_of("run-a")
    assert list(first.unmarked(iter(["a", "b"]))) == ["a", "b"]
    first.before_commit(_report(a="acked", b="acked"))
    torn = Path(batch_path(str(tmp_path / "out"), 0, "run-a"))
    _commit(torn, torn=True)  # the driver was killed during the rename
    with pytest.raises(TornBatch, match="lacks 1 of its files") as stopped:
        list(marks_of("run-b").unmarked(iter(["a", "b"])))
    assert stopped.value.folder == str(torn) and stopped.value.missing == ["part-00000.csv"]
    (torn / MANIFEST).unlink()  # the manifest not copied yet, either
    with pytest.raises(TornBatch, match="lacks its manifest"):
        list(marks_of("run-c").unmarked(iter(["a", "b"])))
    shutil.move(str(torn), str(tmp_path / "aside"))  # what the message says to do
    assert list(marks_of("run-d").unmarked(iter(["a", "b"]))) == ["a", "b"]
