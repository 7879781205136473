"""A tracked stream's edges: what stop_on_failure=False goes on past, what is refused first.

- ``stop_on_failure=False``: a micro-batch whose every input's function returned no table
  (``Incurable`` in a batch job) fails those inputs and the query goes on, as it does
  when the same input shares its batch with acked ones.
- A ``name=`` the marks cannot use is refused before Spark writes the checkpoint.
- ... unless a later page of that batch's inputs was never run: then the query stops
  (recorded done, the batch would lose them).
- A relative output, and a relative report, are resolved once, when the stream starts.
- A batch gone past as ``Incurable`` reports the inputs it skipped.
- An output reached through a symbolic link: a restart settles a batch that died after
  its rename.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.spark import InvalidArgument, Sink, track_stream
from xor_ack_dynamodb.spark.examples.wordcount import SCHEMA, count_file, total_by_word

from .conftest import read_counts


def _inbox(tmp_path: Path, files: dict[str, str]) -> Path:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for age, (name, text) in enumerate(files.items()):
        (inbox / name).write_text(text)
        os.utime(inbox / name, (1_000_000 + age, 1_000_000 + age))  # in this order
    return inbox


def _stream(spark: Any, inbox: Path, per_trigger: int | None = None) -> Any:
    from pyspark.sql import functions as F

    reader = spark.readStream
    if per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", per_trigger)
    return reader.text(str(inbox)).select("value", F.col("_metadata.file_path").alias("file"))


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


def test_stop_on_failure_false_goes_on_past_a_batch_whose_only_input_fails(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:
    """One file per micro-batch; the function returns no table for a.txt.  In a batch with
    other inputs a.txt would be failed after its replays and the query would go on
    (``stop_on_failure=False``); alone in its batch, its first round makes the run
    ``Incurable``, which stops the query, and every restart runs that batch again."""
    inbox = _inbox(tmp_path, {"a.txt": "one two\n", "b.txt": "three four\n"})
    out = tmp_path / "out"
    query = track_stream(
        _stream(local_spark, inbox, per_trigger=1),
        _none_for("a.txt"),
        SCHEMA,
        _sink(out),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        table=chains_env,
        stop_on_failure=False,
    )
    try:
        query.awaitTermination(240)
    except Exception as exc:  # the query stopped
        pytest.fail(f"stop_on_failure=False, yet the query stopped: {str(exc).splitlines()[0]}")
    assert query.exception() is None
    assert _total(out) == {"three": 1, "four": 1}  # b.txt, in the batch after a.txt's


@pytest.mark.parametrize(
    ("name", "said"),
    [(123, "a non-empty str"), ("", "a non-empty str"), ("s" * 2_100, "give a shorter name")],
    ids=["not a string", "empty", "too long a tag"],
)
def test_a_stream_name_the_marks_cannot_use_is_refused_before_the_checkpoint_is_written(
    local_spark: Any, tmp_path: Path, chains_env: str, name: Any, said: str
) -> None:
    inbox = _inbox(tmp_path, {"a.txt": "one two\n"})
    checkpoint = tmp_path / "checkpoint"
    with pytest.raises(InvalidArgument, match=said):
        track_stream(
            _stream(local_spark, inbox),
            count_file,
            SCHEMA,
            _sink(tmp_path / "out"),
            key="file",
            checkpoint=str(checkpoint),
            available_now=True,
            table=chains_env,
            name=name,
        )
    assert not checkpoint.exists() and not (tmp_path / "out").exists()


def test_a_relative_output_stays_where_it_was_when_the_driver_changes_directory(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The marks know the output as it was resolved when the stream started; each batch's
    folder is under that same folder, whatever the driver's working directory is by the
    time the batch runs (here: changed while the first batch runs, as a notebook's %cd)."""
    inbox = _inbox(tmp_path, {"a.txt": "one two\n", "b.txt": "three four\n"})
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)

    def move_on(event: Any) -> None:  # on the driver, in the first batch
        os.chdir(tmp_path / "elsewhere")

    query = track_stream(
        _stream(local_spark, inbox, per_trigger=1),
        count_file,
        SCHEMA,
        _sink(Path("out")),
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        table=chains_env,
        on_event=move_on,
    )
    query.awaitTermination(240)
    assert query.exception() is None
    assert not (tmp_path / "elsewhere" / "out").exists()
    assert len(list((tmp_path / "out").glob("batch=*"))) == 2
    assert _total(tmp_path / "out") == {"one": 1, "two": 1, "three": 1, "four": 1}


def _two_per_page(tmp_path: Path, table: str) -> dict[str, Any]:
    """``track_stream``'s options for one batch of files, two per page, going on past
    inputs that fail for good."""
    return dict(
        key="file",
        checkpoint=str(tmp_path / "checkpoint"),
        available_now=True,
        table=table,
        stop_on_failure=False,
        page_size=2,
    )


def test_a_batch_stopped_before_its_later_pages_stops_the_query_and_loses_nothing(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:
    """One micro-batch of four files, two per page; the function returns no table for
    a.txt and b.txt (the first page): that page is ``Incurable``.  c.txt and d.txt were
    never run, so the batch is not recorded done even with ``stop_on_failure=False``:
    the query stops, and started again with a mended function it commits all four."""
    inbox = _inbox(
        tmp_path, {"a.txt": "one\n", "b.txt": "two\n", "c.txt": "three four\n", "d.txt": "five\n"}
    )
    out, options = tmp_path / "out", _two_per_page(tmp_path, chains_env)
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


def _missing_module_for(*bad: str) -> Any:
    """The word count's function, which imports a module the workers lack for the files
    named in ``bad`` (a closure: pickled by value for the workers)."""

    def count(key: str, rows: Any) -> Any:
        if key.endswith(bad):
            import xor_ack_test_module_not_installed  # noqa: F401
        return count_file(key, rows)

    return count


@pytest.mark.parametrize("fault", ["no table", "module missing"])
def test_a_batch_stopped_after_an_acked_page_stops_the_query_and_loses_nothing(
    local_spark: Any, tmp_path: Path, chains_env: str, fault: str
) -> None:
    """Six files, two per page: a.txt and b.txt acked; then c.txt and d.txt stop the run
    (no table returned for either, or a module missing on the workers), and e.txt and
    f.txt are never run.  With an input acked the run returned instead of raising, and
    ``stop_on_failure=False`` went on: the batch recorded done, e.txt and f.txt (and, for
    the module, c.txt and d.txt) lost for good.  The query now stops; started again with
    a mended function it commits the rest, the acked page not twice."""
    inbox = _inbox(
        tmp_path,
        {
            "a.txt": "alpha\n",
            "b.txt": "bravo\n",
            "c.txt": "charlie\n",
            "d.txt": "delta\n",
            "e.txt": "echo\n",
            "f.txt": "foxtrot\n",
        },
    )
    out, options = tmp_path / "out", _two_per_page(tmp_path, chains_env)
    faulty = (_none_for if fault == "no table" else _missing_module_for)("c.txt", "d.txt")
    query = track_stream(_stream(local_spark, inbox), faulty, SCHEMA, _sink(out), **options)
    with pytest.raises(Exception, match="the run stopped"):
        query.awaitTermination(240)
    assert _total(out) == {"alpha": 1, "bravo": 1}  # the acked page, committed
    again = track_stream(_stream(local_spark, inbox), count_file, SCHEMA, _sink(out), **options)
    again.awaitTermination(240)
    assert again.exception() is None
    words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
    assert _total(out) == dict.fromkeys(words, 1)


def test_a_relative_report_stays_where_it_was_when_the_driver_changes_folder(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report="reports/run.jsonl"``: the output and the checkpoint are resolved when the
    stream starts; the report was resolved in each batch, against the working folder of
    then (a notebook's %cd): a raw FileNotFoundError stopped the query."""
    inbox = _inbox(tmp_path, {"a.txt": "one\n"})
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


def test_a_batch_gone_past_as_incurable_reports_the_inputs_it_skipped(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:
    """a.txt and b.txt committed; the checkpoint lost; c.txt and d.txt arrive and the
    function returns no table for either.  The batch run again holds all four: a and b
    are skipped (an earlier run committed them), c and d make the run ``Incurable`` and
    ``stop_on_failure=False`` goes on past it.  Its report's summary said ``skipped: 0``:
    it was written before the marks' count reached it."""
    inbox = _inbox(tmp_path, {"a.txt": "one\n", "b.txt": "two\n"})
    out, reports = tmp_path / "out", tmp_path / "reports"
    reports.mkdir()
    options: dict[str, Any] = dict(
        key="file", available_now=True, table=chains_env, stop_on_failure=False
    )
    first = track_stream(
        _stream(local_spark, inbox),
        count_file,
        SCHEMA,
        _sink(out),
        checkpoint=str(tmp_path / "checkpoint-1"),
        **options,
    )
    first.awaitTermination(240)
    assert first.exception() is None
    (inbox / "c.txt").write_text("three\n")
    (inbox / "d.txt").write_text("four\n")
    again = track_stream(
        _stream(local_spark, inbox),
        _none_for("c.txt", "d.txt"),
        SCHEMA,
        _sink(out),
        checkpoint=str(tmp_path / "checkpoint-2"),  # the first one lost
        report=str(reports / "run.jsonl"),
        **options,
    )
    again.awaitTermination(240)
    assert again.exception() is None
    (report,) = reports.glob("run.batch=*.jsonl")
    lines = [json.loads(line) for line in report.read_text().splitlines()]
    summary = lines[-1]["summary"]
    assert (summary["skipped"], summary["failed"], summary["acked"]) == (2, 2, 0)
    assert sorted(line["key"].rsplit("/", 1)[-1] for line in lines[:-1]) == ["c.txt", "d.txt"]
    assert _total(out) == {"one": 1, "two": 1}


def test_a_stream_into_a_symbolic_link_settles_a_batch_that_died_after_its_rename(
    local_spark: Any, tmp_path: Path, chains_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output is a symbolic link to a folder (the batches are renamed inside it, which
    a stream allows).  The driver dies after a batch's rename, before its marks are
    stamped: the restart settles those marks by listing the output, which refused a link
    (``OutputUnusable`` at every restart).  Now a.txt is committed once."""
    from xor_ack_dynamodb.spark.stream_marks import StreamMarks

    inbox = _inbox(tmp_path, {"a.txt": "one two\n", "b.txt": "three\n"})
    real, out = tmp_path / "real", tmp_path / "out"
    real.mkdir()
    out.symlink_to(real)
    stamp = StreamMarks.after_commit
    died: list[str] = []

    def dies_once_after_the_rename(self: StreamMarks, report: Any) -> None:
        if not died:
            died.append("a")
            raise RuntimeError("the driver died after the rename")
        stamp(self, report)

    monkeypatch.setattr(StreamMarks, "after_commit", dies_once_after_the_rename)
    options: dict[str, Any] = dict(
        key="file", checkpoint=str(tmp_path / "checkpoint"), available_now=True, table=chains_env
    )
    first = track_stream(_stream(local_spark, inbox, 1), count_file, SCHEMA, _sink(out), **options)
    with pytest.raises(Exception, match="the driver died after the rename"):
        first.awaitTermination(240)
    again = track_stream(_stream(local_spark, inbox, 1), count_file, SCHEMA, _sink(out), **options)
    again.awaitTermination(240)
    assert died and again.exception() is None
    assert out.is_symlink()
    assert _total(real) == {"one": 1, "two": 1, "three": 1}
