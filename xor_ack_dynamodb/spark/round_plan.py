"""The Spark plan of one round's job, built by the driver and run where Spark runs.

Each pending input becomes one marker row (its key, id, tag and chain as created);
a source's rows are joined to the markers by their key.  Every input's rows and its
marker go to one task, one input after the other, through the user's function
(``stages.produce``), then into the shuffle the staging write reads.
"""

from __future__ import annotations

from typing import Any

from .job_spec import JobSpec
from .paging import key_of
from .stages import (
    CREATED,
    ID,
    INPUT,
    KEY,
    MARKER,
    STAGED_DDL,
    TAG,
    RoundSpec,
    key_bytes,
    produce,
    transit,
)

KEYS_DDL = f"{INPUT} string, {ID} int, {TAG} string, {CREATED} binary, {KEY} binary"


def markers(
    spark: Any,
    keys: list[str],
    ids: list[int],
    tags: list[str],
    created: dict[str, bytes | None],
) -> Any:
    """One row per input of the round: its key (as a string, and exactly: ``KEY``), id, tag
    and its chain as created."""
    rows = [
        (k, i, tag, created.get(tag), key_bytes(k))
        for k, i, tag in zip(keys, ids, tags, strict=True)
    ]
    return spark.createDataFrame(rows, KEYS_DDL)


def source_columns(job: JobSpec) -> tuple[str, ...]:
    """The source's columns the function reads, its key column aside."""
    if job.source is None:
        return ()
    return tuple(c for c in job.source.columns if c != job.key)


def produced_rows(job: JobSpec, spec: RoundSpec, keys_df: Any, tasks: int) -> Any:
    """The rows the round stages: the function's, each carrying its hash, shuffled."""
    from pyspark.sql import functions as F

    marked = keys_df.withColumn(MARKER, F.lit(True))
    if job.source is None:
        grouped = marked
    else:
        assert job.key is not None  # a source comes with its key column
        rows = (
            job.source.withColumn(INPUT, key_of(job.key))
            .drop(job.key)
            .join(F.broadcast(keys_df.drop(CREATED, KEY)), INPUT)
            .withColumn(MARKER, F.lit(False))
        )
        grouped = rows.unionByName(marked, allowMissingColumns=True)
    out_ddl = f"{job.schema}, {STAGED_DDL}"
    # Each input's rows in one task, one input after the other (``stages.produce``).
    grouped = grouped.repartition(tasks, ID).sortWithinPartitions(ID)
    out = grouped.mapInArrow(lambda batches: produce(spec, batches), out_ddl)
    moved = out.repartition(job.partitions) if job.partitions else out
    if not spec.faults.enabled:
        return moved  # the shuffle and the write stay in the JVM: no Python task
    return moved.mapInArrow(lambda it: transit(spec, it), out_ddl)


def arrow_schema(struct: Any) -> Any:
    """The output's Spark schema as Arrow's, for the tasks' batches."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct)
