"""``xor-ack wordcount --remote sc://...`` (or ``SPARK_REMOTE``): the count over Spark Connect.

The RDD stages of the classic word count cannot run over Spark Connect, so this
runs the library's word count (``xor_ack_dynamodb.spark.examples.wordcount``,
DataFrame API only) on the server: the same CSV output (header ``word,count``),
every file tracked, replayed and committed once, the report as JSON.  The
server's executors get the chains' table from the command, never from the
client's environment.  Only PySpark's Connect client is imported here.
"""

from __future__ import annotations

from pathlib import Path

import click

from .._cli.errors import UserError
from .faults import FaultConfig
from .paths import write_atomically
from .tracker import TrackerConfig


def run_remote(
    url: str,
    input_path: str,
    output: str,
    report_path: Path | None,
    tracker: TrackerConfig,
    faults: FaultConfig,
    partitions: int | None,
    max_attempts: int,
    overwrite: bool,
) -> None:
    """Count over the Spark Connect server at ``url``; exit 1 if a file failed."""
    from pyspark.sql import SparkSession

    from ..spark.examples.wordcount import wordcount

    click.echo(f"connecting to Spark Connect at {url}", err=True)
    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        report = wordcount(
            spark,
            input_path,
            output,
            table=tracker.table,
            endpoint_url=tracker.endpoint_url,
            region=tracker.region,
            faults=faults,
            partitions=partitions,
            max_attempts=max_attempts,
            overwrite=overwrite,
        )
    finally:
        spark.stop()
    if report_path is not None:
        write_atomically(report_path, report.to_json())
    replayed = sum(1 for i in report.inputs if i.attempts > 1)
    click.echo(
        f"{report.acked} of {len(report.inputs)} files acked in {len(report.rounds)} rounds "
        f"({replayed} replayed), {report.chain_writes} chain writes; counts: {output}",
        err=True,
    )
    if not report.ok:
        raise UserError(
            f"{len(report.failed)} of {len(report.inputs)} files failed (see the report)"
        )
