"""What tracking costs the word count: the same corpus with and without chains.

Runs ``run_wordcount`` (the library's word count, ``xor_ack_dynamodb.spark``) on
one SparkSession against DynamoDB Local (started here, on 127.0.0.1),
alternating untracked and tracked runs, after one warm-up run of each (JVM,
Python workers and DynamoDB Local warmed up), and prints a Markdown table: wall
time (median and min over the repetitions), the chains' writes (per file), where
the tracked run's time went (seconds per phase, summed over rounds), and the
overhead (of the medians, and of the minimums: the fastest run is the one least
disturbed by other load on the machine).

    python benchmarks/bench_pipeline.py --files 200 --lines 170 --reps 5
    python benchmarks/bench_pipeline.py --files 40 --lines 8400 --reps 5
    python benchmarks/bench_pipeline.py --files 40 --lines 42000 --reps 5
    python benchmarks/bench_pipeline.py --files 80 --lines 42000 --reps 3

``--json FILE`` also writes every run's numbers.
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
from xor_ack_dynamodb.spark.tracker import TrackerConfig
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
    if tracker is not None and not report.ok:
        raise SystemExit(f"a tracked run did not ack every file: {len(report.failed)} failed")
    phases: dict[str, float] = {}
    for summary in report.rounds:
        for phase, seconds in summary.seconds.items():
            phases[phase] = round(phases.get(phase, 0.0) + seconds, 3)
    phases.update(report.seconds)
    return {
        "tracking": tracker is not None,
        "wall": wall,
        "words": report.totals["words"],
        "writes": report.chain_writes,
        "writes_per_file": report.writes_per_input,
        "rounds": len(report.rounds),
        "seconds": phases,
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
        run_once = one_run
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
        f"{args.words_per_line} words per file), shuffle partitions "
        f"{runs[0]['partitions'] or 'spark default'}, "
        f"{args.master}, {args.reps} repetitions, Python {platform.python_version()}, "
        f"load average {load:.1f} at the end\n"
    )
    print(
        "| mode | wall s (median) | wall s (min) | chain writes (per file) | overhead (median) "
        "| overhead (min) | seconds per phase (last run) |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, rows in (("untracked", plain), ("tracked", tracked)):
        median = statistics.median(r["wall"] for r in rows)
        fastest = min(r["wall"] for r in rows)
        if name == "untracked":
            over_median = over_min = "-"
        else:
            over_median = f"{(median / base_median - 1) * 100:+.0f} %"
            over_min = f"{(fastest / base_min - 1) * 100:+.0f} %"
        last = rows[-1]
        per = f" ({last['writes_per_file']:.1f})" if last["writes_per_file"] else ""
        phases = ", ".join(f"{k} {v:.2f}" for k, v in last["seconds"].items())
        print(
            f"| {name} | {median:.2f} | {fastest:.2f} | {last['writes']:,}{per} "
            f"| {over_median} | {over_min} | {phases} |"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "runs": runs}, indent=2)
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
