"""A new catalog table the commit could not write is refused before the first chain.

``saveAsTable`` refuses some new tables only as it writes: every column a partition, a
format Spark has not, a column type the format cannot hold, an external folder holding
files, a name the session catalog does not take (after writing every row into a folder of
that name).  Each was found at the commit, after every input had run and acked; now
``TableTarget.check`` finds them first (a scratch table of no rows, dropped after), and
nothing is written."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import (
    DatabaseMissing,
    InvalidArgument,
    Refused,
    Sink,
    TrackerConfig,
    track,
)

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]
SCHEMA = "key string, j long"
KEYS = [f"in-{i}" for i in range(3)]


def good(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key], "j": [int(key[3:])]})


def with_list(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key], "j": [int(key[3:])], "l": pa.array([[1, 2]])})


cloudpickle.register_pickle_by_value(sys.modules[__name__])


def chains(tracker: TrackerConfig) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = tracker.client().scan(TableName=tracker.table)["Items"]
    return items


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def database(spark: Any, location: Path) -> str:
    name = f"newtable_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name} LOCATION '{location}'")
    return name


# -- a new table Spark's saveAsTable refuses: refused only at the commit ----------------


def test_a_new_table_partitioned_by_every_column_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """ALL_PARTITION_COLUMNS_NOT_ALLOWED (as a folder sink's, test_output_edges)."""
    db = database(local_spark, tmp_path / "db")
    sink = Sink(table=f"{db}.rows", partition_by=("key", "j"))
    with pytest.raises((Refused, InvalidArgument)):
        track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker)
    assert chains(tracker) == []


def test_a_new_table_in_a_format_spark_has_not_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """A typo in ``format`` (or ``delta``/``hive`` not installed): DATA_SOURCE_NOT_FOUND."""
    db = database(local_spark, tmp_path / "db")
    sink = Sink(table=f"{db}.rows", format="parqet")
    with pytest.raises((Refused, InvalidArgument)):
        track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker)
    assert chains(tracker) == []


def test_a_new_csv_table_of_a_list_column_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE, as a folder sink of CSV is refused."""
    db = database(local_spark, tmp_path / "db")
    sink = Sink(table=f"{db}.rows", format="csv")
    with pytest.raises((Refused, InvalidArgument)):
        track(
            local_spark, with_list, f"{SCHEMA}, l array<bigint>", sink, keys=KEYS, tracker=tracker
        )
    assert chains(tracker) == []


def test_a_new_external_table_at_a_folder_holding_files_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """Spark's CTAS refuses a non-empty location; the user's file is left as it is."""
    db = database(local_spark, tmp_path / "db")
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "notes.txt").write_text("the user's own file")
    before = snapshot(ext)
    sink = Sink(table=f"{db}.rows", options={"path": str(ext)})
    with pytest.raises((Refused, InvalidArgument)):
        track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker)
    assert chains(tracker) == []
    assert snapshot(ext) == before


def test_a_report_inside_a_new_external_tables_folder_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """The new table's folder is its ``path`` option (it was taken to be DB_FOLDER/name): a
    report there would make it non-empty as the first input ends, and the CTAS fail."""
    db = database(local_spark, tmp_path / "db")
    ext = tmp_path / "ext"
    ext.mkdir()
    sink = Sink(table=f"{db}.rows", options={"path": str(ext)})
    with pytest.raises(InvalidArgument, match="report"):
        track(
            local_spark,
            good,
            SCHEMA,
            sink,
            keys=KEYS,
            tracker=tracker,
            report=str(ext / "run.jsonl"),
        )
    assert chains(tracker) == []


# -- odd names: refused by Spark only at the commit ---------------------------------------


def test_a_new_table_whose_name_spark_refuses_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """``Sink`` accepts a part in backticks (``db.`daily-counts```); the session catalog
    takes only letters, digits and ``_`` (INVALID_SCHEMA_OR_RELATION_NAME), and said so only
    after ``saveAsTable`` wrote every row into ``DB_FOLDER/daily-counts``."""
    db = database(local_spark, tmp_path / "db")
    sink = Sink(table=f"{db}.`daily-counts`")
    with pytest.raises(Exception) as refused:
        track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker)
    assert tree(tmp_path) == ["db"]  # no orphan rows left beside the database's tables
    assert isinstance(refused.value, (Refused, InvalidArgument)), refused.value
    assert chains(tracker) == []


def test_a_table_in_a_namespace_the_catalog_lacks_is_a_typed_refusal(
    local_spark: Any, tracker: TrackerConfig
) -> None:
    """``catalog.db.t`` with a catalog Spark does not know (``hive_metastore.db.t`` as on
    another platform): ``DatabaseMissing``, not Spark's own AnalysisException."""
    with pytest.raises(DatabaseMissing):
        sink = Sink(table="hive_metastore.default.rows")
        track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker)
    assert chains(tracker) == []
