"""The commit check's two ways to the committed sums (the driver reading local files,
and a Spark aggregate) against the digest's own per-input sums."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from xor_ack_dynamodb.spark.check import committed_sums, local_sums_by, spark_sums_by
from xor_ack_dynamodb.spark.digest import lanes_sums_by, row_lanes
from xor_ack_dynamodb.spark.stages import HASH_HIGH, HASH_LOW, ID, STAGED_DDL

from .test_digest import COLUMNS, mixed

DDL = f"word string, {STAGED_DDL}"
#: Lanes that carry: the sums must be exact, not wrapped at 64 bits.
EXTREME = [2**64 - 1, 2**63, 0, 1, 2**63 - 1, 2**64 - 2]


def staged_rows(ids: list[int], high: list[int], low: list[int]) -> list[tuple[Any, ...]]:
    signed = [np.array(lane, dtype=np.uint64).view(np.int64) for lane in (high, low)]
    return [
        (f"w{n}", i, int(h), int(lo))
        for n, (i, h, lo) in enumerate(zip(ids, signed[0], signed[1], strict=True))
    ]


def expected(ids: list[int], high: list[int], low: list[int]) -> dict[int, int]:
    lanes = [np.array(lane, dtype=np.uint64) for lane in (high, low)]
    return lanes_sums_by(np.array(ids, dtype=np.int32), lanes)


def spark_sums(spark: Any, folder: Path) -> dict[int, int]:
    """What the check does for a Hadoop URI: Spark reads and adds up."""
    staged = spark.read.schema(DDL).parquet(str(folder))
    return spark_sums_by(staged, ID, HASH_HIGH, HASH_LOW)


def test_spark_adds_the_carried_lanes_up_as_the_digest_does(local_spark: Any) -> None:
    # Signed longs holding unsigned values, summed per input as ``lanes_sums_by`` does.
    rows = mixed().append_column("id", pa.array([3, 1, 3, 2, 1], pa.int32()))
    lanes = row_lanes("run", rows, COLUMNS)
    extreme = np.array(EXTREME[:5], dtype=np.uint64)
    lanes = [lanes[0], extreme]
    ids = np.asarray(rows.column("id").to_numpy())
    frame = local_spark.createDataFrame(
        [
            (int(i), int(h), int(lo))
            for i, h, lo in zip(ids, lanes[0].view(np.int64), lanes[1].view(np.int64), strict=True)
        ],
        "id int, high long, low long",
    )
    assert spark_sums_by(frame, "id", "high", "low") == lanes_sums_by(ids, lanes)


def test_driver_and_spark_read_the_same_sums_of_what_spark_committed(
    local_spark: Any, tmp_path: Path
) -> None:
    ids = [1, 2, 1, 3, 1, 2]
    high = EXTREME
    low = list(reversed(EXTREME))
    folder = tmp_path / "round=1"
    frame = local_spark.createDataFrame(staged_rows(ids, high, low), DDL)
    frame.repartition(4).write.parquet(str(folder))
    # What is not committed data: an attempt's leftovers and hidden files.
    stray = pa.table({ID: pa.array([1], pa.int32()), HASH_HIGH: [5], HASH_LOW: [7]})
    (folder / "_temporary" / "0").mkdir(parents=True)
    pq.write_table(stray, folder / "_temporary" / "0" / "part-00009.parquet")
    pq.write_table(stray, folder / ".part-00010.parquet")

    want = expected(ids, high, low)
    assert local_sums_by(str(folder)) == want
    assert spark_sums(local_spark, folder) == want
    assert committed_sums(local_spark, f"file:{folder}", DDL) == want


def test_a_committed_round_without_rows_has_no_sums(local_spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "round=2"
    local_spark.createDataFrame([], DDL).write.parquet(str(folder))
    assert local_sums_by(str(folder)) == {}
    assert spark_sums(local_spark, folder) == {}


def test_the_staged_hash_lanes_are_written_without_a_dictionary(
    local_spark: Any, tmp_path: Path, chains_env: str
) -> None:
    # Random 64-bit lanes: a dictionary is never smaller, and trying one per chunk made the
    # staging write slower (bench_staged_parquet.py).  The user's columns keep Parquet's defaults.
    from xor_ack_dynamodb.spark import Sink
    from xor_ack_dynamodb.spark.tracking import tracked_job

    def words(key: str, rows: Any) -> Any:
        return pa.table({"word": [f"{key}-{n % 3}" for n in range(50)]})

    job = tracked_job(
        local_spark,
        words,
        "word string",
        Sink(str(tmp_path / "out"), format="parquet"),
        keys=["a", "b", "c"],
        table=chains_env,
        keep_staging=True,
    )
    assert job.run().ok
    files = sorted(Path(job.rows_root.removeprefix("file:")).glob("_xa_round=1/**/part-*.parquet"))
    assert files
    for file in files:
        meta = pq.ParquetFile(file).metadata
        encodings = {
            meta.row_group(g).column(c).path_in_schema: set(meta.row_group(g).column(c).encodings)
            for g in range(meta.num_row_groups)
            for c in range(meta.num_columns)
        }
        if not meta.num_rows:
            continue
        for lane in (HASH_HIGH, HASH_LOW):
            assert not {e for e in encodings[lane] if "DICTIONARY" in e}, encodings
        assert {e for e in encodings["word"] if "DICTIONARY" in e}, encodings
