"""A user's word count over Spark Connect, to a folder and to a catalog table; prints both reports.

Everything it reads and writes is on the server's side: the corpus, the output
folder, the table (in the server's ``spark.sql.warehouse.dir``).  The tests run it
as an OS user that cannot read or write any of them, so any step the library took
on the client's own disk would fail.  Then runs that must stop at once: one to a
relative path (refused on the client), one to a symbolic link on the server's disk
(refused before its chains: the commit's rename would replace the link), one that would
overwrite an output holding entries its manifest does not name (a dangling link, a
``.X.crc`` file, which Hadoop's local listing leaves out), one whose function needs a
module the server's workers do not have (one round, one line).

``python remote.py CORPUS OUTPUT TABLE --table CHAINS --endpoint URL [--fail-rate R --seed N]
[--link LINK] [--theirs FOLDER]``
with ``SPARK_REMOTE=sc://...`` set.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from typing import Any


def count_file(key: str, rows: Any) -> Any:
    import pyarrow as pa

    counts: Counter[str] = Counter()
    for line in rows.column("value").to_pylist():
        counts.update(re.findall(r"\w+", line.lower()))
    return pa.table({"word": list(counts), "n": list(counts.values())})


def main() -> int:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from xor_ack_dynamodb.spark import (
        FaultConfig,
        Incurable,
        OutputNotOurs,
        OutputUnusable,
        RelativePath,
        Sink,
        input_file,
        track,
    )

    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("output")
    parser.add_argument("table")
    parser.add_argument("--table-of-chains", dest="chains", required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--fail-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--link", help="a symbolic link on the server's disk: refused as a sink")
    parser.add_argument("--theirs", help="an output holding entries its manifest does not name")
    args = parser.parse_args()
    spark = SparkSession.builder.getOrCreate()  # SPARK_REMOTE
    lines = spark.read.option("recursiveFileLookup", "true").text(args.corpus)
    source = lines.select("value", input_file().alias("file"))
    options: dict[str, Any] = {
        "source": source,
        "key": "file",
        "table": args.chains,
        "endpoint_url": args.endpoint,
        "region": "us-east-1",
        "partitions": 4,
        "faults": FaultConfig.rate(args.fail_rate, seed=args.seed),
    }

    def total(rows: Any) -> Any:
        return rows.groupBy("word").agg(F.sum("n").alias("count"))

    to_folder = track(
        spark,
        count_file,
        "word string, n long",
        Sink(args.output, format="csv", options={"header": "true"}, finish=total, files=1),
        **options,
    )
    database = args.table.rpartition(".")[0]
    if database:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    to_table = track(spark, count_file, "word string, n long", Sink(table=args.table), **options)
    table_rows = spark.table(args.table).groupBy("word").agg(F.sum("n").alias("n")).collect()
    stopped: dict[str, Any] = {}
    try:
        track(spark, count_file, "word string, n long", Sink("relative/out"), **options)
    except RelativePath as exc:
        stopped["relative"] = str(exc)
    if args.link:
        try:
            track(spark, count_file, "word string, n long", Sink(args.link), **options)
        except OutputUnusable as exc:
            stopped["link"] = str(exc)
    if args.theirs:
        # The server loses the session's file helper (a restart under a session id the
        # client pins): the next file step registers it again.
        spark.sql("DROP TEMPORARY FUNCTION IF EXISTS xor_ack_files")
        try:
            sink = Sink(args.theirs, overwrite=True)
            track(spark, count_file, "word string, n long", sink, **options)
        except OutputNotOurs as exc:
            stopped["theirs"] = str(exc)
    try:
        options.update(source=None, key=None, keys=["a", "b", "c"], faults=None)
        track(spark, needs_a_module, "word string, n long", Sink(args.output + "-2"), **options)
    except Incurable as exc:
        stopped["missing"] = str(exc)
        stopped["rounds"] = len(getattr(exc.report, "rounds", []))
    print(
        json.dumps(
            {
                "folder": to_folder.as_dict(),
                "table": to_table.as_dict(),
                "table_counts": {r["word"]: int(r["n"]) for r in table_rows},
                "stopped": stopped,
            }
        )
    )
    return 0


def needs_a_module(key: str, rows: Any) -> Any:
    import xor_ack_module_nowhere  # type: ignore[import-not-found]  # noqa: F401

    return None


if __name__ == "__main__":
    raise SystemExit(main())
