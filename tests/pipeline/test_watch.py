"""``xor-ack wordcount --watch``: files that arrive, counted once each, also across Ctrl-C."""

from __future__ import annotations

import re
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline import cli as pipeline_cli
from xor_ack_dynamodb.pipeline.corpus import generate
from xor_ack_dynamodb.table import TableSpec

from .conftest import expected_counts, read_output
from .test_interrupt import alive, descendants, start_pipeline_cli

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]


def batches(out: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for folder in sorted(out.glob("batch=*")):
        total.update(read_output(folder))
    return total


def test_watch_counts_what_arrived_and_resumes_without_counting_twice(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    generate(inbox, files=4, lines=6, seed=3)
    out = tmp_path / "counts"
    args = ["wordcount", str(inbox), "-o", str(out), "--watch", "--available-now"]
    args += ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    args += ["--fail-rate", "0.2", "--seed", "7"]
    first = CliRunner().invoke(pipeline_cli.main, args)
    assert first.exit_code == 0, first.output
    assert "4 files acked" in first.output
    assert batches(out) == expected_counts(inbox)

    (inbox / "late.txt").write_text("Late words arrive late\n", encoding="utf-8")
    again = CliRunner().invoke(pipeline_cli.main, args)
    assert again.exit_code == 0, again.output
    # Only the new file was counted by the second run: the checkpoint remembered the rest.
    assert "1 file acked" in again.output and "acked file:" in again.output
    assert batches(out) == expected_counts(inbox)


def test_ctrl_c_stops_the_watcher_and_available_now_resumes_it(
    shared_spark: Any, ddb_local_endpoint: str, ddb_table: TableSpec, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    generate(inbox, files=3, lines=6, seed=4)
    first_three = expected_counts(inbox)
    out = tmp_path / "counts"
    args = ["wordcount", str(inbox), "-o", str(out), "--watch", "--partitions", "2"]
    args += ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    # The watcher in a subprocess of its own (its own Spark), as a user runs it.
    log = tmp_path / "watch.log"
    proc = start_pipeline_cli(args, log)
    checkpoint = out / "_checkpoint"
    try:
        deadline = time.monotonic() + 240
        # Spark's commit log records micro-batch 0 once its foreachBatch has returned.
        while not (checkpoint / "commits" / "0").exists() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        assert batches(out) == first_three, log.read_text()
        # A file arrives; Ctrl-C as soon as Spark has planned its micro-batch (offset log 1).
        (inbox / "mid.txt").write_text("Mid batch words\n", encoding="utf-8")
        while not (checkpoint / "offsets" / "1").exists() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
        tree = descendants(proc.pid)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        code = proc.wait(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:  # pragma: no cover - only if the test already failed
            proc.kill()
            proc.wait()
    err = log.read_text()
    assert code == 130, err
    assert took < 10, f"{took:.1f} s from SIGINT to exit"
    assert "Traceback" not in err and "WARN" not in err and "Exception" not in err, err
    # 3 or 4: mid.txt's chain may have been acked before its micro-batch was committed.
    assert re.fullmatch(
        rf"interrupted \(SIGINT\): [34] files acked, the completed micro-batches in "
        rf"{re.escape(str(out))}; the same command resumes from its checkpoint",
        err.strip().splitlines()[-1],
    ), err
    deadline = time.monotonic() + 15
    while any(alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in tree if alive(p)], "Spark's JVM outlived the watcher"
    # OUTPUT holds committed micro-batches only (no staging folder): mid.txt once or not yet.
    assert all(p.name == "_checkpoint" or p.name.startswith("batch=") for p in out.iterdir())
    assert batches(out) in (first_three, expected_counts(inbox))

    # Another file arrives while it is stopped; the same command, until caught up, resumes.
    (inbox / "late.txt").write_text("Late words arrive late\n", encoding="utf-8")
    again = CliRunner().invoke(pipeline_cli.main, [*args, "--available-now"])
    assert again.exit_code == 0, again.output
    assert "late.txt" in again.output and "doc-" not in again.output  # batch 0 is not redone
    assert all(p.name == "_checkpoint" or p.name.startswith("batch=") for p in out.iterdir())
    assert batches(out) == expected_counts(inbox)


def test_watch_refuses_an_output_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("the user's\n", encoding="utf-8")
    args = ["wordcount", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "--watch"]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 2 and "notes.txt" in result.output
    assert (tmp_path / "out" / "notes.txt").read_text(encoding="utf-8") == "the user's\n"
    usage = CliRunner().invoke(pipeline_cli.main, [*args[:4], "--available-now"])
    assert usage.exit_code == 2 and "--watch" in usage.output


def test_watch_refuses_a_missing_input_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xor_ack_dynamodb.pipeline import spark as spark_module
    from xor_ack_dynamodb.pipeline import watch as watch_module

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("started although INPUT is missing")

    monkeypatch.setattr(spark_module, "start_session", never)
    monkeypatch.setattr(watch_module, "_tracker", never)
    args = ["wordcount", str(tmp_path / "nope"), "-o", str(tmp_path / "out"), "--watch"]
    result = CliRunner().invoke(pipeline_cli.main, [*args, "--available-now"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"error: InputMissing: input {tmp_path / 'nope'} does not exist: create the folder "
        "--watch watches, or give another INPUT"
    )
    assert list(tmp_path.iterdir()) == []


def test_watch_runs_with_the_options_it_was_given_and_refuses_those_it_cannot_take(
    shared_spark: Any,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from xor_ack_dynamodb.pipeline import watch as watch_module

    seen: list[Any] = []
    monkeypatch.setattr(watch_module, "watch", lambda spark, options, **_: seen.append(options))
    (tmp_path / "in").mkdir()
    args = ["wordcount", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "--watch"]
    args += ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    given = ["--timeout", "7", "--single-writes", "--output-partitions", "3"]
    result = CliRunner().invoke(pipeline_cli.main, [*args, *given])
    assert result.exit_code == 0, result.output
    [options] = seen
    assert not options.tracker.partiql  # one request per chain: not 25 per PartiQL batch
    assert (options.timeout, options.tracker.transactions, options.output_partitions) == (
        7,
        False,
        3,
    )
    refused = CliRunner().invoke(pipeline_cli.main, [*args, "--keep-staging"])
    assert refused.exit_code == 2 and "--keep-staging" in refused.output, refused.output


def test_watch_refuses_an_output_under_a_file_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xor_ack_dynamodb.pipeline import watch as watch_module

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("started although OUTPUT cannot be written")

    monkeypatch.setattr(watch_module, "_tracker", never)
    (tmp_path / "in").mkdir()
    (tmp_path / "a-file").write_text("the user's\n", encoding="utf-8")
    out = tmp_path / "a-file" / "out"
    args = ["wordcount", str(tmp_path / "in"), "-o", str(out), "--watch", "--available-now"]
    result = CliRunner().invoke(pipeline_cli.main, args)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"error: FolderUnwritable: output {out} cannot be written: {tmp_path / 'a-file'} is "
        "not a folder; choose another --output"
    )
