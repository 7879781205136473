"""``xor-ack wordcount`` / ``wordcount-sample`` from the command line."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline import cli as pipeline_cli
from xor_ack_dynamodb.table import TableSpec

from .conftest import expected_counts, read_output


def test_sample_writes_a_corpus(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        pipeline_cli.main, ["wordcount-sample", str(tmp_path / "c"), "--files", "3", "--seed", "4"]
    )
    assert result.exit_code == 0, result.output
    assert "3 files" in result.output
    assert len(list((tmp_path / "c").rglob("*.txt"))) == 3


def test_an_empty_sample_is_written_with_its_marker(tmp_path: Path) -> None:
    from xor_ack_dynamodb.pipeline.corpus import SAMPLE_MARKER

    args = ["wordcount-sample", str(tmp_path / "c0"), "--files", "0"]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 0, result.output
    assert [p.name for p in (tmp_path / "c0").iterdir()] == [SAMPLE_MARKER]
    again = CliRunner().invoke(pipeline_cli.main, args)
    assert again.exit_code == 0, again.output  # the same sample: used as it is


def test_a_sample_folder_that_cannot_be_created_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("the user's\n")
    target = tmp_path / "a-file" / "c"
    result = CliRunner().invoke(pipeline_cli.main, ["wordcount-sample", str(target)])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"error: SampleUnwritable: {target} cannot be created (Not a directory): choose "
        "another DIRECTORY (nothing was written)"
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]
    assert (tmp_path / "a-file").read_text() == "the user's\n"


def test_a_sample_line_too_long_to_make_is_a_usage_error(tmp_path: Path) -> None:
    """--words-per-line 10**20 passed and reached random.choices: "unexpected
    OverflowError ... (a bug: please report it)", exit 1."""
    target = tmp_path / "c"
    args = ["wordcount-sample", str(target), "--words-per-line", str(10**20)]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 2, result.output
    assert "--words-per-line" in result.output and "a bug" not in result.output
    assert not target.exists()


def test_a_sample_cut_short_by_the_disk_is_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    from xor_ack_dynamodb.pipeline import sample_command

    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sample_command, "generate", full)
    result = CliRunner().invoke(pipeline_cli.main, ["wordcount-sample", str(tmp_path / "c")])
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == [
        f"error: writing the sample under {tmp_path / 'c'} failed (No space left on device): "
        "make room, or choose another DIRECTORY"
    ]


def one_file(tmp_path: Path) -> str:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("a b\n")
    return str(tmp_path / "in")


@pytest.mark.ddblocal
def test_missing_table_is_one_line_and_exit_1(ddb_local_endpoint: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        pipeline_cli.main,
        [
            "wordcount",
            one_file(tmp_path),
            "--output",
            str(tmp_path / "o"),
            "--endpoint-url",
            ddb_local_endpoint,
            "--table",
            "no-such-table",
        ],
    )
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "no-such-table" in lines[0] and "table create" in lines[0]


def _full_scan(client: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**request)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return sorted(items, key=repr)
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


@pytest.mark.ddblocal
@pytest.mark.parametrize("mode", [[], ["--watch", "--available-now"]], ids=["run", "watch"])
def test_a_users_table_keyed_like_chains_is_refused_with_nothing_written_to_it(
    ddb_local_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    """Its key is the chains' (tagID, a string), its items are not chains: not a chains table."""
    import uuid

    import boto3

    from xor_ack_dynamodb.pipeline import spark as spark_module

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("Spark must not start for a refused table")

    monkeypatch.setattr(spark_module, "start_session", refuse)
    client = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    name = f"users-{uuid.uuid4().hex[:10]}"
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "tagID", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "tagID", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        client.put_item(TableName=name, Item={"tagID": {"S": "ada"}, "email": {"S": "a@b.c"}})
        before = _full_scan(client, name)
        result = CliRunner().invoke(
            pipeline_cli.main,
            [
                "wordcount",
                one_file(tmp_path),
                "--output",
                str(tmp_path / "o"),
                *mode,
                "--endpoint-url",
                ddb_local_endpoint,
                "--table",
                name,
            ],
        )
        assert result.exit_code == 1, result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert lines[-1].startswith(
            f"error: NotAChainsTable: table {name} does not look like a chains table (no "
            "inventory index, and items that are not chains (no binary stamp and number "
            "version) nor a fleet's markers); nothing was written to it: give --table"
        ), lines
        assert "Spark" not in result.output and "Traceback" not in result.output
        assert _full_scan(client, name) == before
        assert not (tmp_path / "o").exists()
    finally:
        client.delete_table(TableName=name)


def test_a_dynamodb_not_running_is_one_line_within_seconds(tmp_path: Path) -> None:
    endpoint = "http://127.0.0.1:9"  # nothing listens: refused at once
    args = ["wordcount", one_file(tmp_path), "--output", str(tmp_path / "o")]
    started = time.monotonic()
    result = CliRunner().invoke(
        pipeline_cli.main, [*args, "--endpoint-url", endpoint, "--table", "any-table"]
    )
    waited = time.monotonic() - started
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: Could not connect"), lines
    assert "is it running?" in lines[0]
    assert not (tmp_path / "o").exists()
    assert waited < 30, waited  # with the clients' ten retries: about 80 s


@pytest.mark.spark
@pytest.mark.ddblocal
def test_wordcount_against_a_given_table(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    runner = CliRunner()
    corpus = tmp_path / "corpus"
    runner.invoke(
        pipeline_cli.main, ["wordcount-sample", str(corpus), "--files", "6", "--lines", "5"]
    )
    args = [
        "wordcount",
        str(corpus),
        "--output",
        str(tmp_path / "counts"),
        "--report",
        str(tmp_path / "report.json"),
        "--endpoint-url",
        ddb_local_endpoint,
        "--table",
        ddb_table.name,
        "--fail-rate",
        "0.2",
        "--seed",
        "5",
    ]
    result = runner.invoke(pipeline_cli.main, args)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert [f["status"] for f in report["inputs"]] == ["acked"] * 6
    # seed 5 loses rows of one file in round 1: it is replayed once, in a second round
    assert [f["attempts"] for f in report["inputs"]].count(2) == 1, report["inputs"]
    assert report["chain_writes"] >= 6 * 3
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))
    assert "All 6 files acked" in result.output and "1 files" not in result.output
    assert "Injected faults (" in result.output and "1 file was replayed" in result.output

    # The same command again: OUTPUT exists, refused (exit 2) and left as it was; with
    # --overwrite it replaces the folder (and report) it wrote, and only those.
    before = sorted((tmp_path / "counts").iterdir())
    again = runner.invoke(pipeline_cli.main, args)
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert sorted((tmp_path / "counts").iterdir()) == before
    replaced = runner.invoke(pipeline_cli.main, [*args, "--overwrite"])
    assert replaced.exit_code == 0, replaced.output
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))
    rerun = json.loads((tmp_path / "report.json").read_text())
    assert rerun["run_id"] != report["run_id"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "counts", "report.json"]


@pytest.mark.spark
def test_wordcount_on_a_moto_it_starts_itself_acks_every_file(
    shared_spark: Any, tmp_path: Path
) -> None:
    """``--local-backend moto`` (what ``auto`` falls back to without npm): moto answers the
    PartiQL statements the chains are written with by default with a 500, so the run
    retried round 1's creates for minutes and stopped with DynamoDBFailed.  Its chains are
    written in transactions there."""
    runner = CliRunner()
    corpus = tmp_path / "corpus"
    runner.invoke(
        pipeline_cli.main, ["wordcount-sample", str(corpus), "--files", "4", "--lines", "3"]
    )
    out = tmp_path / "counts"
    args = ["wordcount", str(corpus), "--output", str(out), "--local-backend", "moto"]
    result = runner.invoke(pipeline_cli.main, [*args, "--report", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    assert "local DynamoDB (moto)" in result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert [f["status"] for f in report["inputs"]] == ["acked"] * 4
    assert read_output(out) == dict(expected_counts(corpus))


@pytest.mark.spark
@pytest.mark.ddblocal
def test_an_output_kept_because_a_file_failed_is_not_told_as_this_runs_counts(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    runner = CliRunner()
    counts, report = tmp_path / "counts", tmp_path / "report.json"
    args = ["wordcount", one_file(tmp_path), "--output", str(counts), "--report", str(report)]
    args += ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name, "--overwrite"]
    first = runner.invoke(pipeline_cli.main, args)
    assert first.exit_code == 0, first.output
    before = {p.name: p.read_bytes() for p in counts.iterdir()}
    (tmp_path / "in" / "new.txt").write_text("brand new words\n")
    (tmp_path / "in" / "bad.txt").write_bytes(b"\xff not utf-8\n")
    again = runner.invoke(pipeline_cli.main, [*args, "--verify"])
    assert again.exit_code == 1, again.output
    assert {p.name: p.read_bytes() for p in counts.iterdir()} == before
    lines = again.output.splitlines()
    assert lines[-1] == "error: 1 of 3 files failed (see the report)", again.output
    assert (
        f"2 of 3 files acked and 1 failed: {counts} was kept as it was (--overwrite replaces "
        "it only when every file was acked), so this run's counts were not written:" in lines
    ), again.output
    assert f"Not verified: {counts} holds the former counts, kept: this run wrote none." in lines
    assert "exactly once" not in again.output and "Verification FAILED" not in again.output
    written = json.loads(report.read_text())
    assert written["output_state"] == "kept"
    assert "words" not in written["totals"], written["totals"]


@pytest.mark.spark
@pytest.mark.ddblocal
def test_ctrl_c_during_verify_ends_as_an_interruption_not_an_abort(
    shared_spark: Any,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from xor_ack_dynamodb.pipeline import interruption, verify

    def interrupted(*args: Any) -> Any:
        raise interruption.Interrupted("SIGINT")

    monkeypatch.setattr(verify, "verify", interrupted)
    monkeypatch.setattr(interruption, "exit_now", sys.exit)  # not os._exit: pytest runs here
    args = ["wordcount", one_file(tmp_path), "--output", str(tmp_path / "o"), "--verify"]
    args += ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 130, result.output
    assert result.output.splitlines()[-1] == (
        "interrupted (SIGINT): 1 of 1 file acked, 0 not finished; the counts had been "
        f"written to {tmp_path / 'o'}; re-run the same command"
    )


def test_a_file_put_at_the_report_path_during_the_run_is_not_replaced(
    shared_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report path was checked before the run only: a file someone put there while
    the run went on was replaced by the report, without --overwrite."""
    from xor_ack_dynamodb.pipeline import verify

    report = tmp_path / "report.json"
    real = verify.verify

    def while_running(*args: Any) -> Any:  # the last step before the report is written
        report.write_text("someone's notes\n", "utf-8")
        return real(*args)

    monkeypatch.setattr(verify, "verify", while_running)
    args = ["wordcount", one_file(tmp_path), "--output", str(tmp_path / "o"), "--verify"]
    result = CliRunner().invoke(
        pipeline_cli.main, [*args, "--report", str(report), "--no-tracking"]
    )
    assert result.exit_code == 1, result.output
    assert report.read_text("utf-8") == "someone's notes\n"
    assert result.output.splitlines()[-1].startswith(
        f"error: the report was not written: report {report} exists"
    )
    assert read_output(tmp_path / "o")  # the counts were written all the same


@pytest.mark.ddblocal
def test_root_group_options_reach_the_command(ddb_local_endpoint: str, tmp_path: Path) -> None:
    from xor_ack_dynamodb.cli import cli as root

    result = CliRunner().invoke(
        root,
        [
            "--endpoint-url",
            ddb_local_endpoint,
            "--table",
            "absent-table",
            "wordcount",
            one_file(tmp_path),
            "--output",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 1
    assert "absent-table" in result.output and result.output.startswith("error: ")


def test_a_runtime_error_is_one_line_and_exit_1(
    shared_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xor_ack_dynamodb.pipeline import job as job_module

    def boom(self: Any) -> Any:
        raise RuntimeError("An error occurred while calling o42.csv.\n: java.io.IOException")

    monkeypatch.setattr(job_module.WordCount, "run", boom)
    args = ["wordcount", one_file(tmp_path), "-o", str(tmp_path / "o"), "--no-tracking"]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    last = result.output.strip().splitlines()[-1]
    assert last == (
        "error: RuntimeError: java.io.IOException (run again with --verbose to see Spark's own "
        "output)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


class JvmError(Exception):
    """As PySpark's captured errors: the text is asked of the JVM, which must still run."""

    jvm_running = True

    def __str__(self) -> str:
        assert JvmError.jvm_running, "SparkContext._jvm is None"
        return "[PATH_NOT_FOUND] Path does not exist: hdfs://127.0.0.1:1/x.\n\tat java.lang"


def test_a_spark_error_is_said_before_the_session_stops_not_called_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xor_ack_dynamodb.cli import cli as root
    from xor_ack_dynamodb.pipeline import job as job_module
    from xor_ack_dynamodb.pipeline import spark as spark_module

    def run(self: Any) -> Any:
        raise JvmError()

    def stop(spark: Any) -> None:
        monkeypatch.setattr(JvmError, "jvm_running", False)

    monkeypatch.setattr(spark_module, "start_session", lambda *a, **k: object())
    monkeypatch.setattr(spark_module, "stop_session", stop)
    monkeypatch.setattr(job_module.WordCount, "run", run)
    args = ["wordcount", one_file(tmp_path), "-o", str(tmp_path / "o"), "--no-tracking"]
    result = CliRunner().invoke(root, args)
    assert result.exit_code == 1, result.output
    assert not JvmError.jvm_running  # the session did stop
    assert result.output.strip().splitlines()[-1] == (
        "error: JvmError: [PATH_NOT_FOUND] Path does not exist: hdfs://127.0.0.1:1/x. "
        "(run again with --verbose to see Spark's own output)"
    )


def test_an_untracked_runs_failure_is_said_with_the_commands_option() -> None:
    """`wordcount --no-tracking` whose file fails: the library says `tracking=False`, an
    argument the command's user never wrote."""
    from xor_ack_dynamodb.pipeline.interruption import _as_user_error
    from xor_ack_dynamodb.spark import UntrackedRunFailed

    said = _as_user_error(UntrackedRunFailed("rejected: not-utf8 (input b.txt)"), False)
    assert said.exit_code == 1
    line = said.format_message()
    assert "(--no-tracking)" in line and "tracking=False" not in line, line
    assert line.startswith("UntrackedRunFailed: ") and "input b.txt" in line, line


def test_an_error_that_cannot_say_its_text_is_named_by_its_type() -> None:
    from xor_ack_dynamodb.spark.output import said

    class Mute(Exception):
        def __str__(self) -> str:
            raise ConnectionRefusedError(111, "Connection refused")

    assert said(Mute()) == "Mute"


def test_the_module_entry_point_says_every_error_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m xor_ack_dynamodb.pipeline`` ends as ``xor-ack`` does: no usage block, no
    traceback, a user's error as such."""
    import subprocess
    import sys

    from botocore.exceptions import EndpointConnectionError

    from xor_ack_dynamodb.pipeline import sample_command

    usage = subprocess.run(
        [sys.executable, "-m", "xor_ack_dynamodb.pipeline", "wordcount-sample"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert usage.returncode == 2, usage.stderr
    assert usage.stderr.splitlines() == [
        "error: Missing argument 'DIRECTORY'. (see 'xor-ack-pipeline wordcount-sample --help')"
    ]

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9")

    monkeypatch.setattr(sample_command, "generate", unreachable)
    result = CliRunner().invoke(pipeline_cli.main, ["wordcount-sample", str(tmp_path / "c")])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: Could not connect to the endpoint URL")
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1


def test_the_closing_sentences_say_what_was_proved() -> None:
    from xor_ack_dynamodb.pipeline.progress import conclusion, plural
    from xor_ack_dynamodb.spark import InputResult, RoundSummary, TrackedReport

    assert [plural(1, "file"), plural(2, "file"), plural(1000, "file")] == [
        "1 file",
        "2 files",
        "1,000 files",
    ]
    report = TrackedReport("r", "out", True, settings={"crash_rate": 0.2, "drop_rate": 0.2})
    report.settings["seed"] = 7
    report.inputs = [
        InputResult("file:/in/a.txt", "acked", 2, ["incomplete", "acked"]),
        InputResult("file:/in/b.txt", "failed", 1, ["not-utf8: invalid start byte"]),
    ]
    report.rounds = [RoundSummary(1, 2, replayed=1), RoundSummary(2, 1)]
    report.chains_failed = 2  # a's first attempt, b's only one
    report.totals = {"words": 1, "distinct_words": 1}
    assert conclusion(report) == [
        "1 of 2 files acked (their words reached the counts exactly once: 1 word, 1 distinct);"
        " 1 failed and is not in the counts:",
        "  file:/in/b.txt: not-utf8: invalid start byte",
        "Injected faults (task attempts crash at rate 0.2 and silently lose records at rate "
        "0.2, seed 7): Spark re-ran the crashed attempts and the chains caught every loss: "
        "1 file was replayed (2 rounds).",
        "2 chains ended failed, one per attempt that did not ack (a replay runs under a new"
        " chain): a dashboard of the table counts them.",
    ]


def test_the_closing_lines_count_the_failed_chains_not_the_replays() -> None:
    """A replayed attempt whose chain acked after its round ("completed after its round
    ended") or was gone ("chain missing") ended no chain failed: counted from the rounds'
    replays, the line said two failed chains where a dashboard shows none."""
    from xor_ack_dynamodb.pipeline.progress import conclusion
    from xor_ack_dynamodb.spark import InputResult, RoundSummary, TrackedReport

    inputs = [
        InputResult("a", "acked", 2, ["completed after its round ended (not counted)", "acked"]),
        InputResult("b", "acked", 2, ["chain missing", "acked"]),
    ]
    rounds = [RoundSummary(1, 2, replayed=2), RoundSummary(2, 2, acked=2)]
    report = TrackedReport("run", "out", True, inputs=inputs, rounds=rounds)
    assert not [line for line in conclusion(report) if "ended failed" in line]


def test_an_untracked_run_says_what_verify_found_not_that_nothing_was_verified() -> None:
    from xor_ack_dynamodb.pipeline.progress import conclusion
    from xor_ack_dynamodb.pipeline.verify import Verification
    from xor_ack_dynamodb.spark import InputResult, TrackedReport

    report = TrackedReport("r", "out", False)
    report.inputs = [InputResult("file:/in/a.txt", "counted", 1, ["counted"])]
    report.totals = {"words": 2, "distinct_words": 2}
    check = Verification(ok=True, checked=True, files=1, words=2, distinct=2)
    assert conclusion(report, check) == [
        "Counted 2 words, 2 distinct in 1 file without tracking (--no-tracking): no chain "
        "verified it.",
        "Verified: 1 finished file counted again in plain Python, without Spark or chains, "
        "give exactly the counts in the output (2 words, 2 distinct).",
    ]
    assert conclusion(report)[0].endswith("(--no-tracking): nothing was verified.")


def test_the_summarys_total_says_spark_s_start_is_not_in_it() -> None:
    """The table's "seconds: total" (from track()'s start) was read against the timeline,
    which counts Spark's start too: the two disagreed by Spark's start-up."""
    from rich.console import Console

    from xor_ack_dynamodb.pipeline.progress import summary_table
    from xor_ack_dynamodb.spark import TrackedReport

    report = TrackedReport("r", "out", True, seconds={"output": 1.5, "total": 22.4})
    console = Console(width=100, record=True)
    console.print(summary_table(report))
    text = console.export_text()
    assert "seconds: total, after Spark started" in text and "22.40" in text
    assert "seconds: output" in text
