"""What the staged rows' two hash lanes cost Spark's Parquet writer, with and without a dictionary.

A tracked round stages each row with its input id and the two 64-bit lanes of its
hash (``stages.STAGED_DDL``).  The lanes are random values: a dictionary never
encodes them smaller, but Parquet's writer tries one per column chunk before it
falls back.  This writes the same cached rows (a word, a count, an input id, two
lanes) with ``local[2]``, the cases alternating, and prints the median and fastest
seconds per write:

- ``zero lanes``: the lanes all 0 (what an untracked run stages);
- ``random lanes``: Parquet's defaults (a dictionary tried on every column);
- ``random lanes, no dictionary for them``: ``stages.STAGED_PARQUET``, what a
  tracked run writes with;
- ``random lanes, no dictionary at all``.

    python benchmarks/bench_staged_parquet.py --rows 400000 --reps 8 --json FILE
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import recorded_args

from xor_ack_dynamodb.pipeline.spark import build_session
from xor_ack_dynamodb.spark.stages import HASH_HIGH, HASH_LOW, ID, STAGED_PARQUET


def frames(spark: Any, rows: int) -> tuple[Any, Any]:
    """The staged rows with random lanes, and the same with zero lanes (both cached)."""
    from pyspark.sql import functions as F

    random = spark.range(0, rows, numPartitions=16).select(
        F.concat(F.lit("w"), (F.col("id") % 5000).cast("string")).alias("word"),
        (F.col("id") % 7).alias("n"),
        (F.col("id") % 200).cast("int").alias(ID),
        F.xxhash64("id").alias(HASH_HIGH),
        F.xxhash64(F.col("id") + 1).alias(HASH_LOW),
    )
    zero = random.withColumn(HASH_HIGH, F.lit(0).cast("long")).withColumn(
        HASH_LOW, F.lit(0).cast("long")
    )
    for frame in (random, zero):
        frame.cache().count()
    return random, zero


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--json", type=Path, help="also write every write's seconds here")
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = build_session("local[2]", shuffle_partitions=2)
    seconds: dict[str, list[float]] = {}
    try:
        random, zero = frames(spark, args.rows)
        cases = {
            "zero lanes": (zero, {}),
            "random lanes": (random, {}),
            "random lanes, no dictionary for them": (random, STAGED_PARQUET),
            "random lanes, no dictionary at all": (random, {"parquet.enable.dictionary": "false"}),
        }
        with tempfile.TemporaryDirectory(prefix="xor-ack-bench-") as tmp:
            for rep in range(args.reps + 1):  # the first round warms the writer up
                for n, (name, (frame, options)) in enumerate(cases.items()):
                    start = time.monotonic()
                    frame.write.mode("overwrite").options(**options).parquet(f"{tmp}/{n}")
                    if rep:
                        seconds.setdefault(name, []).append(time.monotonic() - start)
    finally:
        spark.stop()
    print(f"\n{args.rows:,} staged rows, local[2], {args.reps} writes per case\n")
    print("| staged lanes | seconds per write (median) | fastest |")
    print("| --- | ---: | ---: |")
    for name, times in seconds.items():
        print(f"| {name} | {statistics.median(times):.3f} | {min(times):.3f} |")
    if args.json:
        args.json.write_text(
            json.dumps({"args": recorded_args(args), "seconds": seconds}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
