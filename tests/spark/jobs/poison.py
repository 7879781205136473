"""A user's per-input job with two bad inputs among fifty; prints the report (JSON).

``in-07``'s function always raises; ``in-31``'s kills its own Python worker
(SIGKILL).  Every other input returns ``n % 5 + 1`` rows ``(key, j)``.  Run as
``python poison.py OUTPUT --master local[2]`` (no task retries) or through
``spark-submit --master spark://...``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

RAISES, CRASHES = "in-07", "in-31"
KEYS = [f"in-{i:02d}" for i in range(50)]


def rows_of(key: str) -> list[tuple[str, int]]:
    return [(key, j) for j in range(int(key[3:]) % 5 + 1)]


def process(key: str, rows: Any) -> Any:
    import pyarrow as pa

    if key == RAISES:
        raise ValueError(f"bad input {key}")
    if key == CRASHES:
        os.kill(os.getpid(), signal.SIGKILL)
    found = rows_of(key)
    return pa.table({"key": [k for k, _ in found], "j": [j for _, j in found]})


def main() -> int:
    from pyspark.sql import SparkSession

    from xor_ack_dynamodb.spark import Sink, track

    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("--master")
    parser.add_argument("--table", required=True)
    parser.add_argument("--endpoint", required=True)
    args = parser.parse_args()
    builder = SparkSession.builder.appName("poison").config("spark.ui.enabled", "false")
    if args.master:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(args.master).config("spark.sql.shuffle.partitions", "4")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")
    report = track(
        spark,
        process,
        "key string, j long",
        Sink(args.output),
        keys=KEYS,
        table=args.table,
        endpoint_url=args.endpoint,
        region="us-east-1",
    )
    print(json.dumps(report.as_dict()))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
