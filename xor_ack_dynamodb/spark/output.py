"""A tracked job's output rows, shaped by the sink and written by Spark.

The rows are the acked rounds' (``ledger.AckedLedger.acked_rows``); the sink's
``finish`` shapes them.  Where they go, and whether they may go there at all, is
``commit``'s.
"""

from __future__ import annotations

from typing import Any

from .sink import Sink


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
