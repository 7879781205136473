"""``track_stream`` refuses what it cannot run before the query starts (no checkpoint, no
chain written), and an untracked stream started again without its checkpoint replaces
none of an earlier start's batches."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import InvalidArgument, OutputExists, Sink, track_stream
from xor_ack_dynamodb.spark.examples.wordcount import SCHEMA, count_file
from xor_ack_dynamodb.spark.files import Files
from xor_ack_dynamodb.spark.tracker import TrackerConfig

from .test_refusals import chains

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _inbox(tmp_path: Path) -> Path:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for age, (name, text) in enumerate([("a.txt", "one two\n"), ("b.txt", "three four\n")]):
        (inbox / name).write_text(text)
        os.utime(inbox / name, (1_000_000 + age, 1_000_000 + age))  # a's batch, then b's
    return inbox


def _lines(spark: Any, inbox: Path, streaming: bool = True) -> Any:
    from pyspark.sql import functions as F

    reader = spark.readStream.option("maxFilesPerTrigger", 1) if streaming else spark.read
    return reader.text(str(inbox)).select("value", F.col("_metadata.file_path").alias("file"))


def _words(out: Path) -> list[str]:
    """Every word of the JSON files of every batch folder of ``out``."""
    found: list[str] = []
    for part in sorted(out.glob("batch=*/part-*.json")):
        found += [json.loads(line)["word"] for line in part.read_text().splitlines() if line]
    return sorted(found)


# Each was taken, then failed where it could not be undone: a bare AttributeError, Spark's
# AnalysisException or FileAlreadyExistsException after the checkpoint was begun, every
# batch failing after its chains were written, a file never processed though the
# checkpoint said it was done (keys=), an available_now="no" run as True.
CASES = {
    "sink-a-path": ({"sink": "out"}, InvalidArgument, r"sink='out' is not a Sink"),
    "a-batch-dataframe": ({"streaming": False}, InvalidArgument, "not a streaming DataFrame"),
    "checkpoint-a-file": ({"file": "checkpoint"}, OutputExists, "checkpoint .* is a file"),
    "output-a-file": ({"file": "out"}, OutputExists, "the sink's folder .* is a file"),
    "keys": ({"keys": ["file:/a.txt"]}, InvalidArgument, r"keys= is track\(\)'s"),
    "available-now-str": ({"available_now": "no"}, InvalidArgument, "available_now='no'"),
}


@pytest.mark.parametrize(("given", "error", "said"), CASES.values(), ids=CASES.keys())
def test_what_a_stream_cannot_run_is_refused_before_it_starts(
    local_spark: Any,
    tracker: TrackerConfig,
    tmp_path: Path,
    given: dict[str, Any],
    error: type[Exception],
    said: str,
) -> None:
    inbox = _inbox(tmp_path)
    given = dict(given)
    if "file" in given:
        (tmp_path / given.pop("file")).write_text("a file, not a folder")
    stream = _lines(local_spark, inbox, given.pop("streaming", True))
    before = sorted(p.name for p in tmp_path.iterdir())
    options: dict[str, Any] = {
        "sink": Sink(str(tmp_path / "out")),
        "key": "file",
        "checkpoint": str(tmp_path / "checkpoint"),
        "available_now": True,
        "tracker": tracker,
        **given,
    }
    sink = options.pop("sink")
    with pytest.raises(error, match=said):
        track_stream(stream, count_file, SCHEMA, sink, **options)
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == before


def test_an_untracked_stream_started_again_without_its_checkpoint_replaces_no_batch(
    local_spark: Any, tmp_path: Path
) -> None:
    """Untracked, batch N went to OUTPUT/batch=N, replaced by a batch run again: started
    again without its checkpoint, the query numbered its batches from 0 again and the new
    batch 0 replaced the earlier one (a's words lost)."""
    inbox = _inbox(tmp_path)
    out = tmp_path / "out"

    def run() -> None:
        query = track_stream(
            _lines(local_spark, inbox),
            count_file,
            SCHEMA,
            Sink(str(out), format="json"),
            key="file",
            checkpoint=str(tmp_path / "checkpoint"),
            available_now=True,
            tracking=False,
        )
        query.awaitTermination(240)
        assert query.exception() is None

    run()
    assert _words(out) == ["four", "one", "three", "two"]
    (tmp_path / "archive").mkdir()
    for name in ("a.txt", "b.txt"):
        (inbox / name).rename(tmp_path / "archive" / name)  # processed: archived
    shutil.rmtree(tmp_path / "checkpoint")  # lost
    (inbox / "c.txt").write_text("five\n")
    run()
    assert _words(out) == ["five", "four", "one", "three", "two"]


def test_a_cleanup_under_a_file_removes_nothing_and_raises_nothing(tmp_path: Path) -> None:
    """A path under a file (``NotADirectoryError``): a run's cleanup raised it in place of
    the run's own error (a batch's ``OutputWriteFailed`` became a bare OSError)."""
    (tmp_path / "out").write_text("a file")
    Files(object()).delete(str(tmp_path / "out" / ".batch=000000-r.xor-ack-r"))
    assert (tmp_path / "out").read_text() == "a file"
