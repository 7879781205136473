"""Which round acked each input, kept beside the staged rows instead of on the driver.

After each page, its acked ``(round, input id)`` pairs are written as one small
Parquet file under ``ROWS/_acked/_xa_page=N`` (the rows root is never read whole
with it: names starting with ``_`` and holding no ``=`` are not data to Spark's
readers; the pairs are read through their ``_xa_page=N`` folders, which are).  A
round's staged rows are in ``ROWS/_xa_round=K/_xa_page=P``: folder names Spark
reads back as columns, so they are the library's own (``_xa_``), which no user
column may take (:func:`refuse_reserved`).  A local
rows root is written by the driver with pyarrow; a Hadoop URI, or any folder
over Spark Connect (the client shares no disk with the server), by a Spark job.
At the end, the output is the staged rows of those pairs only (a join), read
back by Spark: the driver never holds more than one page of pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .columns import named
from .errors import ReservedColumn
from .paths import is_remote, literal, local_path
from .stages import ID, STAGED_DDL

#: Where a run's acked pairs go, under its rows root.
ACKED = "_acked"
#: The staged rows' folder names, read back by Spark as columns (partition discovery).
ROUND = "_xa_round"
PAGE = "_xa_page"
PAIRS_DDL = f"{ROUND} int, {ID} int"
#: What starts the name of every column the library adds to the user's rows.
RESERVED = "_xa_"


def rows_dir(rows_root: str, round_: int, page: int) -> str:
    """Where round ``round_`` of page ``page`` stages its rows."""
    return f"{rows_root}/{ROUND}={round_}/{PAGE}={page:06d}"


def refuse_reserved(columns: Sequence[str]) -> None:
    """Refuse an output column named as the library's own (``_xa_...``, any case)."""
    taken = [name for name in columns if name.lower().startswith(RESERVED)]
    if taken:
        raise ReservedColumn(
            f"the schema's column {taken[0]!r} starts with {RESERVED!r}, which the library "
            "keeps for the columns it adds to the staged rows: rename it in the schema and in "
            "the rows your function returns"
        )


class AckedLedger:
    """The acked ``(round, id)`` pairs of a run's pages, under ``rows_root/_acked``."""

    def __init__(self, spark: Any, rows_root: str, *, by_spark: bool = False) -> None:
        self.spark = spark
        self.by_spark = by_spark
        self.folder = f"{rows_root}/{ACKED}"
        self.rows_root = rows_root
        self.pairs = 0
        #: The page folders written, in order: one path per page, not per input.
        self.pages: list[str] = []

    def add(self, page: int, pairs: Sequence[tuple[int, int]]) -> None:
        """Page ``page``'s acked pairs (round, input id); none: nothing written."""
        if not pairs:
            return
        self.pairs += len(pairs)
        folder = f"{self.folder}/{PAGE}={page:06d}"
        if folder not in self.pages:  # a page written again replaces its folder
            self.pages.append(folder)
        if self.by_spark or is_remote(folder):
            frame = self.spark.createDataFrame(list(pairs), PAIRS_DDL)
            frame.coalesce(1).write.mode("overwrite").parquet(folder)
            return
        import os

        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        rounds, ids = zip(*pairs, strict=True)
        table = pa.table({ROUND: pa.array(rounds, pa.int32()), ID: pa.array(ids, pa.int32())})
        path = local_path(folder)
        os.makedirs(path, exist_ok=True)
        pq.write_table(table, os.path.join(path, "part-0.parquet"))

    def acked_rows(self, schema: str, columns: tuple[str, ...]) -> Any:
        """The staged rows of every input's acked round, as the output's ``columns``."""
        if not self.pairs:
            return self.spark.createDataFrame([], schema)
        staged_ddl = f"{schema}, {STAGED_DDL}, {ROUND} int, {PAGE} int"
        staged = self.spark.read.schema(staged_ddl).parquet(literal(self.rows_root))
        # Through the page folders it wrote (one path per page): given the ``_acked`` folder
        # itself Spark warns "All paths were ignored" (though it reads it), and given a glob
        # that it looks for a metadata folder: warnings in the user's log.
        pairs = (
            self.spark.read.schema(f"{PAIRS_DDL}, {PAGE} int")
            .option("basePath", self.folder)
            .parquet(*map(literal, self.pages))
        )
        return staged.join(pairs.select(ROUND, ID), [ROUND, ID]).select(*map(named, columns))
