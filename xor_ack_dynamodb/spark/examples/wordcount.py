"""The word count as a tracked job: per file its words' counts, then the sum over files.

Each input is a text file; the function counts the words of one file (lines
lower-cased, ``\\w+`` matches, ``pipeline.words``) and returns ``(word, n)``
rows; the sink sums them by word over the acked files and writes CSV
``word,count``.  The source is Spark's text reader with the file of each line
taken from the ``_metadata.file_path`` column, so it runs on a cluster and over
Spark Connect alike.
"""

from __future__ import annotations

from typing import Any

from ...pipeline.faults import FaultConfig
from ...pipeline.words import count_lines
from .. import Sink, TrackedReport, track

SCHEMA = "word string, n long"


def count_file(key: str, rows: Any) -> Any:
    """One file's ``(word, n)`` rows, from its lines (column ``value``)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    counts = count_lines([str(line) for line in rows.column("value").to_pylist()])
    words = sorted(counts)
    return pa.table({"word": words, "n": [counts[w] for w in words]})


def total_by_word(rows: Any) -> Any:
    from pyspark.sql import functions as F

    return rows.groupBy("word").agg(F.sum("n").cast("long").alias("count"))


def wordcount(
    spark: Any,
    input_: str,
    output: str,
    *,
    table: str | None = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    faults: FaultConfig | None = None,
    partitions: int | None = None,
    max_attempts: int = 8,
    tracking: bool = True,
    overwrite: bool = False,
) -> TrackedReport:
    """Count the words of the text files under ``input_`` into ``output`` (CSV), tracked."""
    from pyspark.sql import functions as F

    lines = (
        spark.read.option("recursiveFileLookup", "true")
        .text(input_)
        .select("value", F.col("_metadata.file_path").alias("file"))
    )
    return track(
        spark,
        count_file,
        SCHEMA,
        Sink(
            output,
            format="csv",
            options={"header": "true"},
            finish=total_by_word,
            files=1,
            overwrite=overwrite,
        ),
        source=lines,
        key="file",
        table=table,
        endpoint_url=endpoint_url,
        region=region,
        faults=faults,
        partitions=partitions,
        max_attempts=max_attempts,
        tracking=tracking,
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m xor_ack_dynamodb.spark.examples.wordcount INPUT OUTPUT --table T``.

    The session is whatever the environment asks for: ``SPARK_REMOTE=sc://...``
    (Spark Connect), the master ``spark-submit --master ...`` set, or ``local[*]``.
    Prints the report (JSON); exit status 0 when every input was acked.
    """
    import argparse

    from pyspark.sql import SparkSession

    parser = argparse.ArgumentParser(prog="wordcount", description=main.__doc__)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--table")
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--fail-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName("xor-ack-wordcount-example").getOrCreate()
    report = wordcount(
        spark,
        args.input,
        args.output,
        table=args.table,
        faults=FaultConfig.rate(args.fail_rate, seed=args.seed),
        partitions=args.partitions,
    )
    print(report.to_json())
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
