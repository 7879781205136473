"""A tracked job's output rows: the acked rounds' rows, shaped by the sink, written by Spark.

Only each input's acked round counts (a join of the staged rows with the pairs
(round, input)); the sink's ``finish`` shapes them.  Where they go, and whether
they may go there at all, is ``commit``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .sink import Sink
from .stages import ID, STAGED_DDL

if TYPE_CHECKING:
    from .job import JobSpec


def acked_rows(
    spark: Any, spec: JobSpec, rows_root: str, columns: tuple[str, ...], acked_in: dict[int, int]
) -> Any:
    """The staged rows of each input's acked round (``acked_in``: input -> round)."""
    from pyspark.sql import functions as F

    if not acked_in:
        return spark.createDataFrame([], spec.schema)
    staged = spark.read.schema(f"{spec.schema}, {STAGED_DDL}, round int").parquet(rows_root)
    pairs = spark.createDataFrame(
        sorted((r, i) for i, r in acked_in.items()), f"round int, {ID} int"
    )
    return staged.join(F.broadcast(pairs), ["round", ID]).select(*columns)


def shaped(rows: Any, sink: Sink) -> Any:
    """``rows`` through the sink's ``finish`` and into its number of files."""
    out = sink.finish(rows) if sink.finish is not None else rows
    return out.repartition(sink.files) if sink.files else out


def write(rows: Any, sink: Sink, staged: str) -> None:
    """``rows`` through the sink's ``finish``, files, format and partitioning, to ``staged``."""
    out = shaped(rows, sink)
    writer = out.write.format(sink.format).options(**sink.options)
    if sink.partition_by:
        writer = writer.partitionBy(*sink.partition_by)
    writer.save(staged)
