"""A user's job on ``local[2]`` whose workers' Python lacks this library; prints what stopped it.

Run with ``PYSPARK_PYTHON`` naming such a Python.  First the check that
``track()`` runs before its first round over Spark Connect (here called directly,
on classic Spark), then ``track()`` itself with overwrite onto ``OUTPUT``: each
must stop with one line (``Incurable``) naming the missing module.  Then a new
session whose ``PYSPARK_PYTHON`` does not exist: ``track()`` stops after one round.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

KEYS = [f"in-{i}" for i in range(6)]


def process(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key], "j": [int(key[3:])]})


def main() -> int:
    from pyspark.sql import SparkSession

    from xor_ack_dynamodb.spark import Incurable, Sink, track
    from xor_ack_dynamodb.spark.connect_check import check_server

    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("--table", required=True)
    parser.add_argument("--endpoint", required=True)
    args = parser.parse_args()
    said: dict[str, Any] = {}

    def session() -> Any:
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("FATAL")
        return spark

    def run(spark: Any, name: str) -> None:
        try:
            track(
                spark,
                process,
                "key string, j long",
                Sink(args.output, overwrite=True),
                keys=KEYS,
                table=args.table,
                endpoint_url=args.endpoint,
                region="us-east-1",
            )
        except Incurable as exc:
            said[name] = str(exc)
            said[f"{name}_rounds"] = len(getattr(exc.report, "rounds", []))

    spark = session()
    try:
        check_server(spark)
    except Incurable as exc:
        said["check"] = str(exc)
    run(spark, "track")
    spark.stop()
    os.environ["PYSPARK_PYTHON"] = "/nonexistent/python9"  # read by the next SparkContext
    spark = session()
    run(spark, "no_python")
    print(json.dumps(said))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
