"""What tracking costs a Spark job: the same job with and without chains, in one run.

Runs on one SparkSession against DynamoDB Local (started here, on 127.0.0.1, its
table as ``xor-ack table create`` makes it), every DynamoDB request of the driver
and of the Python workers through a counting proxy (``client/counting_proxy.py``:
requests, write and read units by AWS's rules), alternating untracked and tracked
runs after one warm-up run of each, and prints Markdown tables.

The word count (``run_wordcount``, the library's): wall time (median and min over
the repetitions), the chains' writes (per file), where the tracked run's time went
(seconds per phase, summed over rounds), and the overhead (of the medians, and of
the minimums: the fastest run is the one least disturbed by other load).  First
``--warm-up`` inputs as keys go through DynamoDB Local (below), and each run's CPU
per process is kept in the JSON (the driver's Python, its JVM, the Python workers,
DynamoDB Local and its JIT compiler threads).  ``--no-stream``: the table without
its stream.

    python benchmarks/bench_pipeline.py --files 200 --lines 170 --reps 5
    python benchmarks/bench_pipeline.py --files 40 --lines 42000 --reps 5

Inputs as keys (``--keys``, ``pipeline_scale.py``): a DataFrame whose key column
names N inputs (4 rows each), a pass-through function, Parquet out; per N the
tracking cost per input, requests and write units per input, the driver's peak
RSS (its Python and its JVM) against a run of 10 inputs, and whether each tracked
run was exact; then the on-paper sizing of 1,000,000 inputs an hour.  N of 100,000
or more runs once each way.  Before the timed runs, one untracked and one tracked run
of ``--warm-up`` inputs (5,000): DynamoDB Local is a JVM whose JIT is still compiling
its write path after a few thousand writes (its CPU per create fell from 3.7 to 1.3 ms
over its first 6,000 here), which DynamoDB does not have to do.  ``--memory N``: the driver's
peak RSS (its Python and its JVM) of one run each in a fresh driver process: tracked
over 10 inputs (the empty run), tracked over N, untracked over N (``--driver-memory
512m``: each with that driver heap, Spark's default being 1g).  ``--keys N --repeat R``:
R tracked runs in one driver, its Python's memory after each.  ``--list-files N``:
N small files listed both ways.

    python benchmarks/bench_pipeline.py --keys 1000 10000 100000 --reps 3
    python benchmarks/bench_pipeline.py --memory 100000 --standalone

``--json FILE`` also writes every run's numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# tests.spark.servers: the standalone cluster the tests start (``--standalone``)
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from client.counting_proxy import CountingProxy
from pipeline_scale import Peak, create_bench_table, jvm_pid, keys_run, list_files, load, sizing
from results_file import recorded_args

from xor_ack_dynamodb.local import LocalDynamoDB
from xor_ack_dynamodb.pipeline.corpus import generate
from xor_ack_dynamodb.pipeline.job import WordCountOptions, run_wordcount
from xor_ack_dynamodb.pipeline.spark import build_session
from xor_ack_dynamodb.spark.paging import DEFAULT_PAGE_SIZE
from xor_ack_dynamodb.spark.tracker import TrackerConfig
from xor_ack_dynamodb.table import TableSpec

ROOT = Path(__file__).resolve().parents[1]


def bench_tracker(table: str, endpoint_url: str) -> TrackerConfig:
    """The chains' place for every run and process of a benchmark: the proxy in front of
    DynamoDB Local, with its dummy credentials."""
    return TrackerConfig(
        table=table, endpoint_url=endpoint_url, region="us-east-1", local_credentials=True
    )


def one_run(
    spark: Any,
    corpus: Path,
    out: Path,
    tracker: TrackerConfig | None,
    partitions: int | None,
    proxy: CountingProxy,
    ddb_pid: int | None = None,
) -> dict[str, Any]:
    options = WordCountOptions(
        input=str(corpus),
        output=str(out),
        tracking=tracker is not None,
        tracker=tracker,
        partitions=partitions,
        overwrite=True,  # every repetition writes the same folders
    )
    proxy.reset()
    with Peak(jvm_pid(spark), ddb_pid) as peak:
        start = time.monotonic()
        report = run_wordcount(spark, options)
        wall = time.monotonic() - start
    if tracker is not None and not report.ok:
        raise SystemExit(f"a tracked run did not ack every file: {report.failed_count} failed")
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
        "dynamodb": proxy.stats(),
        "memory": peak.as_dict(),
        "cpu_seconds": peak.cpu,
    }


def files_mode(
    args: argparse.Namespace, work: Path, tracker: TrackerConfig, proxy: Any, ddb_pid: int | None
) -> Any:
    """The word count over a generated corpus, untracked and tracked, alternating."""
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
    try:
        # DynamoDB Local's JIT compiles its write path over thousands of writes, whose CPU
        # would otherwise land in the tracked runs: the same requests, many, first.
        warm = keys_run(
            spark, args.warm_up, work / "warm-keys", tracker, proxy, args.page_size, ddb_pid
        )
        print(
            f"warm-up DynamoDB Local: {args.warm_up:,} inputs as keys, {warm['wall']:.1f} s",
            file=sys.stderr,
        )
        for label in ("warm-up untracked", "warm-up tracked"):
            chosen = tracker if "untracked" not in label else None
            one_run(spark, info.root, work / "warm", chosen, args.partitions, proxy, ddb_pid)
            print(f"{label} done", file=sys.stderr)
        for rep in range(args.reps):
            order = (None, tracker) if rep % 2 == 0 else (tracker, None)
            for chosen in order:
                out = work / f"out-{rep}"
                run = one_run(spark, info.root, out, chosen, args.partitions, proxy, ddb_pid)
                run["rep"] = rep
                runs.append(run)
                mode = "tracked" if chosen else "untracked"
                print(f"rep {rep} {mode}: {run['wall']:.2f} s", file=sys.stderr)
    finally:
        spark.stop()
    print_files(args, info, runs)
    return runs


def print_files(args: argparse.Namespace, info: Any, runs: list[dict[str, Any]]) -> None:
    plain = [r for r in runs if not r["tracking"]]
    tracked = [r for r in runs if r["tracking"]]
    base_median = statistics.median(r["wall"] for r in plain)
    base_min = min(r["wall"] for r in plain)
    print(
        f"\n{info.files} files, {info.words:,} words ({args.lines} lines of ~"
        f"{args.words_per_line} words per file), shuffle partitions "
        f"{runs[0]['partitions'] or 'spark default'}, "
        f"{args.master}, {args.reps} repetitions, Python {platform.python_version()}, "
        f"load average {load()} at the end\n"
    )
    print(
        "| mode | wall s (median) | wall s (min) | chain writes (per file) | overhead (median) "
        "| overhead (min) | requests (per file) | write units (per file) "
        "| seconds per phase (last run) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
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
        requests = last["dynamodb"]["total_requests"]
        wru = last["dynamodb"]["wru"]
        phases = ", ".join(f"{k} {v:.2f}" for k, v in last["seconds"].items())
        print(
            f"| {name} | {median:.2f} | {fastest:.2f} | {last['writes']:,}{per} "
            f"| {over_median} | {over_min} | {requests:,} ({requests / info.files:.2f}) "
            f"| {wru:,.0f} ({wru / info.files:.2f}) | {phases} |"
        )


def keys_mode(
    args: argparse.Namespace, work: Path, tracker: TrackerConfig, proxy: Any, ddb_pid: int | None
) -> dict[str, Any]:
    """Inputs as keys at each N of ``--keys``: untracked and tracked, alternating."""
    spark = build_session(args.master, shuffle_partitions=max(2, args.partitions or 2))
    runs: list[dict[str, Any]] = []

    def run(n: int, chosen: TrackerConfig | None, label: str) -> dict[str, Any]:
        out = work / f"keys-{n}-{'t' if chosen else 'u'}"
        figures = keys_run(spark, n, out, chosen, proxy, args.page_size, ddb_pid)
        figures["label"] = label
        runs.append(figures)
        extra = "" if chosen is None else f", exact {figures['exact']}"
        print(f"{label} {n:,} inputs: {figures['wall']:.2f} s{extra}", file=sys.stderr)
        return figures

    try:
        run(args.warm_up, None, "warm-up untracked")
        run(args.warm_up, tracker, "warm-up tracked")
        empty = run(10, tracker, "empty tracked")
        for n in args.keys:
            reps = 1 if n >= 100_000 else args.reps
            for rep in range(reps):
                order = (None, tracker) if rep % 2 == 0 else (tracker, None)
                for chosen in order:
                    run(n, chosen, f"rep {rep} {'tracked' if chosen else 'untracked'}")
    finally:
        spark.stop()
    return {"runs": runs, "empty": empty, "table": print_keys(args, runs, empty)}


def print_keys(
    args: argparse.Namespace, runs: list[dict[str, Any]], empty: dict[str, Any]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    print(
        f"\nInputs as keys (4 rows each, pass-through, Parquet out), {args.master}, page size "
        f"{args.page_size:,}, Python {platform.python_version()}, load average {load()} "
        "at the end\n"
    )
    print(
        "| inputs | untracked s | tracked s | tracking per input | requests per input "
        "| write units per input | read units per input | driver peak RSS, Python / JVM "
        "(vs 10 inputs) | exact |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    base_py, base_jvm = empty["memory"]["python_peak_mib"], empty["memory"]["jvm_peak_mib"]
    for n in args.keys:
        plain = [
            r["wall"]
            for r in runs
            if r["inputs"] == n and not r["tracking"] and "rep" in r["label"]
        ]
        mine = [r for r in runs if r["inputs"] == n and r["tracking"] and "rep" in r["label"]]
        untracked, tracked = statistics.median(plain), statistics.median(r["wall"] for r in mine)
        last = mine[-1]
        py = max(r["memory"]["python_peak_mib"] for r in mine)
        jvm = max(r["memory"]["jvm_peak_mib"] for r in mine)
        row = {
            "inputs": n,
            "untracked_s": round(untracked, 2),
            "tracked_s": round(tracked, 2),
            "ms_per_input": round((tracked - untracked) / n * 1000, 3),
            "requests_per_input": last["requests_per_input"],
            "wru_per_input": last["wru_per_input"],
            "rru_per_input": last["rru_per_input"],
            "python_peak_growth_mib": round(py - base_py, 1),
            "jvm_peak_growth_mib": round(jvm - base_jvm, 1),
            "exact": all(r["exact"] for r in mine),
        }
        rows.append(row)
        print(
            f"| {n:,} | {untracked:.2f} | {tracked:.2f} | {row['ms_per_input']:.2f} ms "
            f"| {row['requests_per_input']:.3f} | {row['wru_per_input']:.2f} "
            f"| {row['rru_per_input']:.2f} | {row['python_peak_growth_mib']:+.0f} / "
            f"{row['jvm_peak_growth_mib']:+.0f} MiB | {'yes' if row['exact'] else 'NO'} |"
        )
    return rows


def memory_mode(
    args: argparse.Namespace, tracker: TrackerConfig, proxy: Any, master: str
) -> dict[str, Any]:
    """The driver's peak RSS of one run per fresh driver process (Python and JVM both
    start empty): tracked over 10 inputs, tracked over ``--memory`` inputs, untracked.

    On ``local[N]`` the driver's JVM runs the executors too; on a standalone cluster
    (``--standalone``) it is the driver alone, as where the people this is for run it."""
    n = args.memory
    runs: dict[str, dict[str, Any]] = {}
    for label, inputs, tracked in (
        ("empty tracked", 10, True),
        ("tracked", n, True),
        ("untracked", n, False),
    ):
        child = json.dumps(
            {"inputs": inputs, "tracked": tracked, "endpoint": proxy.endpoint_url}
            | {"table": tracker.table, "master": master, "page_size": args.page_size}
            | {"driver_memory": args.driver_memory}
        )
        done = subprocess.run(
            [sys.executable, __file__, "--one-run", child],
            check=False,
            capture_output=True,
            text=True,
            env=os.environ | {"AWS_ENDPOINT_URL_DYNAMODB": proxy.endpoint_url},
        )
        if done.returncode != 0:
            raise SystemExit(f"the {label} run failed:\n{done.stderr[-3000:]}")
        run = json.loads(done.stdout.strip().splitlines()[-1])
        run["label"] = label
        runs[label] = run
        memory = run["memory"]
        print(
            f"{label} {inputs:,} inputs: {run['wall']:.2f} s, peak RSS Python "
            f"{memory['python_peak_mib']:.0f} MiB + JVM {memory['jvm_peak_mib']:.0f} MiB"
            + (f", exact {run['exact']}" if tracked else ""),
            file=sys.stderr,
        )

    where = "a standalone cluster (2 workers of 1 core)" if master != args.master else master
    heap = args.driver_memory or "Spark's default (1g)"

    def total(label: str) -> float:
        memory = runs[label]["memory"]
        return float(memory["python_peak_mib"] + memory["jvm_peak_mib"])

    print(
        f"\nThe driver's peak RSS, one run per fresh driver process, {where}, page size "
        f"{args.page_size:,}, driver heap {heap}, Python {platform.python_version()}, "
        f"load average {load()} "
        "at the end\n"
    )
    print("| run | inputs | Python MiB | JVM MiB | both MiB | both vs the empty run | exact |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for label, run in runs.items():
        memory = run["memory"]
        growth = total(label) - total("empty tracked")
        exact = "-" if "exact" not in run else "yes" if run["exact"] else "NO"
        print(
            f"| {label} | {run['inputs']:,} | {memory['python_peak_mib']:.0f} "
            f"| {memory['jvm_peak_mib']:.0f} | {total(label):.0f} | {growth:+.0f} MiB "
            f"| {exact} |"
        )
    own = total("tracked") - total("untracked")
    print(
        f"\nTracking's own part: the tracked run over the untracked one of the same size, "
        f"{own:+.0f} MiB (the untracked run's growth is Spark's, and the JVM's choice of heap)"
    )
    return {
        "runs": runs,
        "tracked_growth_mib": round(total("tracked") - total("empty tracked"), 1),
        "tracking_part_mib": round(own, 1),
    }


def repeat_mode(
    args: argparse.Namespace, work: Path, tracker: TrackerConfig, proxy: Any
) -> dict[str, Any]:
    """``--repeat R``: R tracked runs over ``--keys`` inputs in one driver (as a long-lived
    driver, or ``track_stream``'s one ``track()`` per batch, makes them), the driver's
    Python after each: its RSS and the heap Python itself holds (``tracemalloc``)."""
    import gc
    import tracemalloc

    n = args.keys[0]
    spark = build_session(args.master, shuffle_partitions=2)
    runs = []
    try:
        tracemalloc.start()
        for i in range(args.repeat):
            run = keys_run(spark, n, work / "out", tracker, proxy, args.page_size)
            gc.collect()
            run["python_traced_mib"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 2)
            runs.append(run)
            print(
                f"run {i + 1}: {run['wall']:.1f} s, exact {run['exact']}, driver Python RSS "
                f"{run['memory']['python_after_mib']:.1f} MiB, traced "
                f"{run['python_traced_mib']:.2f} MiB",
                file=sys.stderr,
            )
    finally:
        tracemalloc.stop()
        spark.stop()
    print(
        f"\n{args.repeat} tracked runs of {n:,} inputs as keys in one driver, {args.master}, "
        f"page size {args.page_size:,}, Python {platform.python_version()}, load average "
        f"{load()} at the end\n"
    )
    print("| run | s | exact | driver Python RSS after, MiB | held by Python (traced), MiB |")
    print("| ---: | ---: | --- | ---: | ---: |")
    for i, run in enumerate(runs, 1):
        print(
            f"| {i} | {run['wall']:.1f} | {'yes' if run['exact'] else 'NO'} "
            f"| {run['memory']['python_after_mib']:.1f} | {run['python_traced_mib']:.2f} |"
        )
    return {"runs": runs}


def one_run_child(args: argparse.Namespace) -> int:
    """One keys run in this fresh process (``--memory``'s child); its figures as JSON."""
    given = json.loads(args.one_run)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("AWS_REGION", "us-east-1")
    tracker = bench_tracker(given["table"], given["endpoint"])
    master = given["master"]
    extra = {}
    if given["driver_memory"]:  # the driver JVM's -Xmx, set before it starts
        extra["spark.driver.memory"] = given["driver_memory"]
    if master.startswith("spark://"):  # the driver here, the executors in the workers
        extra |= {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.executorEnv.PYTHONPATH": str(ROOT),
        }
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # what the executors run
    spark = build_session(master, shuffle_partitions=2, extra=extra)
    try:
        with tempfile.TemporaryDirectory(prefix="xor-ack-bench-") as tmp:
            figures = keys_run(
                spark,
                given["inputs"],
                Path(tmp) / "out",
                tracker if given["tracked"] else None,
                _NoProxy(),
                given["page_size"],
            )
    finally:
        spark.stop()
    print(json.dumps(figures))
    return 0


class _NoProxy:
    """A child's stand-in for the counting proxy (the parent's proxy counts its requests)."""

    def reset(self) -> None:
        pass

    def stats(self) -> dict[str, Any]:
        return {"total_requests": 0, "wru": 0.0, "rru": 0.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--lines", type=int, default=170)
    parser.add_argument("--words-per-line", type=int, default=12)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=None, help="default: cores")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keys", type=int, nargs="*", help="inputs as keys: these N")
    parser.add_argument(
        "--page-size", type=int, default=DEFAULT_PAGE_SIZE, help="default: track()'s"
    )
    parser.add_argument("--list-files", type=int, help="list this many small files")
    parser.add_argument("--warm-up", type=int, default=5_000, help="inputs of the warm-up runs")
    parser.add_argument(
        "--memory", type=int, help="the driver's peak RSS, a fresh process per run, at N inputs"
    )
    parser.add_argument(
        "--standalone",
        action="store_true",
        help="--memory on a standalone cluster started here (2 workers of 1 core each)",
    )
    parser.add_argument(
        "--no-stream", action="store_true", help="the table without its stream (see pipeline_scale)"
    )
    parser.add_argument(
        "--first-tier",
        action="store_true",
        help="DynamoDB Local with the JIT's first tier only (as LocalDynamoDB runs it)",
    )
    parser.add_argument(
        "--driver-memory",
        help="--memory with this driver heap (spark.driver.memory, e.g. 512m) in every run",
    )
    parser.add_argument(
        "--repeat", type=int, help="with --keys N: this many tracked runs in one driver"
    )
    parser.add_argument("--one-run", help=argparse.SUPPRESS)  # a child of --memory
    parser.add_argument("--json", type=Path, help="also write every run's numbers here")
    args = parser.parse_args(argv)
    if args.one_run:
        return one_run_child(args)

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    result: dict[str, Any] = {"args": recorded_args(args), "load_start": load()}
    with tempfile.TemporaryDirectory(prefix="xor-ack-bench-") as tmp:
        work = Path(tmp)
        with (
            LocalDynamoDB(backend="dynamodb-local", full_jit=not args.first_tier) as db,
            CountingProxy(db.endpoint_url) as proxy,
        ):
            os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = proxy.endpoint_url  # the library's way
            os.environ.setdefault("AWS_REGION", "us-east-1")
            tracker = bench_tracker("xor-ack-bench", proxy.endpoint_url)
            create_bench_table(
                tracker.client(), TableSpec(name=tracker.table), stream=not args.no_stream
            )
            if args.memory and args.standalone:
                from tests.spark.servers import standalone_cluster

                (work / "standalone").mkdir()
                with standalone_cluster(work / "standalone", workers=2) as url:
                    result["memory"] = memory_mode(args, tracker, proxy, url)
            elif args.memory:
                result["memory"] = memory_mode(args, tracker, proxy, args.master)
            elif args.repeat and args.keys:
                result["repeat"] = repeat_mode(args, work, tracker, proxy)
            elif args.list_files:
                spark = build_session(args.master, shuffle_partitions=2)
                try:
                    result["listing"] = list_files(spark, work / "files", args.list_files)
                finally:
                    spark.stop()
                print(json.dumps(result["listing"], indent=2))
            elif args.keys:
                result.update(keys_mode(args, work, tracker, proxy, db.pid))
                sized = result["table"][-1]
                tracked = [
                    r for r in result["runs"] if r["inputs"] == sized["inputs"] and r["tracking"]
                ]
                cpu = tracked[-1]["cpu_seconds"]["driver_python"] / sized["inputs"] * 1000
                result["sizing"] = sizing(
                    sized["requests_per_input"], sized["wru_per_input"], sized["rru_per_input"], cpu
                )
                print("\n1,000,000 inputs an hour, on paper:", json.dumps(result["sizing"]))
            else:
                result["runs"] = files_mode(args, work, tracker, proxy, db.pid)
    result["load_end"] = load()
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
