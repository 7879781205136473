"""``run_wordcount``: the command's word count, run as the library's example.

The rounds, the chains, the replay and the commit are
:mod:`xor_ack_dynamodb.spark`'s (:class:`~xor_ack_dynamodb.spark.TrackedJob`);
the word count is :mod:`xor_ack_dynamodb.spark.examples.wordcount`.  This module
adds what the command reports besides: the settings it ran with and the totals
of the counts it wrote.
"""

from __future__ import annotations

from typing import Any

from ..spark.examples.wordcount import WordCountOptions, tracked_wordcount
from ..spark.files import is_connect
from ..spark.job import TrackedJob
from ..spark.paths import is_remote
from ..spark.report import RoundObserver, TrackedReport
from .verify import read_output

#: The report of a word count run: the library's.
Report = TrackedReport

__all__ = ["Report", "WordCount", "WordCountOptions", "run_wordcount"]


class WordCount:
    """One run; ``job`` (the tracked job) exists once the inputs are listed."""

    def __init__(
        self, spark: Any, options: WordCountOptions, observer: RoundObserver | None = None
    ) -> None:
        self.spark = spark
        self.opts = options
        self.observer = observer
        self.job: TrackedJob | None = None

    @property
    def report(self) -> TrackedReport | None:
        return self.job.report if self.job is not None else None

    @property
    def committed(self) -> bool:
        return self.job is not None and self.job.committed

    def run(self) -> TrackedReport:
        self.job = tracked_wordcount(self.spark, self.opts, self.observer)
        self.job.report.settings = _settings(self.spark, self.opts)
        report = self.job.run()
        if report.output_state != "kept":  # kept: OUTPUT holds an earlier run's counts
            report.totals = _totals(self.spark, self.opts.output)
        return report


def run_wordcount(
    spark: Any, options: WordCountOptions, observer: RoundObserver | None = None
) -> TrackedReport:
    """Run the word count of ``options.input`` into ``options.output``; the report says how."""
    return WordCount(spark, options, observer).run()


def _settings(spark: Any, opts: WordCountOptions) -> dict[str, Any]:
    tracker = opts.tracker if opts.tracking else None
    return {
        "input": opts.input,
        "master": "spark-connect" if is_connect(spark) else spark.conf.get("spark.master", None),
        "partitions": opts.partitions,
        "timeout": opts.timeout,
        "max_attempts": opts.max_attempts,
        "crash_rate": opts.faults.crash_rate,
        "drop_rate": opts.faults.drop_rate,
        "seed": opts.faults.seed,
        "table": tracker.table if tracker else None,
        "endpoint_url": tracker.endpoint_url if tracker else None,
    }


def _totals(spark: Any, output: str) -> dict[str, int]:
    """Words and distinct words in the counts written to ``output`` (read where Spark runs,
    unless it is a local folder of classic Spark's driver)."""
    if is_remote(output) or is_connect(spark):
        from pyspark.sql import functions as F

        row = (
            spark.read.option("header", "true")
            .schema("word string, count long")
            .csv(output)
            .agg(F.count(F.lit(1)).alias("distinct"), F.sum("count").alias("words"))
            .first()
        )
        return {"words": int(row["words"] or 0), "distinct_words": int(row["distinct"] or 0)}
    counts = read_output(output)
    return {"words": sum(counts.values()), "distinct_words": len(counts)}
