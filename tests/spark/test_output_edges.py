"""The output rules at their edges ("never destroy user data; a failed run never replaces a
good result with a worse one; a refusal changes nothing"): a table overwrite whose rows fail
as they are written, a work folder inside the output or a table's folder, a partitioning or
a view Spark would refuse only at the commit, ``file://localhost/``, a database folder whose
name has a space."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import (
    InvalidArgument,
    OutputWriteFailed,
    Refused,
    Sink,
    TrackerConfig,
    track,
)
from xor_ack_dynamodb.spark.tracking import tracked_job

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]
SCHEMA = "key string, j long"
KEYS = [f"in-{i}" for i in range(4)]


def good(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key], "j": [int(key[3:])]})


def with_map(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table(
        {
            "key": [key],
            "j": [int(key[3:])],
            "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int32())),
        }
    )


def on_the_data(rows: Any) -> Any:
    """Planned, and fine on no rows: fails only as Spark writes the rows (ANSI division)."""
    from pyspark.sql import functions as F

    return rows.withColumn("j", (F.col("j") / (F.col("j") - F.col("j"))).cast("long"))


# The workers cannot import this test module: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def chains(tracker: TrackerConfig) -> list[dict[str, Any]]:
    """Every item of the run's chains table (a fresh table per test)."""
    items: list[dict[str, Any]] = tracker.client().scan(TableName=tracker.table)["Items"]
    return items


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def database(spark: Any, location: Path) -> str:
    name = f"edges_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{location}'")
    return name


# -- a table's rows are deleted by an overwrite whose write then fails ------------------


def test_a_table_overwrite_whose_write_fails_keeps_the_tables_rows(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """docs/spark.md: "an error (the output's own write failing: OutputWriteFailed) ... a
    table: not touched", and OutputWriteFailed says "a former output, or table, is as it
    was".  ``insertInto(overwrite=True)`` on a file-source table deletes the table's files
    before its write job runs: the job fails, and the table is left EMPTY."""
    table = f"{database(local_spark, tmp_path / 'db')}.rows"
    run = {"keys": KEYS, "tracker": tracker}
    assert track(local_spark, good, SCHEMA, Sink(table=table), **run).ok

    def rows() -> list[tuple[str, int]]:
        local_spark.catalog.refreshTable(table)
        return sorted((r["key"], r["j"]) for r in local_spark.table(table).collect())

    before = rows()
    assert before == [(k, int(k[3:])) for k in KEYS]
    local_spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        with pytest.raises(OutputWriteFailed, match="DIVIDE_BY_ZERO"):
            sink = Sink(table=table, overwrite=True, finish=on_the_data)
            track(local_spark, good, SCHEMA, sink, **run)
    finally:
        local_spark.conf.unset("spark.sql.ansi.enabled")
    assert rows() == before


# -- a work_dir at or inside the output folder ------------------------------------------


@pytest.mark.parametrize("former", [False, True], ids=["absent", "ours-overwrite"])
def test_a_work_dir_inside_the_output_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, former: bool
) -> None:
    """The rounds stage their rows in ``WORK_DIR/.xor-ack-RUN``: a work_dir inside the
    output writes into the user's output folder during the run, and the commit then refuses
    (``OutputExists`` "exists and is not empty" for the folder the run itself made, or
    ``OutputNotOurs``) after every chain was written; an absent output is left behind as an
    empty folder.  The word count's CLI refuses this (pipeline/paths.py); ``track`` does not."""
    out = tmp_path / "out"
    if former:
        assert track(local_spark, good, SCHEMA, Sink(str(out)), keys=KEYS, tracker=tracker).ok
    made = len(chains(tracker))
    before = snapshot(out) if former else None
    job = tracked_job(
        local_spark,
        good,
        SCHEMA,
        Sink(str(out), overwrite=former),
        keys=KEYS,
        tracker=tracker,
        work_dir=str(out / "tmp"),
    )
    with pytest.raises((Refused, InvalidArgument)):
        job.run()
    assert len(chains(tracker)) == made  # refused before the first chain
    if former:
        assert snapshot(out) == before
    else:
        assert tree(tmp_path) == []  # a refusal changes nothing


@pytest.mark.parametrize("inside", [".", "tmp"], ids=["the-location", "inside-it"])
def test_a_work_dir_in_a_tables_location_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, inside: str
) -> None:
    """The rows of a table overwrite are staged in the work folder and written to the
    table from there; Spark empties the table's folder before its write job reads them:
    a work_dir in the table's location lost the staged rows and the table's own."""
    db = database(local_spark, tmp_path / "db")
    table = f"{db}.rows"
    assert track(local_spark, good, SCHEMA, Sink(table=table), keys=KEYS, tracker=tracker).ok
    location = tmp_path / "db" / "rows"
    assert location.is_dir()
    before, made = snapshot(location), len(chains(tracker))
    with pytest.raises(InvalidArgument, match="work_dir"):
        track(
            local_spark,
            good,
            SCHEMA,
            Sink(table=table, overwrite=True),
            keys=KEYS,
            tracker=tracker,
            work_dir=location / inside,  # track's own option (a path), as the refusal says
        )
    assert len(chains(tracker)) == made  # refused before the first chain
    assert snapshot(location) == before
    assert sorted(r["j"] for r in local_spark.table(table).collect()) == [0, 1, 2, 3]


def test_track_stages_its_rows_in_the_work_dir_it_is_given(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """``work_dir`` was an option of ``tracked_job`` alone, while the refusal of a table
    whose folder holds the warehouse told ``track``'s users to give one.  The rows are
    staged there while the run lasts (its hidden folder, seen as each input ends), and
    the folder is left as it was; anything but a path is refused before any chain."""
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    seen: list[list[str]] = []
    report = track(
        local_spark,
        good,
        SCHEMA,
        Sink(str(out)),
        keys=KEYS,
        tracker=tracker,
        work_dir=str(work),
        on_event=lambda event: seen.append([p.name for p in work.iterdir()]),
    )
    assert report.ok and len(seen) == len(KEYS)
    assert all(names and names[0].startswith(".xor-ack-") for names in seen), seen
    assert list(work.iterdir()) == []
    assert sorted(r["j"] for r in local_spark.read.parquet(str(out)).collect()) == [0, 1, 2, 3]
    made = len(chains(tracker))
    with pytest.raises(InvalidArgument, match="work_dir=5: give a folder's path"):
        track(
            local_spark,
            good,
            SCHEMA,
            Sink(str(tmp_path / "o2")),
            keys=KEYS,
            tracker=tracker,
            work_dir=5,
        )  # type: ignore[arg-type]
    assert len(chains(tracker)) == made


@pytest.mark.parametrize("how", ["append", "overwrite", "new-table"])
def test_a_report_inside_a_tables_folder_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, how: str
) -> None:
    """``report=`` in the table's own folder was checked against folder sinks only: an
    append left it among the table's files (each later read of the table failed, Spark
    taking it for one), an overwrite emptied the folder, report and all, and the run
    raised a bare FileNotFoundError after the table was replaced."""
    db = database(local_spark, tmp_path / "db")
    table, location = f"{db}.rows", tmp_path / "db" / "rows"
    if how != "new-table":
        assert track(local_spark, good, SCHEMA, Sink(table=table), keys=KEYS, tracker=tracker).ok
    else:  # the folder a new table gets, made empty (the report's folder must exist)
        location.mkdir(parents=True)
    before, made = tree(tmp_path), len(chains(tracker))
    with pytest.raises(InvalidArgument, match=r"report=.* is at or inside the folder of Sink"):
        track(
            local_spark,
            good,
            SCHEMA,
            Sink(table=table, overwrite=how == "overwrite"),
            keys=KEYS,
            tracker=tracker,
            report=str(location / "run.jsonl"),
        )
    assert len(chains(tracker)) == made and tree(tmp_path) == before  # refused: no change
    if how != "new-table":
        local_spark.catalog.refreshTable(table)
        assert sorted(r["j"] for r in local_spark.table(table).collect()) == [0, 1, 2, 3]


def test_a_table_whose_folder_is_its_databases_is_overwritten_from_outside_it(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """Without a work_dir the rows are staged beside the table, in its database's folder:
    a table made with that same folder as its LOCATION had them staged inside its own, and
    the overwrite emptied it before reading them (the table left empty, its former rows and
    the new ones lost).  They are staged in the warehouse folder instead."""
    folder = tmp_path / "raw"
    db = database(local_spark, folder)
    table = f"{db}.rows"
    local_spark.sql(
        f"CREATE TABLE {table} (key string, j bigint) USING parquet LOCATION '{folder}'"
    )
    local_spark.sql(f"INSERT INTO {table} VALUES ('old', 7)")
    report = track(
        local_spark, good, SCHEMA, Sink(table=table, overwrite=True), keys=KEYS, tracker=tracker
    )
    assert report.ok
    local_spark.catalog.refreshTable(table)
    assert sorted(r["j"] for r in local_spark.table(table).collect()) == [0, 1, 2, 3]
    assert not [p for p in folder.iterdir() if p.name.startswith(".xor-ack-")]


def with_location(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key], "Location": [f"at-{key}"]})


def test_a_work_dir_in_a_tables_folder_is_refused_with_a_column_named_location(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """``DESCRIBE TABLE EXTENDED`` lists the columns first: a column named ``Location`` was
    taken for the table's folder (its type, "string"), and the work_dir was let through."""
    db = database(local_spark, tmp_path / "db")
    table, schema = f"{db}.places", "key string, Location string"
    assert track(
        local_spark, with_location, schema, Sink(table=table), keys=KEYS, tracker=tracker
    ).ok
    location = tmp_path / "db" / "places"
    before, made = snapshot(location), len(chains(tracker))
    job = tracked_job(
        local_spark,
        with_location,
        schema,
        Sink(table=table, overwrite=True),
        keys=KEYS,
        tracker=tracker,
        work_dir=str(location / "tmp"),
    )
    with pytest.raises(InvalidArgument, match="work_dir"):
        job.run()
    assert len(chains(tracker)) == made and snapshot(location) == before


def test_a_work_dir_in_a_new_tables_folder_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """A new table is made in DATABASE_FOLDER/name: rows staged there make that folder,
    and ``saveAsTable`` refuses a folder that exists, after every chain was written."""
    db = database(local_spark, tmp_path / "db")
    job = tracked_job(
        local_spark,
        good,
        SCHEMA,
        Sink(table=f"{db}.Rows"),
        keys=KEYS,
        tracker=tracker,
        work_dir=str(tmp_path / "db" / "rows" / "tmp"),
    )
    with pytest.raises(InvalidArgument, match="work_dir"):
        job.run()
    assert chains(tracker) == [] and tree(tmp_path) == ["db"]


# -- partition_by Spark refuses: refused only at the commit, after every chain ----------


@pytest.mark.parametrize(
    ("schema", "process", "partition_by"),
    [
        (SCHEMA, good, ("key", "j")),  # ALL_PARTITION_COLUMNS_NOT_ALLOWED
        (SCHEMA, good, ("j", "J")),  # COLUMN_ALREADY_EXISTS (case apart)
        (f"{SCHEMA}, m map<string,int>", with_map, ("m",)),  # INVALID_PARTITION_COLUMN_DATA_TYPE
    ],
    ids=["all-columns", "duplicate", "map-column"],
)
def test_a_partition_by_spark_refuses_is_refused_before_the_first_chain(
    local_spark: Any,
    tracker: TrackerConfig,
    tmp_path: Path,
    schema: str,
    process: Any,
    partition_by: tuple[str, ...],
) -> None:
    """docs/spark.md: "A sink Spark cannot write is refused before the first chain too".
    A Parquet sink without options is not probed (``WRITES_EVERY_COLUMN``) and
    ``check_partitions`` only checks that each column exists: Spark's own refusal comes at
    the commit, as OutputWriteFailed, after every input ran and its chain was written."""
    sink = Sink(str(tmp_path / "out"), partition_by=partition_by)
    with pytest.raises((Refused, InvalidArgument)):
        track(local_spark, process, schema, sink, keys=KEYS, tracker=tracker)
    assert chains(tracker) == []
    assert tree(tmp_path) == []


# -- a view as the table sink: refused only at the commit --------------------------------


@pytest.mark.parametrize("temporary", [False, True], ids=["view", "temp-view"])
def test_a_view_as_the_table_sink_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, temporary: bool
) -> None:
    """``TableTarget.check`` takes a view with the output's columns for a table
    (``catalog.tableExists`` is true for views): ``insertInto`` refuses it
    (EXPECT_TABLE_NOT_VIEW) at the commit, after every input ran and acked."""
    if temporary:
        name = f"review_view_{uuid.uuid4().hex[:8]}"
        local_spark.sql(f"CREATE TEMPORARY VIEW {name} AS SELECT 'x' AS key, 1L AS j")
    else:
        name = f"{database(local_spark, tmp_path / 'db')}.v"
        local_spark.sql(f"CREATE VIEW {name} AS SELECT 'x' AS key, 1L AS j")
    try:
        with pytest.raises((Refused, InvalidArgument)):
            track(local_spark, good, SCHEMA, Sink(table=name), keys=KEYS, tracker=tracker)
    finally:  # a temporary view is listed in every database of the shared session
        local_spark.sql(f"DROP VIEW IF EXISTS {name}")
    assert not local_spark.catalog.tableExists(name)
    assert chains(tracker) == []


# -- file://localhost/PATH is written under the current folder ---------------------------


def test_a_file_uri_with_localhost_names_the_folder_it_says(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``file://localhost/abs/path`` is RFC 8089's spelling of ``/abs/path`` (and Hadoop's):
    ``paths.local_path`` strips ``file://`` and makes ``localhost/abs/path`` absolute against
    the current folder, so the output lands in ``CWD/localhost/abs/path`` (over Spark
    Connect: the client's cwd sent to the server).  Either write /abs/path or refuse."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = tmp_path / "out"
    try:
        report = track(
            local_spark, good, SCHEMA, Sink(f"file://localhost{out}"), keys=KEYS, tracker=tracker
        )
    except (Refused, InvalidArgument):
        report = None
    assert tree(cwd) == []  # nothing written where the user did not say
    if report is not None:
        assert report.ok and sorted(pq.read_table(out).column("key").to_pylist()) == KEYS


# -- a database location with a space: a stray folder left beside it ---------------------


def test_a_table_in_a_database_whose_location_has_a_space_leaves_nothing_beside_it(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """``TableTarget._beside`` takes ``getDatabase().locationUri`` (``file:/.../my%20db``,
    percent-encoded) for a path: the rows are staged in a new folder literally named
    ``my%20db`` beside the database's own, which the cleanup leaves behind."""
    table = f"{database(local_spark, tmp_path / 'my db')}.rows"
    report = track(local_spark, good, SCHEMA, Sink(table=table), keys=KEYS, tracker=tracker)
    assert report.ok and local_spark.table(table).count() == len(KEYS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my db"]
