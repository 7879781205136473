"""A tracked job's output: the acked rounds' rows, written to staging, then committed once.

Only each input's acked round counts (a join of the staged rows with the pairs
(round, input)); the sink's ``finish`` shapes them; the files go to the staging
folder, get a manifest, and are renamed onto the output as ``paths``
judges it: absent, an empty folder, or a former output of this library (never
what it did not write).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .files import Files
from .paths import MANIFEST, OutputAction, judge_output, manifest_text
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


def write(rows: Any, sink: Sink, staged: str) -> None:
    """``rows`` through the sink's ``finish``, files, format and partitioning, to ``staged``."""
    out = sink.finish(rows) if sink.finish is not None else rows
    if sink.files:
        out = out.repartition(sink.files)
    writer = out.write.format(sink.format).options(**sink.options)
    if sink.partition_by:
        writer = writer.partitionBy(*sink.partition_by)
    writer.save(staged)


def commit(files: Files, sink: Sink, staging: str, output: str, run_id: str) -> None:
    """A manifest, then a rename: the output is absent, the former one, or complete.

    Raises, with the output as it was, if the new one could not be put in place.
    """
    staged = f"{staging}/output"
    listing = files.listing(staged)
    names = listing.names if listing is not None else ()
    files.write_text(f"{staged}/{MANIFEST}", manifest_text(run_id, "", names))
    action = judge_output(sink.path, files.listing(output), sink.overwrite)
    if action is OutputAction.REPLACE_EMPTY:
        files.remove_empty_folder(output)
    elif action is OutputAction.REPLACE_OURS:
        previous = f"{staging}/previous"
        files.rename(output, previous)
        try:
            files.rename(staged, output)
        except BaseException:
            files.rename(previous, output)
            raise
        return
    files.rename(staged, output)
