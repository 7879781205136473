"""The word count at its edges: a ``--report`` given as a ``file:`` URI (written where it
names, never into INPUT), the closing lines of a kept output and of an untracked run (the
failed files named, not counted), a word longer than Python's CSV field, an OUTPUT made
empty before (used, not swapped), and ``--watch`` on the moto backend (no PartiQL), past a
file that fails (the others go on), stopped by an error (which it says), refusing a name
Spark's file source cannot read (``:``, not UTF-8), resuming past a batch killed
mid-commit."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline import cli as pipeline_cli
from xor_ack_dynamodb.table import TableSpec

from .conftest import read_output


def _batches(out: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for folder in sorted(out.glob("batch=*")):
        total.update(read_output(folder))
    return total


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# -- the report ------------------------------------------------------------------------


@pytest.mark.spark
def test_a_report_given_as_a_file_uri_is_written_where_it_names(
    shared_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--report file:/abs/r.json`` is judged as ``/abs/r.json`` (outside INPUT) by
    ``check_paths`` but written as the relative ``./file:/abs/r.json``: run from inside
    INPUT, the report lands in INPUT, which the command promises never to write into."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "a.txt").write_text("to be or not to be\n")
    monkeypatch.chdir(inbox)
    report = tmp_path / "r.json"
    args = ["wordcount", ".", "--output", str(tmp_path / "counts")]
    args += ["--report", f"file:{report}", "--local-backend", "moto"]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 0, result.output
    assert _tree(inbox) == ["a.txt"], _tree(inbox)  # nothing written into INPUT
    assert json.loads(report.read_text())["inputs"][0]["status"] == "acked"


# -- the closing lines -------------------------------------------------------------------


def test_the_closing_lines_of_a_kept_output_name_the_failed_files() -> None:
    """A run with --overwrite whose file failed keeps the former OUTPUT; its sentence ends
    with "...were not written:" and then names no failed file (the other branch does)."""
    from xor_ack_dynamodb.pipeline.progress import conclusion
    from xor_ack_dynamodb.spark.report import InputResult, TrackedReport

    report = TrackedReport(
        "run1",
        "/data/counts",
        True,
        inputs=[
            InputResult("file:/data/in/a.txt", "acked", 1, ["acked"]),
            InputResult("file:/data/in/bad.txt", "failed", 1, ["not-utf8: invalid at byte 0"]),
        ],
    )
    report.output_state = "kept"
    lines = conclusion(report)
    assert lines[0].endswith("were not written:"), lines
    assert any("file:/data/in/bad.txt" in line for line in lines), lines


def test_an_untracked_run_does_not_say_it_counted_the_files_that_failed() -> None:
    """--no-tracking with a broken link in INPUT: the link ends failed (exit 1, "1 of 2 files
    failed"), but the closing sentence says the words were counted "in 2 files"."""
    from xor_ack_dynamodb.pipeline.progress import conclusion
    from xor_ack_dynamodb.spark.report import InputResult, TrackedReport

    report = TrackedReport(
        "run1",
        "/data/counts",
        False,
        inputs=[
            InputResult("file:/data/in/a.txt", "counted", 1, []),
            InputResult("file:/data/in/gone.txt", "failed", 0, ["broken-symlink: no target"]),
        ],
        totals={"words": 5, "distinct_words": 4},
    )
    report.output_state = "complete"
    lines = conclusion(report)
    assert "in 2 files" not in lines[0], lines


# -- --watch -----------------------------------------------------------------------------


@pytest.mark.spark
def test_watch_on_the_moto_backend_counts_the_files(
    shared_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--local-backend moto`` (``auto``'s fallback without npm) writes the chains in
    transactions, as moto checks no PartiQL condition; the stream's marks ignore it
    (``create_many(via="partiql")``): moto answers 500 and every --watch fails."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.txt").write_text("ok fine ok\n")
    (inbox / "b.txt").write_text("fine\n")
    out = tmp_path / "counts"
    args = ["wordcount", str(inbox), "-o", str(out), "--watch", "--available-now"]
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # the failure, sooner (not its cause)
    result = CliRunner().invoke(pipeline_cli.main, [*args, "--local-backend", "moto"])
    assert result.exit_code == 0, result.output
    assert _batches(out) == {"ok": 2, "fine": 2}


@pytest.mark.spark
@pytest.mark.ddblocal
def test_a_file_that_fails_does_not_stop_watch(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    """A file that is not UTF-8 fails its micro-batch, and track_stream's default
    stop_on_failure=True (watch passes nothing else) stops the query; the batch is run
    again at every start, fails again, and no file that arrives later is ever counted."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "good.txt").write_text("ok fine\n")
    (inbox / "bad.txt").write_bytes(b"\xff caf\xe9 ok\n")
    out = tmp_path / "counts"
    args = ["wordcount", str(inbox), "-o", str(out), "--watch", "--available-now"]
    args += ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    first = CliRunner().invoke(pipeline_cli.main, args)
    (inbox / "late.txt").write_text("late words\n")
    again = CliRunner().invoke(pipeline_cli.main, args)
    assert _batches(out)["late"] == 1, (first.output, again.output)  # never counted


@pytest.mark.spark
@pytest.mark.ddblocal
def test_a_watch_stopped_by_an_error_says_the_error(
    shared_spark: Any,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failed query makes ``query.awaitTermination`` raise StreamingQueryException, and the
    error line is its first 300 characters: Spark's wrapper ("... An exception was raised by
    the Python Proxy. R"), never the error that stopped the batch (DynamoDBFailed's advice,
    BatchFailed's file names)."""
    from xor_ack_dynamodb.spark import job as job_module

    def stopped(self: Any) -> Any:
        raise RuntimeError("the table said no: fix the table and run again")

    monkeypatch.setattr(job_module.TrackedJob, "run", stopped)  # runs on the driver
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "good.txt").write_text("ok fine\n")
    out = tmp_path / "counts"
    args = ["wordcount", str(inbox), "-o", str(out), "--watch", "--available-now"]
    args += ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 1, result.output
    last = result.output.strip().splitlines()[-1]
    assert "the table said no" in last, last


@pytest.mark.spark
@pytest.mark.ddblocal
def test_a_colon_in_a_watched_file_name_is_refused_before_anything(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    """--watch reads INPUT with Spark's file source, which cannot read a name with ':' (the
    run mode counts it): the listing of the micro-batch stopped at it, no file at all was
    counted, at any restart, and the error said Spark's wrapper.  Refused before anything."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "good.txt").write_text("ok fine\n")
    (inbox / "10:30 notes.txt").write_text("meeting notes\n")
    out = tmp_path / "counts"
    args = ["wordcount", str(inbox), "-o", str(out), "--watch", "--available-now"]
    args += ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 2, result.output
    assert "10:30 notes.txt has a ':' in its name" in result.output, result.output
    assert not out.exists()


# -- odd inputs and outputs ---------------------------------------------------------------


def _on(endpoint: str, table: TableSpec) -> list[str]:
    return ["--endpoint-url", endpoint, "--table", table.name]


@pytest.mark.spark
@pytest.mark.ddblocal
def test_a_word_longer_than_a_csv_field_is_counted_reported_and_verified(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    """A base64 blob or a DNA sequence: one word of 200,000 characters.  Reading the
    counts back stopped at Python's CSV field limit (131,072): exit 1, no report."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "blob.txt").write_text(f"header {'a' * 200_000}\nheader\n")
    out, report = tmp_path / "counts", tmp_path / "report.json"
    args = ["wordcount", str(inbox), "-o", str(out), "--report", str(report), "--verify"]
    result = CliRunner().invoke(pipeline_cli.main, [*args, *_on(ddb_local_endpoint, ddb_table)])
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text())["totals"]["words"] == 3


@pytest.mark.spark
@pytest.mark.ddblocal
def test_an_empty_output_folder_made_before_is_used_not_swapped(
    shared_spark: Any,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A team's folder (setgid, group-writable), the working directory, given as ``-o .``:
    the commit removed it and renamed another into its place (its mode lost), then read
    the counts from the deleted working directory ("No such file or directory", exit 1)."""
    import os

    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "a.txt").write_text("to be or not to be\n")
    counts = tmp_path / "counts"
    counts.mkdir()
    counts.chmod(0o2770)
    before = os.stat(counts)
    monkeypatch.chdir(counts)
    args = ["wordcount", str(inbox), "-o", "."]
    result = CliRunner().invoke(pipeline_cli.main, [*args, *_on(ddb_local_endpoint, ddb_table)])
    assert result.exit_code == 0, result.output
    after = os.stat(counts)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert read_output(counts) == Counter({"to": 2, "be": 2, "or": 1, "not": 1})
    assert "_XOR_ACK_MANIFEST.json" in os.listdir(counts)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counts", "in"]  # no staging left


@pytest.mark.spark
@pytest.mark.ddblocal
def test_watch_resumes_past_a_batch_killed_before_its_commit(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    """A watcher killed in a micro-batch (``kill -9``, the OOM killer) leaves the batch's
    hidden staging folder in OUTPUT; the same command refused it as not written by
    --watch."""
    from xor_ack_dynamodb.spark.paths import qualified, staging_path
    from xor_ack_dynamodb.spark.stream_marks import batch_path

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.txt").write_text("ok fine ok\n")
    out = tmp_path / "counts"
    run_id = "0123456789ab"
    staged = staging_path(qualified(batch_path(str(out), 0, run_id)), run_id)
    rows = Path(staged.removeprefix("file:")) / "rows"
    rows.mkdir(parents=True)
    (rows / "part-00000.parquet").write_bytes(b"PAR1")
    args = ["wordcount", str(inbox), "-o", str(out), "--watch", "--available-now"]
    result = CliRunner().invoke(pipeline_cli.main, [*args, *_on(ddb_local_endpoint, ddb_table)])
    assert result.exit_code == 0, result.output
    assert _batches(out) == Counter({"ok": 2, "fine": 1})


def test_watch_refuses_a_name_that_is_not_utf8_and_tells_one_that_arrives(
    tmp_path: Path,
) -> None:
    """Spark's file source skips a name that is not UTF-8 without a word (its words in no
    batch, exit 0).  One there at the start is refused; one that arrives is told, once, as
    a file that failed."""
    import os

    from xor_ack_dynamodb.pipeline.watch import Watch

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "good.txt").write_text("ok fine\n")
    odd = Path(os.fsdecode(bytes(inbox) + b"/caf\xe9.txt"))
    odd.write_text("odd word\n")
    args = ["wordcount", str(inbox), "-o", str(tmp_path / "counts"), "--watch"]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 2, result.output
    assert "caf\\xe9.txt has a name that is not UTF-8" in result.output, result.output
    assert not (tmp_path / "counts").exists()
    state, said = Watch(), []
    for _ in range(2):
        state.tell_unwatchable(str(inbox), said.append)
    assert said == [f"not counted {inbox}/caf\\xe9.txt: it has a name that is not UTF-8, "
                    "which Spark's file source skips; rename it"]  # fmt: skip
    assert list(state.failed) == [f"{inbox}/caf\\xe9.txt"]
