"""Any column name of the user's schema comes out as the function returned it.

The staged rows are read back from folders Spark turns into columns (partition
discovery): those folders are named as the library's own columns (``_xa_...``),
so a user's ``round`` or ``page`` is not taken from a folder name, and a schema
that uses the library's prefix is refused before any chain is written.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import boto3
import pyarrow.parquet as pq
import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import ReservedColumn, Sink, TrackerConfig, track

pytestmark = [pytest.mark.spark, pytest.mark.ddblocal]
KEYS = ["a", "b", "c", "d"]


def with_round_and_page(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"round": [7], "page": [f"home-{key}"], "k": [key]})


cloudpickle.register_pickle_by_value(sys.modules[__name__])


def chains_of(tracker: TrackerConfig, run_id: str) -> list[str]:
    client = boto3.client("dynamodb", endpoint_url=tracker.endpoint_url, region_name="us-east-1")
    items = client.scan(TableName=tracker.table)["Items"]
    tags = (item[tracker.partition_key]["S"] for item in items)
    return [tag for tag in tags if tag.startswith(run_id + "/")]


def test_columns_named_round_and_page_keep_the_values_the_function_returned(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    schema = "round long, page string, k string"
    report = track(
        local_spark,
        with_round_and_page,
        schema,
        Sink(str(out)),
        keys=KEYS,
        tracker=tracker,
        page_size=2,
    )
    assert report.ok
    rows = sorted(pq.read_table(out).to_pylist(), key=lambda row: row["k"])
    assert rows == [{"round": 7, "page": f"home-{k}", "k": k} for k in KEYS]


def test_a_column_named_as_the_librarys_own_is_refused_before_any_chain(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    run_id = "rsv" + uuid.uuid4().hex[:6]
    with pytest.raises(ReservedColumn, match="_XA_page"):
        track(
            local_spark,
            with_round_and_page,
            "_XA_page string, k string",
            Sink(str(tmp_path / "out")),
            keys=KEYS,
            tracker=tracker,
            run_id=run_id,
        )
    assert not chains_of(tracker, run_id)
    assert not (tmp_path / "out").exists()


def key_and_dotted(key: str, rows: Any) -> Any:
    """The key the function got (as ASCII: a lone surrogate survives ``ascii``), in a
    column whose name holds a dot."""
    import pyarrow as pa

    return pa.table({"a.b": [ascii(key)], "n": [rows.num_rows]})


def test_names_with_a_dot_and_keys_no_jvm_string_holds_reach_the_function_and_output(
    local_spark: Any, tracker: TrackerConfig, tmp_path: Path
) -> None:
    # A column "a.b" (valid DDL, held by Parquet) was read as field b of a column a: the
    # commit's select died (a raw AnalysisException) after every input acked, and a key
    # column "file.path" failed the listing.  A key of ``keys=`` with a lone surrogate
    # (os.listdir's escaped bytes) was tracked and reported as given, but the function got
    # U+FFFD in its place (the marker row's trip through the JVM): not the file it named.
    schema = "`a.b` string, n long"
    out = tmp_path / "by-keys"
    given = ["caf\udce9", "caf\ufffd"]
    report = track(local_spark, key_and_dotted, schema, Sink(str(out)), keys=given, tracker=tracker)
    assert report.ok and report.output_state == "complete"
    assert sorted(e.key for e in report.inputs) == sorted(given)
    seen = sorted(r["a.b"] for r in local_spark.read.parquet(str(out)).collect())
    assert seen == sorted(map(ascii, given))
    source = local_spark.createDataFrame(
        [("x", 1), ("y", 2), ("x", 3)], "`file.path` string, v long"
    )
    out = tmp_path / "by-source"
    report = track(
        local_spark,
        key_and_dotted,
        schema,
        Sink(str(out)),
        source=source,
        key="file.path",
        tracker=tracker,
    )
    assert report.ok and sorted(e.key for e in report.inputs) == ["x", "y"]
    rows = sorted((r["a.b"], r["n"]) for r in local_spark.read.parquet(str(out)).collect())
    assert rows == [(ascii("x"), 2), (ascii("y"), 1)]
    db = f"dots_{uuid.uuid4().hex[:8]}"
    local_spark.sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / 'db'}'")
    for keys in (["t1"], ["t2"]):  # made, then appended to in the table's own column order
        ran = track(
            local_spark,
            key_and_dotted,
            schema,
            Sink(table=f"{db}.rows"),
            keys=keys,
            tracker=tracker,
        )
        assert ran.ok and ran.output_state == "complete"
    found = sorted(r["a.b"] for r in local_spark.table(f"{db}.rows").collect())
    assert found == [ascii("t1"), ascii("t2")]
