"""The run's counts: the untracked round, judging chains, summing the acked rows, totals."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    IntegerType,
    StructField,
    StructType,
)

from ..errors import TagNotFound
from ..item import ChainState
from .buckets import identity_partition
from .jobgroup import in_job_group
from .plan import RoundPlan
from .report import Attempt, RoundResult
from .spark import read_files
from .stages import (
    TASK_TOTALS,
)
from .tasks import (
    COUNTS_SCHEMA,
    ENTRY_SCHEMA,
    STAGING_SCHEMA,
    _stage1_task,
    _sum_task,
    _unpickle_entries,
)
from .tracker import merge_counts

if TYPE_CHECKING:
    from .job import WordCount


def untracked_counts(job: WordCount) -> DataFrame:
    """The same stages without chains: one round, no staging, nothing verified."""
    readable = [i for i, f in enumerate(job.files) if f.problem is None]
    plan = RoundPlan(
        run_id=job.run_id,
        round=1,
        partitions=job.partitions,
        paths=tuple(job.files[i].path for i in readable),
        file_ids=tuple(readable),
        faults=job.opts.faults,
    )
    job.observer.round_started(1, len(readable))
    bplan = job.sc.broadcast(plan)
    inputs = [job.files[i] for i in readable]
    rdd = read_files(job.spark, inputs, job._read_partitions(len(inputs)))
    counts = (
        rdd.mapPartitionsWithIndex(partial(_stage1_task, bplan, job.metrics))
        .partitionBy(plan.partitions, identity_partition)
        .mapPartitionsWithIndex(partial(_sum_task, bplan, job.metrics))
    )
    for i in readable:
        f = job.report.files[i]
        f.status, f.attempts = "counted", 1
        f.history.append(Attempt(1, "counted (not tracked)"))
    result = RoundResult(1, len(plan.paths), plan.partitions)
    job.report.rounds.append(result)
    return job.spark.createDataFrame(counts, COUNTS_SCHEMA, verifySchema=False)


def settle(job: WordCount, tags: Sequence[str], job_error: str | None) -> list[str]:
    """Each chain's outcome once its round's job has ended: ``acked`` or why not.

    A chain is judged when the job has ended, not later: every task of the job
    is over by then, so a chain that is not zero can only be completed by a
    stray attempt whose output was not committed; accepting that would be a
    false ack.  Every chain not acked is closed with ``fail`` so that late
    stamps are refused.
    """
    if job_error is not None:
        # Nothing of this round was committed: even a zero chain cannot count.
        def close(tag: str) -> str:
            with contextlib.suppress(TagNotFound):
                job.chains.fail(tag, reason=job_error)
            return job_error

        return job._parallel(close, tags)

    states: dict[str, ChainState | None] = job.chains.get_many(tags)
    judged: dict[str, str] = {}
    for tag, state in states.items():
        if state is None:
            judged[tag] = "chain missing"
        elif state.acked:
            judged[tag] = "acked"
        elif state.failed:
            judged[tag] = state.reason or "failed"

    def close_incomplete(tag: str) -> str:
        reason = "incomplete: not zero when its round ended"
        try:
            closed = job.chains.fail(tag, reason=reason)
        except TagNotFound:
            return "chain missing"
        if closed.acked:  # completed between the read and the fail: too late to count
            return "completed after its round ended (not counted)"
        return reason

    rest = [tag for tag in tags if tag not in judged]
    judged.update(zip(rest, job._parallel(close_incomplete, rest), strict=True))
    return [judged[tag] for tag in tags]


def final_counts(job: WordCount, acked_in: dict[int, int]) -> DataFrame:
    """Sum by word the staging rows of each file's acked round.

    A round whose files were all acked contributes its counting tasks' totals
    rows; a round with files that were not is summed from the per-file rows of
    its acked files only.
    """
    if not acked_in:
        return job.spark.createDataFrame([], COUNTS_SCHEMA)
    complete = [r.round for r in job.report.rounds if r.job_error is None and r.acked == r.files]
    partial = sorted({r for r in acked_in.values()} - set(complete))
    # The schema is known: giving it spares Spark a job that reads every file's footer.
    schema = StructType([*STAGING_SCHEMA.fields, StructField("round", IntegerType(), False)])
    staging = job.spark.read.schema(schema).parquet(job.rows_dir)
    parts: list[DataFrame] = []
    if complete:
        pairs = F.explode(F.arrays_zip(F.col("words"), F.col("counts"))).alias("pair")
        parts.append(
            staging.where((F.col("file") == TASK_TOTALS) & F.col("round").isin(complete))
            .select(pairs)
            .select(F.col("pair.words").alias("word"), F.col("pair.counts").alias("n"))
        )
    if partial:
        acked = job.spark.createDataFrame(
            sorted((r, f) for f, r in acked_in.items() if r in partial),
            StructType(
                [
                    StructField("round", IntegerType(), False),
                    StructField("file", IntegerType(), False),
                ]
            ),
        )
        blobs = (
            staging.where(F.col("round").isin(partial) & (F.col("file") >= 0))
            .join(F.broadcast(acked), ["round", "file"])
            .select("blob")
        )
        entries = blobs.rdd.flatMap(_unpickle_entries)
        parts.append(job.spark.createDataFrame(entries, ENTRY_SCHEMA, verifySchema=False))
    if len(complete) == 1 and not partial:
        # One round's totals: each word went to one counting task (its bucket), so
        # every word has exactly one totals row and nothing is left to sum.
        return parts[0].select("word", F.col("n").alias("count"))
    rows = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    return rows.groupBy("word").agg(F.sum("n").cast("long").alias("count"))


def write_output(job: WordCount, counts: DataFrame) -> tuple[int, int]:
    """Write the counts into the staging folder; (words, distinct words)."""
    counts = counts.persist()
    result: dict[str, Any] = {}

    def action() -> None:
        (
            counts.repartition(job.opts.output_partitions)
            .sortWithinPartitions(F.desc("count"), F.asc("word"))
            .write.option("header", True)
            .csv(job.staged_output)
        )
        result["row"] = counts.agg(
            F.count(F.lit(1)).alias("distinct"), F.sum("count").alias("words")
        ).first()

    try:
        error = in_job_group(
            job, f"xor-ack-{job.run_id}-output", "xor-ack wordcount: the counts", action
        )
    finally:
        counts.unpersist()
    if error is not None:
        raise error
    row = result.get("row")
    if row is None:  # pragma: no cover - an aggregate always has one row
        return 0, 0
    return int(row["words"] or 0), int(row["distinct"] or 0)


def totals(job: WordCount, words: int, distinct: int) -> None:
    metrics = dict(job.metrics.value)
    if job._driver is not None:
        merge_counts(metrics, {f"ddb.{k}": v for k, v in job._driver.stats.snapshot().items()})
    requests = {
        k[len("ddb.requests.") :]: v for k, v in metrics.items() if k.startswith("ddb.requests.")
    }
    writes = metrics.get("ddb.writes", 0)
    records = metrics.get("records", 0)
    job.clock.add("total", 0.0)
    seconds = {k: round(v, 3) for k, v in job.clock.seconds.items() if k != "total"}
    seconds["total"] = round(job.clock.total(), 3)
    job.report.totals = {
        "files": len(job.files),
        "acked": job.report.acked,
        "failed": job.report.failed,
        "rounds": len(job.report.rounds),
        "words": words,
        "distinct_words": distinct,
        "records": records,
        "records_lost_to_faults": metrics.get("records_lost", 0),
        "dynamodb": {
            "requests": metrics.get("ddb.requests", 0),
            "by_operation": requests,
            "writes": writes,
            "stamps": metrics.get("ddb.stamps", 0),
            "conflicts": metrics.get("ddb.conflicts", 0),
            "resent_writes_recognised": metrics.get("ddb.resent_writes_recognised", 0),
            "records_per_write": round(records / writes, 2) if writes else None,
        },
        "seconds": seconds,
    }
