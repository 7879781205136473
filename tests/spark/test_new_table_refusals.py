"""A new catalog table the commit could not write is refused before the first chain.

``saveAsTable`` refuses some new tables only as it writes: every column a partition, a
format Spark has not, a column type the format cannot hold, an external folder holding
files, a name the session catalog does not take (after writing every row into a folder of
that name).  Each was found at the commit, after every input had run and acked; now
``TableTarget.check`` finds them first (a scratch table of no rows, dropped after), and
nothing is written."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import (
    DatabaseMissing,
    InvalidArgument,
    OutputExists,
    OutputUnwritable,
    Sink,
    TrackerConfig,
    track,
)

from .test_output_edges import chains, database, snapshot, tree

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


# -- a new table Spark's saveAsTable refuses: refused only at the commit ----------------


@pytest.mark.parametrize(
    ("sink", "function", "schema", "said"),
    [
        ({"partition_by": ("key", "j")}, good, SCHEMA, "ALL_PARTITION_COLUMNS_NOT_ALLOWED"),
        ({"format": "parqet"}, good, SCHEMA, "DATA_SOURCE_NOT_FOUND"),  # or delta not there
        ({"format": "csv"}, with_list, f"{SCHEMA}, l array<bigint>", "UNSUPPORTED_DATA_TYPE"),
    ],
    ids=["every-column-a-partition", "format-spark-has-not", "type-the-format-cannot-hold"],
)
def test_a_new_table_saveastable_refuses_is_refused_before_the_first_chain(
    local_spark: Any,
    tracker: TrackerConfig,
    tmp_path: Path,
    sink: dict[str, Any],
    function: Any,
    schema: str,
    said: str,
) -> None:
    """As a folder sink of the same kind is (test_output_edges); no scratch table left.  A
    run id with '.' and '-' still names one scratch table (a '.' would split its name)."""
    db = database(local_spark, tmp_path / "db")
    with pytest.raises(OutputUnwritable, match=said):
        track(local_spark, function, schema, Sink(table=f"{db}.rows", **sink), keys=KEYS,
              tracker=tracker, run_id="2026.11.30-a")  # fmt: skip
    assert chains(tracker) == []
    # (a temporary view another test left in the shared session is listed in every database)
    made = [t.name for t in local_spark.catalog.listTables(db) if not t.isTemporary]
    assert tree(tmp_path) == ["db"] and made == []


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
    with pytest.raises(OutputExists, match="holds files"):
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
    with pytest.raises(InvalidArgument, match="'daily-counts'"):
        track(local_spark, good, SCHEMA, sink, keys=KEYS, tracker=tracker)
    assert tree(tmp_path) == ["db"]  # no orphan rows left beside the database's tables
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
