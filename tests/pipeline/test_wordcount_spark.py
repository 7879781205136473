"""The whole job on local[2] Spark against DynamoDB Local: exact counts, faults, replay.

``run_wordcount`` runs the library's word count (``xor_ack_dynamodb.spark``).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from xor_ack_dynamodb.pipeline.corpus import generate
from xor_ack_dynamodb.pipeline.job import WordCountOptions, run_wordcount
from xor_ack_dynamodb.spark import OutputWriteFailed
from xor_ack_dynamodb.spark import TrackedReport as Report
from xor_ack_dynamodb.spark.faults import FaultConfig
from xor_ack_dynamodb.spark.paths import MANIFEST

from .conftest import expected_counts, file_counts, read_output
from .test_paths import BYTES_NAME, ODD_NAMES

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
    for f in report.inputs:
        if f.status == "acked":
            counts.update(file_counts(Path(f.key.removeprefix("file:"))))
    return counts


@pytest.mark.parametrize(
    ("partiql", "transactions"),
    [(True, True), (False, True), (False, False)],
    ids=["partiql", "transactions", "single-writes"],
)
def test_clean_run_counts_exactly_and_acks_every_file(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path, partiql: bool, transactions: bool
) -> None:
    chosen = replace(tracker, partiql=partiql, transactions=transactions)
    report = run(spark, chosen, corpus, tmp_path)
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))
    assert [f.status for f in report.inputs] == ["acked"] * 24
    assert all(f.attempts == 1 for f in report.inputs)
    assert report.totals["words"] == sum(expected_counts(corpus).values())
    assert len(report.rounds) == 1
    # Per file: the create, the produce stamp and the commit check's stamp; no more.
    assert report.writes_per_input == 3
    # The staging folder (a hidden sibling of OUTPUT) is gone; OUTPUT holds our marker.
    assert [p.name for p in tmp_path.iterdir()] == ["counts"]
    assert {"_SUCCESS", MANIFEST} <= {p.name for p in (tmp_path / "counts").iterdir()}
    parsed = json.loads(report.to_json())
    assert {"key", "status", "attempts", "history"} <= set(parsed["inputs"][0])
    assert {"output", "total"} <= set(parsed["seconds"])
    assert {"create", "produce", "check"} <= set(parsed["rounds"][0]["seconds"])
    assert parsed["settings"]["max_attempts"] == 8


def test_faults_of_both_kinds_are_replayed_to_exact_counts(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path
) -> None:
    report = run(spark, tracker, corpus, tmp_path, faults=FaultConfig.rate(0.2, seed=4))
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))
    assert all(f.status == "acked" for f in report.inputs)
    replayed = [f for f in report.inputs if f.attempts > 1]
    assert replayed, "seed 4 loses rows in round 1: some file must have been replayed"
    assert all(f.history[0] != "acked" for f in replayed)
    # Some loss was silent (no task failed for it): only its chain, not zero, told.
    assert any(f.history[0].startswith("incomplete") for f in replayed)


def test_rerun_attempts_do_not_double_apply(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path
) -> None:
    # Every task's first attempt crashes, half of them after stamping; Spark re-runs them
    # all. Had a re-run XORed its stamps in again, no chain would reach zero.
    faults = FaultConfig(crash_rate=1.0, seed=1, max_attempt=1)
    report = run(spark, tracker, corpus, tmp_path, faults=faults)
    assert all(f.status == "acked" and f.attempts == 1 for f in report.inputs)
    assert len(report.rounds) == 1
    assert report.writes_per_input == 3
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))


def test_lost_records_are_never_acked(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path
) -> None:
    # Half the task attempts lose records and there is no second chance: the files hit
    # end failed, the others acked, and the output counts exactly the acked files.
    faults = FaultConfig(drop_rate=0.5, seed=3)
    report = run(spark, tracker, corpus, tmp_path, faults=faults, max_attempts=1)
    failed = [f for f in report.inputs if f.status == "failed"]
    assert failed and len(failed) < len(report.inputs)
    assert all(f.history[-1].startswith("incomplete") for f in failed)
    assert read_output(tmp_path / "counts") == dict(acked_counts(report))
    assert not report.ok


def test_every_name_counts_and_odd_files_fail_alone(
    spark: Any, tracker: Any, tmp_path: Path
) -> None:
    # Every name a POSIX file system allows, empty files, sub-folders, links, and files
    # that cannot be counted: each of those fails alone, at once, with its reason.
    root = tmp_path / "in"
    generate(root, files=3, lines=4, seed=2, invalid=1)
    (root / "odd" / "deeper").mkdir(parents=True)
    for i, name in enumerate(ODD_NAMES):
        (root / "odd" / name).write_text(f"Odd {name} word{i % 3}\n", "utf-8")
    Path(os.fsdecode(bytes(root / "odd") + b"/" + BYTES_NAME)).write_text("Bytes name\n")
    (root / "odd" / "deeper" / "empty.txt").write_bytes(b"")
    (root / "odd" / "_hidden.txt").write_text("never counted\n", "utf-8")
    (tmp_path / "outside.txt").write_text("linked words\n", "utf-8")
    (root / "odd" / "link.txt").symlink_to(tmp_path / "outside.txt")
    (root / "odd" / "dangling").symlink_to(tmp_path / "missing")
    report = run(spark, tracker, root, tmp_path / "o", max_attempts=3)
    by_name = {f.key.rsplit("/", 1)[-1]: f for f in report.inputs}
    assert not any("_hidden" in name for name in by_name)
    bad = by_name["latin1-000.txt"]
    # Not UTF-8: failed at once (one attempt, no replay), reason not-utf8.
    assert bad.status == "failed" and bad.attempts == 1
    assert bad.history[-1].startswith("not-utf8")
    dangling = by_name["dangling"]
    assert dangling.status == "failed" and dangling.attempts == 0
    assert dangling.history[-1].startswith("broken-symlink")
    acked = [f for f in report.inputs if f.status == "acked"]
    assert len(acked) == len(report.inputs) - 2
    assert all(f.attempts == 1 for f in acked)
    assert len(report.rounds) == 1
    # The independent count: every readable, UTF-8 file, line by line (links followed).
    expected = expected_counts(root)
    assert read_output(tmp_path / "o" / "counts") == dict(expected)
    assert expected["odd"] == len(ODD_NAMES) and expected["linked"] == 1
    assert len(report.failed) == 2 and not report.ok
    json.loads(report.to_json())  # valid JSON even with a name that is not UTF-8


def test_two_files_whose_names_print_alike_are_two_inputs(
    spark: Any, tracker: Any, tmp_path: Path
) -> None:
    """A name with byte 0xE9 prints as ``caf\\xe9.txt``, as does a name spelled with a
    backslash: both were one key, one file's words were lost (and the other's read)."""
    root = tmp_path / "in"
    root.mkdir()
    Path(os.fsdecode(bytes(root) + b"/caf\xe9.txt")).write_text("latin one\n", "utf-8")
    (root / "caf\\xe9.txt").write_text("spelled two\n", "utf-8")
    report = run(spark, tracker, root, tmp_path / "o")
    assert report.ok and report.acked == 2, [(i.key, i.status) for i in report.inputs]
    assert len({i.key for i in report.inputs}) == 2
    assert read_output(tmp_path / "o" / "counts") == dict(expected_counts(root))
    assert read_output(tmp_path / "o" / "counts") == {"latin": 1, "one": 1, "spelled": 1, "two": 1}


def test_a_file_failed_while_listed_makes_the_output_incomplete_like_any_failure(
    spark: Any, tracker: Any, tmp_path: Path
) -> None:
    """A broken link (failed before any round) was left out of both numbers of the
    commit: the run was "complete", so its output got ``_SUCCESS`` and replaced a
    former one with ``--overwrite``, while the file's words were missing."""
    root = tmp_path / "in"
    root.mkdir()
    (root / "a.txt").write_text("to be or not to be\n", "utf-8")
    target = tmp_path / "mounted.txt"
    (root / "b.txt").symlink_to(target)
    out = tmp_path / "o" / "counts"
    first = run(spark, tracker, root, tmp_path / "o")
    assert [f.status for f in first.inputs] == ["acked", "failed"]
    assert first.output_state == "partial" and not (out / "_SUCCESS").exists()
    assert json.loads((out / "_XOR_ACK_MANIFEST.json").read_text("utf-8"))["complete"] is False
    target.write_text("precious words\n", "utf-8")  # the link works: a complete output
    assert run(spark, tracker, root, tmp_path / "o", overwrite=True).output_state == "complete"
    good = {p.name: p.read_bytes() for p in out.iterdir()}
    target.unlink()  # broken again: the complete output stays byte-identical
    again = run(spark, tracker, root, tmp_path / "o", overwrite=True)
    assert again.output_state == "kept" and not again.ok
    assert {p.name: p.read_bytes() for p in out.iterdir()} == good


def test_a_work_dir_named_with_glob_characters_is_read_as_it_is(
    spark: Any, tracker: Any, tmp_path: Path
) -> None:
    """``--work-dir rows{1}``: the staged rows were read back by Spark as a glob, which
    matched nothing: "AnalysisException: [PATH_NOT_FOUND]", exit 1, after every chain
    was acked."""
    root = tmp_path / "in"
    generate(root, files=2, lines=3, seed=4)
    report = run(spark, tracker, root, tmp_path / "o", work_dir=str(tmp_path / "rows{1}"))
    assert report.ok
    assert read_output(tmp_path / "o" / "counts") == dict(expected_counts(root))


def test_a_finished_run_that_kept_its_staging_does_not_block_the_next_one(
    spark: Any, tracker: Any, tmp_path: Path
) -> None:
    """``--keep-staging`` kept the replaced output in ``previous`` too: the next run took
    it for one stopped mid-commit and refused, telling the user to move the OLD counts
    back over the new, complete ones."""
    root = tmp_path / "in"
    generate(root, files=2, lines=3, seed=4)
    run(spark, tracker, root, tmp_path / "o")
    kept = run(spark, tracker, root, tmp_path / "o", overwrite=True, keep_staging=True)
    assert kept.output_state == "complete"
    assert not list((tmp_path / "o").glob(".counts.xor-ack-*/previous"))
    assert list((tmp_path / "o").glob(".counts.xor-ack-*/rows"))  # what it is asked to keep
    assert run(spark, tracker, root, tmp_path / "o", overwrite=True).ok


def test_overwrite_replaces_only_our_output_and_a_failed_commit_keeps_it(
    spark: Any, tracker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xor_ack_dynamodb.pipeline.errors import OutputExists, OutputNotOurs
    from xor_ack_dynamodb.spark.files import Files

    root = tmp_path / "in"
    generate(root, files=2, lines=3, seed=4)
    out = tmp_path / "o" / "counts"
    run(spark, tracker, root, tmp_path / "o")
    first = sorted(p.name for p in out.iterdir())
    with pytest.raises(OutputExists):
        run(spark, tracker, root, tmp_path / "o")
    (root / "more.txt").write_text("More words\n", "utf-8")
    real_rename = Files.rename

    def failing(self: Files, source: str, target: str) -> None:
        if source.endswith("/output"):
            raise OSError("disk full")
        real_rename(self, source, target)

    monkeypatch.setattr(Files, "rename", failing)
    with pytest.raises(OutputWriteFailed, match="disk full") as raised:
        run(spark, tracker, root, tmp_path / "o", overwrite=True)
    assert isinstance(raised.value.__cause__, OSError)
    # The former result is back in place, whole; nothing of the failed run is left.
    assert sorted(p.name for p in out.iterdir()) == first
    assert [p.name for p in (tmp_path / "o").iterdir()] == ["counts"]
    monkeypatch.setattr(Files, "rename", real_rename)
    run(spark, tracker, root, tmp_path / "o", overwrite=True)
    assert read_output(out) == dict(expected_counts(root))
    (out / "notes.txt").write_text("the user's", "utf-8")
    with pytest.raises(OutputNotOurs):
        run(spark, tracker, root, tmp_path / "o", overwrite=True)
    assert (out / "notes.txt").read_text("utf-8") == "the user's"


def test_no_tracking_runs_the_same_stages_without_chains(
    spark: Any, corpus: Path, tmp_path: Path
) -> None:
    opts = WordCountOptions(input=str(corpus), output=str(tmp_path / "counts"), tracking=False)
    report = run_wordcount(spark, opts)
    assert read_output(tmp_path / "counts") == dict(expected_counts(corpus))
    assert all(f.status == "counted" for f in report.inputs)
    assert report.chain_writes == 0 and report.writes_per_input is None


def test_a_round_past_its_timeout_is_cancelled_and_replayed(
    spark: Any, tracker: Any, corpus: Path, tmp_path: Path
) -> None:
    report = run(spark, tracker, corpus, tmp_path, timeout=0.001, max_attempts=2)
    assert all(f.status == "failed" and f.attempts == 2 for f in report.inputs)
    assert all(a.startswith("timeout") for f in report.inputs for a in f.history)
    assert read_output(tmp_path / "counts") == {}


def _sleeping() -> Any:
    def sleep(batches: Any) -> Any:  # shipped by value: the workers cannot import this module
        import time

        time.sleep(60)
        yield from batches

    return sleep


def test_a_job_past_the_deadline_is_cancelled(spark: Any, tmp_path: Path) -> None:
    """A module-level function here was pickled by reference: its tasks failed at once on the
    workers, and the test passed while a classic session's ``interruptTag`` cancelled nothing
    (the job tag was the session's, on no job): a running round ran to its end."""
    import time

    from xor_ack_dynamodb.spark import JobSpec, RoundTimedOut, Sink, TrackedJob

    spec = JobSpec(
        process=lambda key, rows: rows,
        schema="id long",
        sink=Sink(str(tmp_path / "o")),
        keys=["a"],
        round_timeout=1.0,
    )
    job = TrackedJob(spark, spec)
    start = time.monotonic()
    sleeping = spark.range(2).repartition(2).mapInArrow(_sleeping(), "id long")
    error = job.jobs.run(lambda: sleeping.collect(), time.monotonic() + 1.0)
    assert isinstance(error, RoundTimedOut) and str(error).startswith("timeout")
    assert time.monotonic() - start < 30  # the tasks sleep 60 s
