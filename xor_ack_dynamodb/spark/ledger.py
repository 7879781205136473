"""Which round acked each input, kept beside the staged rows instead of on the driver.

After each page, its acked ``(round, input id)`` pairs are written as one small
Parquet file under ``ROWS/_acked/page=N`` (the rows root is never read whole
with it: names starting with ``_`` are not data to Spark's readers).  A local
rows root is written by the driver with pyarrow; a Hadoop URI, or any folder
over Spark Connect (the client shares no disk with the server), by a Spark job.
At the end, the output is the staged rows of those pairs only (a join), read
back by Spark: the driver never holds more than one page of pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .paths import is_remote, local_path
from .stages import ID, STAGED_DDL

#: Where a run's acked pairs go, under its rows root.
ACKED = "_acked"
PAIRS_DDL = f"round int, {ID} int"


class AckedLedger:
    """The acked ``(round, id)`` pairs of a run's pages, under ``rows_root/_acked``."""

    def __init__(self, spark: Any, rows_root: str, *, by_spark: bool = False) -> None:
        self.spark = spark
        self.by_spark = by_spark
        self.folder = f"{rows_root}/{ACKED}"
        self.rows_root = rows_root
        self.pairs = 0

    def add(self, page: int, pairs: Sequence[tuple[int, int]]) -> None:
        """Page ``page``'s acked pairs (round, input id); none: nothing written."""
        if not pairs:
            return
        self.pairs += len(pairs)
        folder = f"{self.folder}/page={page:06d}"
        if self.by_spark or is_remote(folder):
            frame = self.spark.createDataFrame(list(pairs), PAIRS_DDL)
            frame.coalesce(1).write.mode("overwrite").parquet(folder)
            return
        import os

        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        rounds, ids = zip(*pairs, strict=True)
        table = pa.table({"round": pa.array(rounds, pa.int32()), ID: pa.array(ids, pa.int32())})
        path = local_path(folder)
        os.makedirs(path, exist_ok=True)
        pq.write_table(table, os.path.join(path, "part-0.parquet"))

    def acked_rows(self, schema: str, columns: tuple[str, ...]) -> Any:
        """The staged rows of every input's acked round, as the output's ``columns``."""
        if not self.pairs:
            return self.spark.createDataFrame([], schema)
        staged = self.spark.read.schema(f"{schema}, {STAGED_DDL}, round int").parquet(
            self.rows_root
        )
        pairs = self.spark.read.schema(PAIRS_DDL).parquet(self.folder)
        return staged.join(pairs, ["round", ID]).select(*columns)
