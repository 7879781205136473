"""A refusal changes nothing: a sink, schema, key or option the run cannot use is a typed
error (a ``Refused``, or an ``InvalidArgument``) before the first chain is written, never a
raw Spark exception after every input ran (classic ``local[2]``)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import (
    DatabaseMissing,
    FinishFailed,
    KeyColumnMissing,
    OutputUnwritable,
    PartitionColumnMissing,
    SchemaInvalid,
    Sink,
    TableColumnsDiffer,
    TrackerConfig,
    output,
    track,
)

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]
SCHEMA = "key string, j long"
KEYS = ["a", "b", "c"]


def good(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key], "j": [len(key)]})


# The workers cannot import this test module (pytest names it from the tests folder):
# its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def chains(tracker: TrackerConfig) -> list[dict[str, Any]]:
    """Every item of the run's chains table (a fresh table per test)."""
    items: list[dict[str, Any]] = tracker.client().scan(TableName=tracker.table)["Items"]
    return items


def database(spark: Any, tmp_path: Path) -> str:
    name = f"refused_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path / 'db'}'")
    return name


def test_a_table_in_a_database_the_catalog_lacks_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig
) -> None:
    sink = Sink(table="no_such_db_x.t")
    with pytest.raises(DatabaseMissing, match=r"CREATE DATABASE no_such_db_x"):
        track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker)
    assert chains(tracker) == []


def test_an_existing_table_with_other_columns_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    db = database(local_spark, tmp_path)
    local_spark.sql(f"CREATE TABLE {db}.t (a int, b int) USING parquet")
    with pytest.raises(TableColumnsDiffer, match=r"the columns a, b, the output key, j"):
        track(local_spark, good, SCHEMA, Sink(table=f"{db}.t"), keys=KEYS, tracker=tracker)
    assert chains(tracker) == []
    assert local_spark.table(f"{db}.t").count() == 0


def test_an_existing_table_whose_types_cannot_take_the_output_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """Only the names were compared: every input ran and acked (its ``Acked`` event sent),
    then ``insertInto`` refused BIGINT into DATE, with a raw AnalysisException."""
    db = database(local_spark, tmp_path)
    local_spark.sql(f"CREATE TABLE {db}.t (key string, j date) USING parquet")
    events: list[Any] = []
    with pytest.raises(TableColumnsDiffer, match=r"column types cannot take .*j date <- bigint"):
        track(
            local_spark,
            good,
            SCHEMA,
            Sink(table=f"{db}.t"),
            keys=KEYS,
            tracker=tracker,
            on_event=events.append,
        )
    assert chains(tracker) == [] and events == []
    assert local_spark.table(f"{db}.t").count() == 0
    # a wider column takes the values unchanged: int into bigint, string into varchar
    local_spark.sql(f"CREATE TABLE {db}.wide (key varchar(8), j decimal(30,2)) USING parquet")
    assert track(local_spark, good, SCHEMA, Sink(table=f"{db}.wide"), keys=KEYS, tracker=tracker).ok
    assert local_spark.table(f"{db}.wide").count() == len(KEYS)


def test_an_existing_table_takes_the_output_of_finish_in_its_own_column_order(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    db = database(local_spark, tmp_path)
    local_spark.sql(f"CREATE TABLE {db}.t (N long, Word string) USING parquet")

    def renamed(rows: Any) -> Any:
        return rows.withColumnRenamed("key", "word").withColumnRenamed("j", "n")

    sink = Sink(table=f"{db}.t", finish=renamed)
    assert track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker).ok
    assert sorted(tuple(r) for r in local_spark.table(f"{db}.t").collect()) == [
        (1, "a"),
        (1, "b"),
        (1, "c"),
    ]


def test_a_finish_that_fails_on_the_declared_columns_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    def missing(rows: Any) -> Any:
        return rows.select("word")

    sink = Sink(str(tmp_path / "out"), finish=missing)
    with pytest.raises(FinishFailed, match=r"AnalysisException: .*`word`") as refused:
        track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker)
    assert refused.value.__cause__ is not None
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("sink", "refusal", "said"),
    [
        ({"format": "parqet"}, OutputUnwritable, r"DATA_SOURCE_NOT_FOUND.*parqet"),
        ({"format": "csv", "options": {"compression": "zzz"}}, OutputUnwritable, "zzz"),
        ({"partition_by": ("nope",)}, PartitionColumnMissing, r"no column nope"),
    ],
    ids=["format", "options", "partition_by"],
)
def test_a_folder_sink_spark_cannot_write_is_refused_before_the_first_chain(
    local_spark: Any,
    tracker: TrackerConfig,
    tmp_path: Path,
    sink: dict[str, Any],
    refusal: type[Exception],
    said: str,
) -> None:
    with pytest.raises(refusal, match=said):
        track(
            local_spark,
            good,
            SCHEMA,
            Sink(str(tmp_path / "out"), **sink),
            keys=KEYS,
            tracker=tracker,
        )
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_parquet_sink_without_options_is_not_probed(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default sink pays no probe job: Spark writes Parquet for any declared column."""
    written: list[str] = []
    real = output.write

    def counting(rows: Any, sink: Sink, staged: str) -> None:
        written.append(staged)
        real(rows, sink, staged)

    monkeypatch.setattr(output, "write", counting)
    sink = Sink(str(tmp_path / "out"))
    assert track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker).ok
    assert not any(staged.endswith("-check") for staged in written)
    assert written  # the commit's own write went through it
    written.clear()
    sink = Sink(str(tmp_path / "csv"), format="csv")
    assert track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker).ok
    assert sum(staged.endswith("-check") for staged in written) == 1  # CSV is probed


def test_a_folder_sink_whose_folder_cannot_be_written_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """A Parquet sink is not probed with a Spark job: a folder that refuses writes failed
    every round (Mkdirs failed), the run burnt its replays and ended in a raw Py4J error."""
    locked = tmp_path / "locked"
    locked.mkdir()
    if subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (root on a file system that has it)")
    try:
        with pytest.raises(OutputUnwritable, match=r"cannot be written .*before the first chain"):
            track(local_spark, good, SCHEMA, Sink(str(locked / "out")), keys=KEYS, tracker=tracker)
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)
    assert chains(tracker) == [] and list(locked.iterdir()) == []


def test_a_folder_sink_that_spark_can_write_leaves_nothing_beside_the_output(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    sink = Sink(str(tmp_path / "out"), format="csv", partition_by=("J",))
    assert track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker).ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["J=1"]


def test_a_probe_left_by_a_run_stopped_mid_check_does_not_refuse_the_next(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """The folder's write probe is made under the run's own scratch name: one left there
    (the run killed between its write and its removal) is the run's, not a refusal."""
    (tmp_path / ".out.xor-ack-again-check").mkdir()
    sink = Sink(str(tmp_path / "nested" / "out"))  # its folder made by the run
    (tmp_path / ".out.xor-ack-again-check" / "x").write_text("")
    assert track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker, run_id="again").ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nested"]


@pytest.mark.parametrize(
    "schema",
    [
        "key strin, j long",
        "key string j long",
        "",
        # read by Spark, but a raw Py4J internal error / PySparkTypeError (no Arrow type)
        "key string, c char(3)",
        "key string, x interval year to month",
    ],
)
def test_a_schema_spark_does_not_read_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, schema: str
) -> None:
    with pytest.raises(SchemaInvalid, match="declare") as refused:
        track(local_spark, good, schema, Sink(str(tmp_path / "out")), keys=KEYS, tracker=tracker)
    assert schema == "" or refused.value.__cause__ is not None
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("key", ["file", "NAME"])
def test_a_key_the_source_lacks_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, key: str
) -> None:
    frame = local_spark.createDataFrame([("a", 1)], "name string, v int")
    with pytest.raises(KeyColumnMissing, match=rf"key='{key}' .* \(its columns: name, v\)"):
        track(
            local_spark,
            good,
            SCHEMA,
            Sink(str(tmp_path / "out")),
            source=frame,
            key=key,
            tracker=tracker,
        )
    assert chains(tracker) == [] and sorted(p.name for p in tmp_path.iterdir()) == []
