"""Inputs as keys, tracked a page at a time: exact output, the report streamed, few requests.

A DataFrame whose key column names a few hundred inputs (no file per input), three
pages, one input rejected: every other input acked exactly once, the output exact, each ending
one JSON line of the report file (the summary last), and the driver's requests a
small fraction of the inputs: chains written 25 per request, read 100 per request.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from xor_ack_dynamodb.errors import CreateManyFailed, TagExists
from xor_ack_dynamodb.events import Acked, Failed
from xor_ack_dynamodb.spark import (
    Incurable,
    InputRejected,
    InvalidArgument,
    OutputExists,
    OutputWriteFailed,
    RunIdInUse,
    Sink,
    track,
)
from xor_ack_dynamodb.spark.chain_batches import RoundChains
from xor_ack_dynamodb.spark.plan import file_tag
from xor_ack_dynamodb.spark.tracker import TrackerConfig, chains_for

INPUTS = 240
PAGE = 100


def pass_through() -> Any:
    """An input's rows as they are, one input rejected (a closure: pickled by value)."""

    def rows_of(key: str, rows: Any) -> Any:
        if key == "input-0150":
            raise InputRejected("not this one")
        return rows

    return rows_of


def track_keys(spark: Any, source: Any, out: Path, tracker: TrackerConfig, **options: Any) -> Any:
    """``pass_through`` over ``source``'s inputs (its ``key`` column), Parquet into ``out``."""
    sink = Sink(str(out), format="parquet")
    return track(
        spark, pass_through(), "v long", sink, source=source, key="key", tracker=tracker, **options
    )


def test_pages_of_keys_every_input_once_and_the_report_one_line_per_input(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    from dataclasses import replace

    from pyspark.sql import functions as F

    source = local_spark.range(0, 4 * INPUTS, numPartitions=4).select(
        F.format_string("input-%04d", (F.col("id") / 4).cast("long")).alias("key"),
        F.col("id").alias("v"),
    )
    driver = chains_for(replace(tracker, cache_size=2 * PAGE))  # the client the run uses
    before = driver.stats.total_requests
    out, report_file = tmp_path / "out", tmp_path / "run.jsonl"
    report = track_keys(
        local_spark, source, out, tracker, partitions=2, page_size=PAGE, report=report_file
    )
    assert report.listed == INPUTS and report.acked == INPUTS - 1, report.summary()
    assert [e.key for e in report.failed] == ["input-0150"] and len(report.rounds) == 1
    values = sorted(r["v"] for r in local_spark.read.parquet(str(out)).collect())
    assert values == [v for v in range(4 * INPUTS) if v // 4 != 150]  # every row once
    lines = [json.loads(line) for line in report_file.read_text().splitlines()]
    assert sorted(line["key"] for line in lines[:-1]) == [f"input-{i:04d}" for i in range(INPUTS)]
    assert lines[-1]["summary"]["acked"] == INPUTS - 1 and not lines[-1]["summary"]["ok"]
    assert [e.key for e in report.inputs] == sorted(line["key"] for line in lines[:-1])
    # 3 pages of 100, 100, 40: creates and commit stamps 25 per request (4 + 4 + 2 each),
    # reads 100 per request (1 each): 23 requests for 240 inputs
    assert driver.stats.total_requests - before == 23


def test_rows_whose_key_is_null_are_in_no_input_and_counted_in_the_report(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """Two inputs of two rows each, and three rows without a key: left out, and said so."""
    rows = [("a", 1), ("a", 2), (None, 3), ("b", 4), (None, 5), ("b", 6), (None, 7)]
    source = local_spark.createDataFrame(rows, "key string, v long").repartition(3)
    out, report_file = tmp_path / "out", tmp_path / "run.jsonl"
    report = track_keys(local_spark, source, out, tracker, page_size=1, report=report_file)
    assert report.listed == 2 and report.ok  # the inputs are the keys: no null among them
    assert report.null_key_rows == 3
    summary = json.loads(report_file.read_text().splitlines()[-1])["summary"]
    assert summary["null_key_rows"] == 3 and summary["listed"] == 2
    assert sorted(r["v"] for r in local_spark.read.parquet(str(out)).collect()) == [1, 2, 4, 6]


def test_an_on_event_that_raises_neither_stops_the_run_nor_loses_its_output(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, caplog: pytest.LogCaptureFixture
) -> None:
    """A callback that raises (a notification service down) raised out of ``track()``
    mid-run: acked inputs, staged rows and the report were all thrown away."""
    told: list[str] = []

    def notify(event: Acked | Failed) -> None:
        told.append(event.tag)
        raise ConnectionError("notifications are down")

    source = local_spark.createDataFrame([("a", 1), ("b", 2), ("c", 3)], "key string, v long")
    out, report_file = tmp_path / "out", tmp_path / "run.jsonl"
    with caplog.at_level("ERROR", logger="xor_ack_dynamodb.spark"):
        report = track_keys(local_spark, source, out, tracker, on_event=notify, report=report_file)
    assert report.ok and report.acked == 3 and report.output_state == "complete"
    assert sorted(r["v"] for r in local_spark.read.parquet(str(out)).collect()) == [1, 2, 3]
    assert len(told) == 3 and report.event_errors == 3  # every event told, each error counted
    assert json.loads(report_file.read_text().splitlines()[-1])["summary"]["event_errors"] == 3
    logged = [r for r in caplog.records if "on_event raised" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None  # the first, with its cause
    assert "notifications are down" in caplog.text


def rows_of() -> Any:
    def rows(key: str, rows: Any) -> Any:
        import pyarrow as pa

        return pa.table({"key": [key], "n": [rows.num_rows]})

    return rows


def test_keys_beside_a_source_are_the_inputs_and_the_null_key_rows_are_not_counted(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """``keys=`` beside a source skips the listing, the one job that counts the rows of no
    input: ``null_key_rows`` said 0 for a source with such a row, and a caller checking
    ``null_key_rows == 0`` beside ``ok`` trusted it.  None now: not counted."""
    source = local_spark.createDataFrame(
        [("a", 1), ("b", 2), ("b", 3), (None, 4), ("c", 5)], "key string, v long"
    )
    out = tmp_path / "out"
    report = track(
        local_spark,
        rows_of(),
        "key string, n long",
        Sink(str(out)),
        source=source,
        key="key",
        keys=["a", "b"],
        tracker=tracker,
    )
    assert report.ok and report.null_key_rows is None
    assert report.summary()["null_key_rows"] is None
    rows = sorted((r["key"], r["n"]) for r in local_spark.read.parquet(str(out)).collect())
    assert rows == [("a", 1), ("b", 2)]


def test_a_key_column_may_have_the_name_of_the_listings_own_columns(local_spark: Any) -> None:
    """The keys are grouped and counted: a key column named ``count`` lists as any other."""
    from xor_ack_dynamodb.spark.paging import sorted_keys

    told: list[int] = []
    for name in ("count", "_xa_key", "_xa_rows"):
        rows = [("b", 1), (None, 2), ("a", 3), ("b", 4)]
        source = local_spark.createDataFrame(rows, f"{name} string, v long")
        listing, known = sorted_keys(source, name, None, told.append)
        assert (list(listing), known) == (["a", "b"], None)
    assert told == [1, 1, 1]


def one_row() -> Any:
    def row(key: str, rows: Any) -> Any:
        import pyarrow as pa

        return pa.table({"v": [len(key)]})

    return row


def test_a_refused_run_or_one_that_raised_leaves_a_former_report_file_as_it_was(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    report_file, former = tmp_path / "run.jsonl", '{"summary": {"run_id": "former"}}\n'
    report_file.write_text(former)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "user.txt").write_text("mine")
    run = {"keys": ["a", "b"], "tracker": tracker, "report": report_file}
    with pytest.raises(OutputExists):
        track(local_spark, one_row(), "v long", Sink(str(taken)), **run)
    assert report_file.read_text() == former

    def broken(rows: Any) -> Any:  # takes the check's empty frame, fails on the real rows
        if rows.limit(1).count():
            raise RuntimeError("finish failed")
        return rows

    out = tmp_path / "out"
    with pytest.raises(OutputWriteFailed, match="finish failed") as raised:  # all ended
        track(local_spark, one_row(), "v long", Sink(str(out), finish=broken), **run)
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert report_file.read_text() == former
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl", "taken"]  # no partial
    # The error's report names no file (it named run.jsonl, the former run's lines), and
    # still reads this run's endings.
    failed = raised.value.report
    assert failed.report_path is None and failed.summary()["report_path"] is None
    assert sorted(entry.key for entry in failed.endings()) == ["a", "b"]

    assert track(local_spark, one_row(), "v long", Sink(str(out)), **run).ok
    lines = [json.loads(line) for line in report_file.read_text().splitlines()]
    assert sorted(line["key"] for line in lines[:-1]) == ["a", "b"] and lines[-1]["summary"]["ok"]


@pytest.mark.parametrize("where", ["missing/run.jsonl", "."], ids=["no folder", "a folder"])
def test_a_report_file_that_cannot_be_written_is_refused_before_any_chain(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, where: str
) -> None:
    out = tmp_path / "out"
    with pytest.raises(InvalidArgument, match="report="):
        track(
            local_spark,
            one_row(),
            "v long",
            Sink(str(out)),
            keys=["a", "b"],
            tracker=tracker,
            run_id="unwritable",
            report=tmp_path / where,
        )
    assert chains_for(tracker).get_many([file_tag("unwritable", "a", 1)]) == {
        file_tag("unwritable", "a", 1): None
    }
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "option", [{"page_size": 0}, {"input_tasks": 0}, {"input_tasks": -1}], ids=str
)
def test_a_page_size_or_input_tasks_below_one_is_refused(
    local_spark: Any, option: dict[str, int]
) -> None:
    (name,) = option
    with pytest.raises(ValueError, match=name):
        track(
            local_spark,
            pass_through(),
            "v long",
            Sink("x"),
            keys=["a"],
            tracking=False,
            **option,
        )


def none_after(first_bad: str) -> Any:
    """Rows for the keys before ``first_bad``; no table for the others (a closure)."""

    def rows_of(key: str, rows: Any) -> Any:
        return None if key >= first_bad else rows

    return rows_of


def test_a_page_whose_every_input_fails_incurably_stops_the_run_after_its_first_round(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """Page 1 acks; every input of page 2 returns no table: that page's round alone is
    incurable (earlier pages' acked inputs do not hide it), so its inputs are stopped
    after one round, not replayed, and page 3 is not run.  Page 3's chains, made ahead
    and closed, are told to ``on_event`` as every closed chain is (they were not)."""
    from pyspark.sql import functions as F

    source = local_spark.range(0, 24, numPartitions=2).select(
        F.format_string("k%02d", (F.col("id") / 2).cast("long")).alias("key"),
        F.col("id").alias("v"),
    )
    events: list[Acked | Failed] = []
    report = track(
        local_spark,
        none_after("k04"),
        "v long",
        Sink(str(tmp_path / "out"), format="parquet"),
        source=source,
        key="key",
        tracker=tracker,
        page_size=4,
        on_event=events.append,
    )
    ended = {e.key: e for e in report.inputs}
    assert [k for k, e in ended.items() if e.status == "acked"] == ["k00", "k01", "k02", "k03"]
    for key in ("k04", "k05", "k06", "k07"):  # page 2: one round, then stopped
        assert ended[key].attempts == 1 and ended[key].history[-1].startswith("stopped: ")
    for key in ("k08", "k09", "k10", "k11"):  # page 3: never run
        assert ended[key].attempts == 0 and ended[key].history[-1].startswith("stopped: ")
    assert report.output_state == "partial" and len(report.rounds) == 1
    made_ahead = [file_tag(report.run_id, f"k{i:02d}", 1) for i in range(8, 12)]  # page 3's
    assert all_failed(tracker, made_ahead, "not run: the run stopped: ")
    told = {e.tag: e for e in events if isinstance(e, Failed)}
    assert set(made_ahead) <= set(told), sorted(set(made_ahead) - set(told))
    assert all(told[tag].reason.startswith("not run: the run stopped: ") for tag in made_ahead)
    assert report.chains_failed == sum(isinstance(e, Failed) for e in events) >= 8


def all_failed(tracker: TrackerConfig, tags: list[str], reason: str) -> bool:
    """Every chain of ``tags`` failed (none left live), each with a reason starting so."""
    states = tracker.chains().get_many(tags)
    return all(
        s is not None and s.failed and (s.reason or "").startswith(reason) for s in states.values()
    )


def test_a_run_that_stops_leaves_no_chain_live_neither_its_rounds_nor_those_made_ahead(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = {"keys": ["a", "b", "c", "d"], "tracker": tracker, "page_size": 2}
    written = tmp_path / "run.jsonl"
    with pytest.raises(Incurable) as stopped:  # page 1's round: page 2's chains made ahead
        sink = Sink(str(tmp_path / "o1"))
        track(local_spark, none_after("a"), "v long", sink, **run, report=written)
    run_id = stopped.value.report.run_id  # type: ignore[attr-defined]
    # The report was finished before the run stopped: the error's report names its file.
    assert stopped.value.report.report_path == str(written)  # type: ignore[attr-defined]
    assert json.loads(written.read_text().splitlines()[-1])["summary"]["run_id"] == run_id
    assert all_failed(tracker, [file_tag(run_id, k, 1) for k in "ab"], "bad output: ")
    assert all_failed(
        tracker, [file_tag(run_id, k, 1) for k in "cd"], "not run: the run stopped: Incurable: "
    )

    def lost(*args: Any) -> Any:
        raise ConnectionError("DynamoDB unreachable")

    monkeypatch.setattr(RoundChains, "commit", lost)  # page 1's round raises before judging
    with pytest.raises(ConnectionError):
        track(local_spark, one_row(), "v long", Sink(str(tmp_path / "o2")), run_id="lost", **run)
    stopped_so = "the run stopped: ConnectionError: DynamoDB unreachable"
    assert all_failed(tracker, [file_tag("lost", k, 1) for k in "ab"], "its round did not end: ")
    assert all_failed(tracker, [file_tag("lost", k, 1) for k in "cd"], f"not run: {stopped_so}")


@pytest.mark.parametrize("path", ["partiql", "transactions", "one request per chain"])
def test_a_run_whose_create_meets_a_live_chain_of_another_run_leaves_that_chain_alone(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, path: str
) -> None:
    """The run id used again while its chain of an input is live: the run stops with the
    create's refusal before the job, its own chains failed, the other run's untouched."""
    via = {
        "partiql": tracker,
        "transactions": replace(tracker, partiql=False),
        "one request per chain": replace(tracker, partiql=False, transactions=False),
    }[path]
    run_id = f"again-{path.split()[0]}"
    held = file_tag(run_id, "c", 1)
    chains = tracker.chains()
    chains.create(held, b"\x01" * 16)
    before = chains.get(held)
    out = tmp_path / "out"
    run = {"keys": ["a", "b", "c", "d"], "tracker": via, "run_id": run_id}
    with pytest.raises(RunIdInUse) as refused:
        track(local_spark, one_row(), "v long", Sink(str(out)), **run)
    assert refused.value.run_id == run_id and refused.value.tags == (held,)
    assert isinstance(refused.value.__cause__, (CreateManyFailed, TagExists))
    assert str(refused.value) == (
        f'run_id="{run_id}" is in use: live chains of another run hold "{held}". Run '
        f'"{run_id}" stopped before its job: the output was not touched, no report file '
        "was written, and that run's chains were left as they are. Give this run another "
        "run_id (or none: a new one is made each run), or let that run end first"
    )
    assert not out.exists()
    assert chains.get(held) == before  # not failed: not this run's chain
    mine = [file_tag(run_id, k, 1) for k in "abd"]
    states = chains.get_many(mine)
    assert all(s is None or s.failed for s in states.values())  # none of its own left live


def test_a_run_id_whose_rows_another_run_staged_is_refused_and_those_rows_left(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """A run killed under ``run_id`` left its staged rows; a run given the same id staged
    beside them, and its commit took their rows of the same round and ids for its own
    (the run "complete", the output holding rows of neither its inputs nor its function).
    It is refused before its first chain, and the rows are left where they are."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    left = tmp_path / ".out.xor-ack-again" / "rows" / "_xa_round=1" / "_xa_page=000002"
    left.mkdir(parents=True)
    pq.write_table(pa.table({"v": [99], "_xa_id": pa.array([0], pa.int32())}), left / "p.parquet")
    with pytest.raises(RunIdInUse) as refused:
        track(local_spark, one_row(), "v long", Sink(str(out)), keys=["a", "b"], tracker=tracker,
              run_id="again", page_size=1)  # fmt: skip
    assert refused.value.folder is not None and refused.value.folder.endswith("again/rows")
    assert "holds rows another run under it staged" in str(refused.value)
    assert not out.exists() and (left / "p.parquet").exists()
    assert tracker.chains().get_many([file_tag("again", k, 1) for k in "ab"]) == {
        file_tag("again", k, 1): None for k in "ab"
    }


def test_a_run_stopped_by_a_run_id_in_use_removes_no_rows_the_other_run_staged(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other run under the id stages its rows while this one creates its chains and
    meets that run's live chain: the stopped run removed the staging folder they share,
    the other run's rows with it.  A run removes its staging folder only once it wrote
    there itself."""
    out = tmp_path / "out"
    theirs = tmp_path / ".out.xor-ack-shared" / "rows" / "_xa_round=1" / "_xa_page=000001"
    held = file_tag("shared", "b", 1)
    tracker.chains().create(held, b"\x01" * 16)
    created = RoundChains.created

    def staged_meanwhile(self: RoundChains, key: Any, tags: Any) -> Any:
        theirs.mkdir(parents=True, exist_ok=True)  # the other run's round, as this one creates
        return created(self, key, tags)

    monkeypatch.setattr(RoundChains, "created", staged_meanwhile)
    with pytest.raises(RunIdInUse):
        track(local_spark, one_row(), "v long", Sink(str(out)), keys=["a", "b"], tracker=tracker,
              run_id="shared")  # fmt: skip
    assert theirs.is_dir() and not out.exists()


def test_keys_with_lone_surrogates_are_tracked_under_chains_of_their_own(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """A key that is no valid UTF-8 gets a chain named by its SHA-256: an escaped byte
    ("\\udc80", as os.listdir gives) did; a lone surrogate no byte escapes as ("\\ud800",
    from JSON, say) raised a bare UnicodeEncodeError naming the chain."""
    keys = ["a", "b\udc80", "c\ud800"]
    report = track(
        local_spark, one_row(), "v long", Sink(str(tmp_path / "out")), keys=keys, tracker=tracker
    )
    assert report.ok and report.acked == 3
    tags = {file_tag(report.run_id, k, 1) for k in keys}
    assert len(tags) == 3 and all("sha256:" in t for t in tags if not t.endswith("/a#1"))


def test_input_tasks_is_how_many_tasks_run_the_function(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def which_task(key: str, rows: Any) -> Any:
        from pyspark import TaskContext

        context = TaskContext.get()
        assert context is not None
        return pa.table({"key": [key], "task": pa.array([context.partitionId()], pa.int32())})

    out = tmp_path / "out"
    keys = [f"input-{n:02d}" for n in range(24)]
    report = track(
        local_spark,
        which_task,
        "key string, task int",
        Sink(str(out), format="parquet"),
        keys=keys,
        tracker=tracker,
        input_tasks=3,
    )
    assert report.ok and report.acked == len(keys)
    rows = pq.read_table(out).to_pylist()
    assert sorted(row["key"] for row in rows) == keys
    # local[2] would get 16 by default (three per core, at least 16): here the 24 inputs ran in 3.
    assert {row["task"] for row in rows} == {0, 1, 2}


def test_rows_whose_key_is_not_valid_utf8_are_in_their_input_not_lost(
    local_spark: Any, tmp_path: Path, tracker: TrackerConfig
) -> None:
    """Keys whose bytes are not UTF-8 (a Latin-1 writer's "café", 63 61 66 E9): the driver
    gets them as Python strings, U+FFFD for the bad byte, and the rows are joined on that
    same form, so they reach their input; two keys that differ only in bad bytes are one
    input.  Joined on the raw bytes, the rows matched no input, and it was acked empty."""
    from pyspark.sql import functions as F

    data = str(tmp_path / "source")
    raw = F.when(F.col("id") < 2, F.lit("636166E9")).when(F.col("id") < 3, F.lit("636166E8"))
    local_spark.range(6).select(
        F.when(F.col("id") < 3, F.unhex(raw).cast("string")).otherwise(F.lit("ok")).alias("key"),
        F.col("id").alias("v"),
    ).write.parquet(data)
    out = tmp_path / "out"
    report = track_keys(local_spark, local_spark.read.parquet(data), out, tracker, partitions=2)
    assert report.ok and report.null_key_rows == 0, report.summary()
    assert [e.key for e in report.inputs] == ["caf\ufffd", "ok"]
    values = sorted(r["v"] for r in local_spark.read.parquet(str(out)).collect())
    assert values == [0, 1, 2, 3, 4, 5]  # every row, once


def none_for_b() -> Any:
    """No rows table for input "b" only (its own data, say): that input's failure (a
    closure: pickled by value)."""

    def process(key: str, rows: Any) -> Any:
        import pyarrow as pa

        return None if key == "b" else pa.table({"key": [key]})

    return process


def test_one_inputs_empty_result_alone_in_its_replay_fails_it_alone(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """Page 1 is a, b: a acks, b returns no table.  Round 2 replays b alone, and "every input
    of the round returned no table" made the run Incurable: c and d, on the next page, were
    failed without running.  Now b fails alone, after its attempts."""
    report = track(
        local_spark,
        none_for_b(),
        "key string",
        Sink(str(tmp_path / "out")),
        keys=["a", "b", "c", "d"],
        tracker=tracker,
        page_size=2,
        max_errors=3,
    )
    ended = {entry.key: entry.status for entry in report.inputs}
    assert ended == {"a": "acked", "b": "failed", "c": "acked", "d": "acked"}
    (b,) = [entry for entry in report.inputs if entry.key == "b"]
    assert all(said.startswith("bad output") for said in b.history), b.history
