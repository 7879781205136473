"""What tracking costs the word count: the same corpus with and without chains.

Runs ``xor_ack_dynamodb.pipeline`` on one SparkSession against DynamoDB Local
(started here, on 127.0.0.1), alternating untracked and tracked runs, after one
warm-up run of each (JVM, Python workers and DynamoDB Local warmed up), and
prints a Markdown table: wall time (median and min over the repetitions),
DynamoDB requests and writes, records tracked per write, overhead (of the
medians, and of the minimums: the fastest run is the one least disturbed by
other load on the machine).

    python benchmarks/bench_pipeline.py --files 200 --lines 170 --reps 5
    python benchmarks/bench_pipeline.py --files 40 --lines 8400 --reps 5
    python benchmarks/bench_pipeline.py --files 40 --lines 42000 --reps 5
    python benchmarks/bench_pipeline.py --files 80 --lines 42000 --reps 3

``--json FILE`` also writes every run's numbers.  ``--library`` measures the
library's word count instead (``xor_ack_dynamodb.spark``, DataFrame API, three
chain writes per file): requests are then not counted, writes are the chains'.

    python benchmarks/bench_pipeline.py --library --files 40 --lines 8400 --reps 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from xor_ack_dynamodb.local import LocalDynamoDB
from xor_ack_dynamodb.pipeline.corpus import generate
from xor_ack_dynamodb.pipeline.job import WordCountOptions, run_wordcount
from xor_ack_dynamodb.pipeline.spark import build_session
from xor_ack_dynamodb.pipeline.tracker import TrackerConfig
from xor_ack_dynamodb.table import TableSpec, create_table


def one_run(
    spark: Any, corpus: Path, out: Path, tracker: TrackerConfig | None, partitions: int | None
) -> dict[str, Any]:
    options = WordCountOptions(
        input=str(corpus),
        output=str(out),
        tracking=tracker is not None,
        tracker=tracker,
        partitions=partitions,
        overwrite=True,  # every repetition writes the same folders
    )
    start = time.monotonic()
    report = run_wordcount(spark, options)
    wall = time.monotonic() - start
    ddb = report.totals["dynamodb"]
    if tracker is not None and not report.ok:
        raise SystemExit(f"a tracked run did not ack every file: {report.failed} failed")
    return {
        "tracking": tracker is not None,
        "wall": wall,
        "words": report.totals["words"],
        "requests": ddb["requests"],
        "writes": ddb["writes"],
        "records": report.totals["records"],
        "records_per_write": ddb["records_per_write"],
        "seconds": report.totals["seconds"],
        "partitions": report.settings["partitions"],
    }


def one_library_run(
    spark: Any, corpus: Path, out: Path, tracker: TrackerConfig | None, partitions: int | None
) -> dict[str, Any]:
    from xor_ack_dynamodb.spark.examples.wordcount import wordcount

    start = time.monotonic()
    report = wordcount(
        spark,
        str(corpus),
        str(out),
        table=tracker.table if tracker else None,
        tracking=tracker is not None,
        partitions=partitions,
        overwrite=True,
    )
    wall = time.monotonic() - start
    if tracker is not None and not report.ok:
        raise SystemExit(f"a tracked run did not ack every file: {len(report.failed)} failed")
    return {
        "tracking": tracker is not None,
        "wall": wall,
        "requests": 0,
        "writes": report.chain_writes,
        "records_per_write": None,
        "seconds": report.seconds,
        "partitions": partitions or 0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--lines", type=int, default=170)
    parser.add_argument("--words-per-line", type=int, default=12)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=None, help="default: cores")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--library", action="store_true", help="the xor_ack_dynamodb.spark job")
    parser.add_argument("--json", type=Path, help="also write every run's numbers here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="xor-ack-bench-") as tmp:
        work = Path(tmp)
        info = generate(
            work / "corpus",
            files=args.files,
            lines=args.lines,
            words_per_line=args.words_per_line,
            seed=args.seed,
        )
        print(f"corpus: {info.files} files, {info.words:,} words", file=sys.stderr)
        spark = build_session(args.master, shuffle_partitions=max(2, args.partitions or 2))
        runs: list[dict[str, Any]] = []
        run_once = one_library_run if args.library else one_run
        try:
            with LocalDynamoDB(backend="dynamodb-local") as db:
                os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = db.endpoint_url  # the library's way
                os.environ.setdefault("AWS_REGION", "us-east-1")
                tracker = TrackerConfig(
                    table="xor-ack-bench",
                    endpoint_url=db.endpoint_url,
                    region="us-east-1",
                    local_credentials=True,
                )
                create_table(tracker.client(), TableSpec(name=tracker.table))
                for label in ("warm-up untracked", "warm-up tracked"):
                    chosen = tracker if "untracked" not in label else None
                    run_once(spark, info.root, work / "warm", chosen, args.partitions)
                    print(f"{label} done", file=sys.stderr)
                for rep in range(args.reps):
                    order = (None, tracker) if rep % 2 == 0 else (tracker, None)
                    for chosen in order:
                        run = run_once(
                            spark, info.root, work / f"out-{rep}", chosen, args.partitions
                        )
                        run["rep"] = rep
                        runs.append(run)
                        mode = "tracked" if chosen else "untracked"
                        print(f"rep {rep} {mode}: {run['wall']:.2f} s", file=sys.stderr)
        finally:
            spark.stop()

    plain = [r for r in runs if not r["tracking"]]
    tracked = [r for r in runs if r["tracking"]]
    base_median = statistics.median(r["wall"] for r in plain)
    base_min = min(r["wall"] for r in plain)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"\n{info.files} files, {info.words:,} words ({args.lines} lines of ~"
        f"{args.words_per_line} words per file), {runs[0]['partitions']} counting tasks, "
        f"{args.master}, {args.reps} repetitions, Python {platform.python_version()}, "
        f"load average {load:.1f} at the end\n"
    )
    print(
        "| mode | wall s (median) | wall s (min) | DynamoDB requests | writes "
        "| records per write | overhead (median) | overhead (min) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, rows in (("untracked", plain), ("tracked", tracked)):
        median = statistics.median(r["wall"] for r in rows)
        fastest = min(r["wall"] for r in rows)
        if name == "untracked":
            over_median = over_min = "-"
        else:
            over_median = f"{(median / base_median - 1) * 100:+.0f} %"
            over_min = f"{(fastest / base_min - 1) * 100:+.0f} %"
        last = rows[-1]
        print(
            f"| {name} | {median:.2f} | {fastest:.2f} "
            f"| {last['requests']:,} | {last['writes']:,} "
            f"| {last['records_per_write'] if last['records_per_write'] else '-'} "
            f"| {over_median} | {over_min} |"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "runs": runs}, indent=2)
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
