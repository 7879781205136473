"""The word count's Spark tasks (run on executors) and the rows they hand over."""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark import TaskContext
from pyspark.accumulators import Accumulator
from pyspark.broadcast import Broadcast
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from .errors import PipelineError
from .plan import RoundPlan, TaskInfo
from .stages import (
    BucketRecord,
    StagingRow,
    count_buckets,
    split_files,
    sum_buckets,
)
from .tracker import chains_for, merge_counts, stats_delta

STAGING_SCHEMA = StructType(
    [
        StructField("file", IntegerType(), False),
        StructField("words", ArrayType(StringType(), False), True),
        StructField("counts", ArrayType(LongType(), False), True),
        StructField("blob", BinaryType(), True),
    ]
)
COUNTS_SCHEMA = StructType(
    [StructField("word", StringType(), False), StructField("count", LongType(), False)]
)
ENTRY_SCHEMA = StructType(
    [StructField("word", StringType(), False), StructField("n", LongType(), False)]
)

# -- the tasks (run on executors) ---------------------------------------------------------


def _task_info() -> TaskInfo:
    ctx = TaskContext.get()
    if ctx is None:  # pragma: no cover - always set inside a Spark task
        return TaskInfo(0, 0)
    return TaskInfo(ctx.partitionId(), ctx.attemptNumber())


def _report(plan: RoundPlan, metrics: Accumulator[dict[str, int]], local: Counter[str]) -> None:
    counts = dict(local)
    if plan.tracker is not None:
        merge_counts(counts, stats_delta(plan.tracker))
    metrics.add(counts)


def _stage1_task(
    bplan: Broadcast[RoundPlan],
    metrics: Accumulator[dict[str, int]],
    _index: int,
    files: Iterable[tuple[str, bytes]],
) -> Iterator[BucketRecord]:
    plan = bplan.value
    chains = chains_for(plan.tracker) if plan.tracking and plan.tracker else None
    local: Counter[str] = Counter()
    yield from split_files(plan, _task_info(), files, chains, local)
    _report(plan, metrics, local)


def _stage2_task(
    bplan: Broadcast[RoundPlan],
    metrics: Accumulator[dict[str, int]],
    _index: int,
    records: Iterable[BucketRecord],
) -> Iterator[StagingRow]:
    plan = bplan.value
    if plan.tracker is None:  # pragma: no cover - guarded by the driver
        raise PipelineError("a tracked round without a tracker")
    local: Counter[str] = Counter()
    yield from count_buckets(plan, _task_info(), records, chains_for(plan.tracker), local)
    _report(plan, metrics, local)


def _sum_task(
    bplan: Broadcast[RoundPlan],
    metrics: Accumulator[dict[str, int]],
    _index: int,
    records: Iterable[BucketRecord],
) -> Iterator[tuple[str, int]]:
    plan = bplan.value
    local: Counter[str] = Counter()
    yield from sum_buckets(plan, _task_info(), records, local)
    _report(plan, metrics, local)


def _unpickle_entries(row: Any) -> list[tuple[str, int]]:
    entries: list[tuple[str, int]] = pickle.loads(row["blob"])
    return entries
