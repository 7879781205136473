"""The whole job on local[2] Spark against DynamoDB Local: exact counts, faults, replay."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline.corpus import generate
from xor_ack_dynamodb.pipeline.faults import FaultConfig
from xor_ack_dynamodb.pipeline.job import WordCountOptions, run_wordcount
from xor_ack_dynamodb.pipeline.report import Report

from .conftest import expected_counts, file_counts, read_output

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    generate(root, files=24, lines=12, seed=11)
    return root


def run(spark: Any, tracker: Any, corpus: Path, out: Path, **options: Any) -> Report:
    opts = WordCountOptions(
        input=str(corpus), output=str(out / "counts"), tracker=tracker, **options
    )
    return run_wordcount(spark, opts)


def acked_counts(report: Report) -> Counter[str]:
    counts: Counter[str] = Counter()
    for f in report.files:
        if f.status == "acked":
            counts.update(file_counts(Path(f.path.removeprefix("file:"))))
    return counts


@pytest.mark.parametrize("transactions", [True, False], ids=["transactions", "single-writes"])
def test_clean_run_counts_exactly_and_acks_every_file(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path, transactions: bool
) -> None:
    report = run(spark, replace(tracker, transactions=transactions), corpus, tmp_path)
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))
    assert [f.status for f in report.files] == ["acked"] * 24
    assert all(f.attempts == 1 for f in report.files)
    totals = report.totals
    assert totals["words"] == sum(expected_counts(corpus).values())
    assert totals["rounds"] == 1
    ddb = totals["dynamodb"]
    # Writes grow with files x counting tasks, not with words: per file one create, one
    # stage-1 stamp and one stamp per counting task (plus a few lost races).
    p = report.settings["partitions"]
    assert p == 2  # local[2]: the default is Spark's default parallelism
    assert 24 * (2 + p) <= ddb["writes"] <= 24 * (2 + p) * 2
    assert ddb["records_per_write"] > 1
    if transactions:
        # Chains go 100 per request: fewer requests than files, none of them one-chain.
        assert ddb["requests"] < 24
        assert ddb["by_operation"]["TransactWriteItems"] >= 1 + p
        assert "GetItem" not in ddb["by_operation"]
    else:
        assert ddb["requests"] >= 24 * (2 + p)
        assert ddb["by_operation"]["UpdateItem"] == ddb["writes"]
    assert not (tmp_path / "counts.staging").exists()
    parsed = json.loads(report.to_json())
    assert {"path", "status", "attempts"} <= set(parsed["files"][0])
    assert {"spark", "create", "check", "output", "total"} <= set(totals["seconds"])


def test_faults_of_both_kinds_are_replayed_to_exact_counts(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path
) -> None:
    report = run(spark, tracker, corpus, tmp_path, faults=FaultConfig.rate(0.2, seed=7))
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))
    assert all(f.status == "acked" for f in report.files)
    replayed = [f for f in report.files if f.attempts > 1]
    assert replayed, "seed 7 loses records in round 1: some file must have been replayed"
    assert all(f.history[0].outcome != "acked" for f in replayed)
    assert report.totals["records_lost_to_faults"] > 0


def test_rerun_attempts_do_not_double_apply(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path
) -> None:
    # Every task's first attempt crashes, half of them after stamping; Spark re-runs them
    # all. Had a re-run XORed its stamps in again, no chain would reach zero.
    faults = FaultConfig(crash_rate=1.0, seed=1, max_attempt=1)
    report = run(spark, tracker, corpus, tmp_path, faults=faults)
    assert all(f.status == "acked" and f.attempts == 1 for f in report.files)
    assert report.totals["rounds"] == 1
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))


def test_lost_records_are_never_acked(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path
) -> None:
    # Every task attempt loses records and there is no second chance: the files hit end
    # failed, the others acked, and the output counts exactly the acked files.
    faults = FaultConfig(drop_rate=1.0, seed=3)
    report = run(spark, tracker, corpus, tmp_path, faults=faults, max_attempts=1)
    failed = [f for f in report.files if f.status == "failed"]
    assert failed and len(failed) < len(report.files)
    assert all(f.history[-1].outcome.startswith("incomplete") for f in failed)
    assert read_output(tmp_path / "counts") == dict(acked_counts(report))
    assert not report.ok


def test_a_file_that_keeps_failing_ends_failed(spark: Any, tracker: Any, tmp_path: Path) -> None:
    root = tmp_path / "in"
    generate(root, files=5, lines=5, seed=2, invalid=1)
    # Names Hadoop would read as globs or lists, an empty file, and a hidden one (skipped).
    (root / "odd").mkdir()
    (root / "odd" / "we,ird {b} [c]*?.txt").write_text("Odd name, odd NAME\n", "utf-8")
    (root / "odd" / "empty.txt").write_bytes(b"")
    (root / "odd" / "_hidden.txt").write_text("never counted\n", "utf-8")
    report = run(spark, tracker, root, tmp_path, max_attempts=2)
    assert len(report.files) == 8
    assert not any("_hidden" in f.path for f in report.files)
    bad = [f for f in report.files if "broken" in f.path]
    assert len(bad) == 1 and bad[0].status == "failed" and bad[0].attempts == 2
    assert all("decode error" in a.outcome for a in bad[0].history)
    assert all(f.status == "acked" for f in report.files if f is not bad[0])
    counts = read_output(tmp_path / "counts")
    assert counts == dict(expected_counts(root))
    assert counts["odd"] == 2 and counts["name"] == 2 and "never" not in counts
    assert report.totals["failed"] == 1


def test_no_tracking_runs_the_same_stages_without_chains(
    spark: Any, corpus: Path, tmp_path: Path
) -> None:
    opts = WordCountOptions(input=str(corpus), output=str(tmp_path / "counts"), tracking=False)
    report = run_wordcount(spark, opts)
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))
    assert all(f.status == "counted" for f in report.files)
    assert report.totals["dynamodb"]["requests"] == 0


def test_a_round_past_its_timeout_is_cancelled_and_replayed(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path
) -> None:
    report = run(spark, tracker, corpus, tmp_path, timeout=0.001, max_attempts=2)
    assert all(f.status == "failed" and f.attempts == 2 for f in report.files)
    assert all(a.outcome.startswith("timeout") for f in report.files for a in f.history)
    assert read_output(tmp_path / "counts") == {}


def _sleep(_: int) -> None:
    import time

    time.sleep(60)


def test_a_job_past_the_deadline_is_cancelled(spark: Any, tmp_path: Path) -> None:
    import time

    from xor_ack_dynamodb.pipeline.job import WordCount

    job = WordCount(
        spark, WordCountOptions(input=str(tmp_path), output=str(tmp_path / "o"), tracking=False)
    )
    start = time.monotonic()
    error, timed_out = job._run_job(
        "xor-ack-test-cancel",
        "sleeps past its deadline",
        lambda: spark.sparkContext.parallelize(range(2), 2).foreach(_sleep),
        time.monotonic() + 1.0,
        1,
        0,
    )
    assert timed_out and error is not None and error.startswith("timeout")
    assert time.monotonic() - start < 45
