"""``track()`` as users run it, at its edges: a schema given as a struct type, a source
column with a dot or two columns of one name (refused before the first chain), a table
overwrite whose strings a ``varchar(n)`` column cannot take (the table keeps its rows), a
new table whose folder holds files (refused), a chain past its deadline (replayed), an
``InputRejected`` whose message reads as the library's own reasons (not replayed)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import Sink, TrackerConfig, track

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]


def echo(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key], "n": [len(key)]})


cloudpickle.register_pickle_by_value(sys.modules[__name__])


def chains(tracker: TrackerConfig) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = tracker.client().scan(TableName=tracker.table)["Items"]
    return items


def test_a_schema_given_as_a_struct_type_is_refused_before_any_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """``StructType.simpleString()`` ("struct<key:string,n:bigint>") is a schema Spark
    reads; the rounds append their columns to it as text, and every round failed after
    its chains (an empty partial output committed)."""
    from xor_ack_dynamodb.spark.errors import SchemaInvalid

    out = tmp_path / "out"
    schema = "struct<key:string,n:bigint>"
    with pytest.raises(SchemaInvalid, match="StructType itself"):
        track(
            local_spark,
            echo,
            schema,
            Sink(str(out)),
            keys=["a", "bb"],
            tracker=tracker,
            max_attempts=2,
        )
    assert chains(tracker) == [] and not out.exists()


def test_a_struct_type_schema_runs_as_its_ddl(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """A ``StructType`` (what ``mapInPandas`` takes) was refused as "not a string"; an
    empty one declares no column."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from xor_ack_dynamodb.spark.errors import SchemaInvalid

    out = tmp_path / "out"
    with pytest.raises(SchemaInvalid, match="no column"):
        track(local_spark, echo, StructType([]), Sink(str(out)), keys=["a"], tracker=tracker)
    assert chains(tracker) == [] and not out.exists()
    schema = StructType([StructField("key", StringType()), StructField("n", LongType())])
    report = track(local_spark, echo, schema, Sink(str(out)), keys=["a", "bb"], tracker=tracker)
    assert report.ok
    rows = local_spark.read.parquet(str(out)).collect()
    assert sorted((row.key, row.n) for row in rows) == [("a", 1), ("bb", 2)]


def long_key(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key * 5], "n": [len(key)]})


@pytest.mark.parametrize(
    ("column", "bad"),
    [("key VARCHAR(3)", long_key)],
    ids=["varchar-length"],
)
def test_a_table_overwrite_too_long_for_a_varchar_column_keeps_the_tables_rows(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, column: str, bad: Any
) -> None:
    """A ``varchar(3)`` column takes a ``string`` (``table_sink.takes``: "the length is checked
    by Spark as it writes each value").  With ``overwrite`` the commit first writes the rows
    beside the table, but that copy is a plain string column: the length is checked only by
    ``insertInto``, after Spark deleted the table's files.  docs/spark.md: only a disk, an
    executor lost or Ctrl-C may leave an overwritten table without its former rows."""
    import uuid

    from xor_ack_dynamodb.spark import OutputWriteFailed

    db = f"rv_{uuid.uuid4().hex[:8]}"
    local_spark.sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / 'db'}'")
    table = f"{db}.t"
    local_spark.sql(f"CREATE TABLE {table} ({column}, n BIGINT) USING parquet")
    run = {"keys": ["a", "b"], "tracker": tracker}
    assert track(local_spark, echo, "key string, n long", Sink(table=table), **run).ok

    def rows() -> list[tuple[str, int]]:
        local_spark.catalog.refreshTable(table)
        return sorted((r["key"], r["n"]) for r in local_spark.table(table).collect())

    before = rows()
    assert before == [("a", 1), ("b", 1)]
    sink = Sink(table=table, overwrite=True)
    with pytest.raises(OutputWriteFailed, match=r"EXCEED_LIMIT_LENGTH|length"):
        track(local_spark, bad, "key string, n long", sink, **run)
    assert rows() == before


def slow_once(marker: str) -> Any:
    def process(key: str, rows: Any) -> Any:
        import os
        import time

        import pyarrow as pa

        if key == "slow" and not os.path.exists(marker):
            open(marker, "w").close()
            time.sleep(7)  # past its chain's deadline
        return pa.table({"key": [key], "n": [len(key)]})

    return process


def test_an_input_whose_chain_passed_its_deadline_is_replayed(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """docs/spark.md, chain_timeout: "Give more than a page's rounds take: a chain past its
    deadline fails and its input is replayed."  The first attempt of ``slow`` outlives its
    chain's deadline; the second is quick."""
    process = slow_once(str(tmp_path / "slept"))
    report = track(
        local_spark,
        process,
        "key string, n long",
        Sink(str(tmp_path / "out")),
        keys=["fast", "slow"],
        tracker=tracker,
        chain_timeout=6.0,  # a round of two quick inputs: well within, on a slow machine too
    )
    slow = next(e for e in report.inputs if e.key == "slow")
    assert slow.status == "acked" and len(slow.history) == 2, slow.history  # replayed once
    assert "timeout" in slow.history[0] or "deadline" in slow.history[0], slow.history
    assert report.ok


def total_of(key: str, rows: Any) -> Any:
    import pyarrow as pa

    values = rows.column(rows.column_names[0]).to_pylist()
    return pa.table({"key": [key], "n": [sum(values)]})


def dotted_column(spark: Any) -> Any:
    """A CSV header such as ``price.usd``: Spark's ``mapInArrow`` reads ``a.b`` as field
    ``b`` of a column ``a``, and every round failed after its chains (an empty partial
    output committed)."""
    return spark.createDataFrame([("x", 1), ("y", 5)], "k string, `a.b` long")


def two_columns_of_one_name(spark: Any) -> Any:
    """A source made by a join keeps both sides' ``v`` columns (``a.join(b, a.k == b.k)``):
    a DataFrame Spark reads and writes nowhere, but runs; the rounds cannot carry it."""
    a = spark.createDataFrame([("x", 1), ("y", 2)], "k string, v long")
    b = spark.createDataFrame([("x", 10), ("y", 20)], "k2 string, v long")
    return a.join(b, a.k == b.k2).drop("k2")


@pytest.mark.parametrize(
    ("make_source", "said"),
    [(dotted_column, "withColumnRenamed"), (two_columns_of_one_name, "two columns named 'v'")],
    ids=["a column with a dot", "two columns of one name"],
)
def test_a_source_the_rounds_cannot_carry_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path, make_source: Any, said: str
) -> None:
    """Refused, saying what to rename, before anything is written."""
    from xor_ack_dynamodb.spark.errors import InvalidArgument, Refused

    out = tmp_path / "out"
    with pytest.raises((Refused, InvalidArgument), match=said):
        track(
            local_spark,
            total_of,
            "key string, n long",
            Sink(str(out)),
            source=make_source(local_spark),
            key="k",
            tracker=tracker,
            max_attempts=2,
        )
    assert chains(tracker) == [] and not out.exists()


def test_a_new_table_whose_folder_exists_is_refused_before_the_first_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """A managed table dropped by another tool, or a ``saveAsTable`` that failed, leaves the
    table's folder behind; ``saveAsTable`` then refuses the new table
    (LOCATION_ALREADY_EXISTS).  docs/spark.md: "A table the commit could not write is
    refused before the first chain"; here every input is processed and acked first."""
    import uuid

    from xor_ack_dynamodb.spark.errors import Refused

    db = f"rv_{uuid.uuid4().hex[:8]}"
    local_spark.sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / 'db'}'")
    (tmp_path / "db" / "t").mkdir(parents=True)
    (tmp_path / "db" / "t" / "part-0.parquet").write_bytes(b"left behind")
    with pytest.raises(Refused):
        track(
            local_spark,
            echo,
            "key string, n long",
            Sink(table=f"{db}.t"),
            keys=["a", "b"],
            tracker=tracker,
        )
    assert chains(tracker) == []


def reject_some(key: str, rows: Any) -> Any:
    import pyarrow as pa

    from xor_ack_dynamodb.spark import InputRejected

    if key.startswith("bad"):
        raise InputRejected(f"bad output: {key} holds a truncated record")
    return pa.table({"key": [key], "n": [len(key)]})


def test_an_input_rejected_with_a_message_like_the_librarys_own_fails_at_once(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    """InputRejected: "The input ends failed at once with the message as its reason, and is
    not replayed".  Its message is the chain's reason, which the driver then reads back by
    its first words: one that starts as the library's own reasons do ("bad output: ") is
    taken for the function's failure, replayed, and counted against max_errors."""
    report = track(
        local_spark,
        reject_some,
        "key string, n long",
        Sink(str(tmp_path / "out")),
        keys=["bad-1", "good"],
        tracker=tracker,
        max_errors=3,
    )
    bad = next(e for e in report.inputs if e.key == "bad-1")
    assert bad.status == "failed"
    assert bad.attempts == 1, bad.history
