"""The commit check: per input, the sum of the hashes of the rows Spark committed.

After a round's job, Spark's committer has put each task's files into the round's
folder (files of failed or losing attempts never get there; ``_temporary`` and
other names starting with ``_`` or ``.`` are not data).  The check reads three
columns of those files, the input id and the two 64-bit lanes of the hash each
row carries from where it was produced, and adds the lanes up per input.  The
driver then stamps each chain with the stamp of its input's sum
(``stages.stamp_committed``).

Two ways to the same sums:

- a local folder (``/x``, ``file:/x``) on classic Spark (``local[*]``, a cluster
  on one file system): the driver reads the files with pyarrow and sums with
  numpy.  No Spark job: scheduling one costs about a second whatever the data,
  most of what the check took when it was one.
- a Hadoop URI (``s3a://``, ``hdfs://``), and any folder over Spark Connect (the
  client may not see the server's disk): a Spark aggregate, the lanes summed
  exactly as decimals, one row per input collected.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np

from .digest import combine_lanes, lanes_sums_by
from .files import is_connect
from .paths import is_remote, literal, local_path
from .stages import HASH_HIGH, HASH_LOW, ID


def committed_sums(spark: Any, folder: str, staged_ddl: str) -> dict[int, int]:
    """Per input id, the sum of the committed rows' hashes under ``folder`` (a round's).

    ``staged_ddl``: the staged rows' schema (for Spark's read of a Hadoop URI).  An
    input without a committed row is absent.
    """
    if not is_remote(folder) and not is_connect(spark):
        return local_sums_by(local_path(folder))
    staged = spark.read.schema(staged_ddl).parquet(literal(folder))
    return spark_sums_by(staged.select(ID, HASH_HIGH, HASH_LOW), ID, HASH_HIGH, HASH_LOW)


def local_sums_by(folder: str) -> dict[int, int]:
    """``staged_sums_by`` of the parquet files of a local folder, read by this process."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.dataset as ds  # type: ignore[import-untyped]

    schema = pa.schema([(ID, pa.int32()), (HASH_HIGH, pa.int64()), (HASH_LOW, pa.int64())])
    return staged_sums_by(ds.dataset(folder, format="parquet", schema=schema).to_table())


def staged_sums_by(table: Any) -> dict[int, int]:
    """``lanes_sums_by`` of staged rows: an Arrow table with the input id and hash columns."""

    def column(name: str) -> np.ndarray:
        return np.asarray(table.column(name).to_numpy(zero_copy_only=False))

    lanes = [column(name).view(np.uint64) for name in (HASH_HIGH, HASH_LOW)]
    return lanes_sums_by(column(ID), lanes)


def spark_sums_by(frame: Any, by: str, high: str, low: str) -> dict[int, int]:
    """``lanes_sums_by`` of a DataFrame's lane columns, computed by Spark (no Python worker).

    The lanes are stored as signed longs holding unsigned 64-bit values; each is read
    back as that unsigned value (a decimal) and summed exactly per group.
    """
    from pyspark.sql import functions as F

    wrap = F.lit(Decimal(1 << 64))

    def unsigned(name: str) -> Any:
        value = F.col(name).cast("decimal(20,0)")
        return F.when(F.col(name) < 0, value + wrap).otherwise(value)

    sums = frame.groupBy(by).agg(F.sum(unsigned(high)).alias(high), F.sum(unsigned(low)).alias(low))
    return {
        int(row[by]): combine_lanes([[int(row[high])], [int(row[low])]])[0]
        for row in sums.collect()
    }
