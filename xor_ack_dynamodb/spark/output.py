"""A tracked job's output rows, shaped by the sink and written by Spark.

The rows are the acked rounds' (``ledger.AckedLedger.acked_rows``); the sink's
``finish`` shapes them.  Where they go, and whether they may go there at all, is
``commit``'s.
"""

from __future__ import annotations

from typing import Any

from .errors import FinishFailed
from .sink import Sink


def shaped(rows: Any, sink: Sink) -> Any:
    """``rows`` through the sink's ``finish`` and into its number of files."""
    out = sink.finish(rows) if sink.finish is not None else rows
    return out.repartition(sink.files) if sink.files else out


def columns(spark: Any, struct: Any, sink: Sink) -> tuple[str, ...]:
    """The output's columns: no rows of the declared ``struct``, shaped as the commit shapes
    the acked rows (so the sink can be judged before the first chain)."""
    empty = spark.createDataFrame([], struct)
    if sink.finish is None:
        return tuple(empty.columns)
    try:
        return tuple(shaped(empty, sink).columns)
    except Exception as exc:  # the user's finish, or the frame it made that Spark refuses
        said = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise FinishFailed(
            f"Sink(finish=...) fails on rows of the declared schema ({struct.simpleString()}): "
            f"{type(exc).__name__}: {said}; make finish take a DataFrame of those columns"
        ) from exc


def write(rows: Any, sink: Sink, staged: str) -> None:
    """``rows`` through the sink's ``finish``, files, format and partitioning, to ``staged``."""
    out = shaped(rows, sink)
    writer = out.write.format(sink.format).options(**sink.options)
    if sink.partition_by:
        writer = writer.partitionBy(*sink.partition_by)
    writer.save(staged)
