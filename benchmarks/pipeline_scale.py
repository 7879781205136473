"""Tracking at scale: inputs as keys, the driver's memory, requests and write units per input.

Used by ``bench_pipeline.py --keys N ...`` (and ``--list-files N``).  The job: a
DataFrame whose ``key`` column names N inputs, 4 rows each (``v``: 0 .. 4N-1), a
pass-through function, Parquet out; tracked and untracked alternating on one
session, every process's DynamoDB requests through ``CountingProxy``.  A tracked
run is exact when every input is acked and the output holds each ``v`` once.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: DynamoDB on-demand, us-east-1, since 2024-11-01: dollars per million request units.
DOLLARS_PER_MILLION_WRU = 0.625
DOLLARS_PER_MILLION_RRU = 0.125
#: The sizing's target: inputs per hour from one driver.
TARGET_PER_HOUR = 1_000_000


def _rss_kib(pid: int | str = "self") -> int:
    """A process's resident set size now, in KiB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _stat(path: str) -> tuple[str, list[str]] | None:
    """A ``/proc/.../stat`` file: the name in it and the fields after the name (None if gone)."""
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read()
    except OSError:
        return None
    name, _, rest = text.partition("(")[2].rpartition(")")
    return name, rest.split()


def _seconds(fields: list[str], *, children: bool = False) -> float:
    """User + system CPU seconds of a ``_stat``'s fields (and its ended children's)."""
    ticks = fields[11:15] if children else fields[11:13]
    return sum(int(tick) for tick in ticks) / os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int | None) -> float:
    """A process's user + system CPU time so far (0 if unknown)."""
    stat = _stat(f"/proc/{pid}/stat") if pid else None
    return _seconds(stat[1]) if stat else 0.0


#: DynamoDB Local's threads by what they do (a part of the thread's name): its one SQLite
#: thread (every read and write of every table, one at a time), the HTTP request threads
#: (Jetty's pool: parsing requests, writing responses), and the JIT compiler.
DYNAMODB_LOCAL_THREADS = {"sqlite": "SQLiteQueue", "requests": "qtp", "jit": "CompilerThre"}


def thread_cpu_seconds(pid: int | None, groups: dict[str, str]) -> dict[str, float]:
    """CPU seconds so far of a process's threads, per group (``{group: part of the name}``;
    the rest under ``"other"``); every group 0 if the process is unknown."""
    out = dict.fromkeys([*groups, "other"], 0.0)
    try:
        threads = os.listdir(f"/proc/{pid}/task") if pid else []
    except OSError:
        return out
    for thread in threads:
        stat = _stat(f"/proc/{pid}/task/{thread}/stat")
        if stat is None:
            continue
        group = next((g for g, part in groups.items() if part in stat[0]), "other")
        out[group] += _seconds(stat[1])
    return out


def _compiler_cpu_seconds(pid: int | None) -> float:
    """CPU seconds of a JVM's JIT compiler threads so far (0 if unknown)."""
    jit = DYNAMODB_LOCAL_THREADS["jit"]
    return thread_cpu_seconds(pid, {"jit": jit})["jit"]


def _descendants_cpu_seconds(pid: int | None) -> float:
    """CPU seconds of every process under ``pid`` (the JVM's Python daemon and its forked
    workers: theirs so far, and their ended children's), not ``pid``'s own."""
    if not pid:
        return 0.0
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        stat = _stat(f"/proc/{entry}/stat")
        if stat is not None:
            children.setdefault(int(stat[1][1]), []).append(int(entry))
            times[int(entry)] = _seconds(stat[1], children=True)
    total, todo = 0.0, list(children.get(pid, []))
    while todo:
        child = todo.pop()
        total += times[child]
        todo.extend(children.get(child, []))
    return total


@dataclass
class Peak:
    """The driver's RSS (its Python and its JVM) sampled every 50 ms during a block, and
    the CPU seconds of the driver's Python, its JVM (local mode: the executors too), the
    Python workers under it, and DynamoDB Local (and, of that, its JIT compiler's)."""

    jvm_pid: int | None
    ddb_pid: int | None = None
    python_before: int = 0
    jvm_before: int = 0
    python_peak: int = 0
    jvm_peak: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Peak:
        gc.collect()
        self.python_before = self.python_peak = _rss_kib()
        self.jvm_before = self.jvm_peak = _rss_kib(self.jvm_pid) if self.jvm_pid else 0
        self._cpu = (
            time.process_time(),
            _cpu_seconds(self.jvm_pid),
            _cpu_seconds(self.ddb_pid),
            _descendants_cpu_seconds(self.jvm_pid),
            _compiler_cpu_seconds(self.ddb_pid),
        )
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.python_peak = max(self.python_peak, _rss_kib())
            if self.jvm_pid:
                self.jvm_peak = max(self.jvm_peak, _rss_kib(self.jvm_pid))

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        python, jvm, ddb, workers, jit = self._cpu
        self.cpu = {
            "driver_python": round(time.process_time() - python, 2),
            "driver_jvm": round(_cpu_seconds(self.jvm_pid) - jvm, 2),
            "python_workers": round(_descendants_cpu_seconds(self.jvm_pid) - workers, 2),
            "dynamodb_local": round(_cpu_seconds(self.ddb_pid) - ddb, 2),
            # of which its JIT compiler threads (DynamoDB Local still warming up)
            "dynamodb_local_jit": round(_compiler_cpu_seconds(self.ddb_pid) - jit, 2),
        }
        gc.collect()
        self.python_after = _rss_kib()

    def as_dict(self) -> dict[str, float]:
        mib = 1024.0
        return {
            "python_before_mib": round(self.python_before / mib, 1),
            "python_peak_mib": round(self.python_peak / mib, 1),
            "python_after_mib": round(self.python_after / mib, 1),
            "jvm_before_mib": round(self.jvm_before / mib, 1),
            "jvm_peak_mib": round(self.jvm_peak / mib, 1),
        }


def create_bench_table(client: Any, spec: Any, *, stream: bool = True) -> None:
    """The table as ``xor-ack table create`` makes it, or the same without its stream.

    DynamoDB Local keeps a table's stream inside each write (a stream description read
    and a record written per item, on its one SQLite thread); DynamoDB writes the stream
    after the write, at no cost to it.  Without the stream, what is left is the chains'.
    """
    from xor_ack_dynamodb.table import create_table

    if stream:
        create_table(client, spec)
        return
    request = spec.create_request()
    request.pop("StreamSpecification")
    client.create_table(**request)
    client.get_waiter("table_exists").wait(TableName=spec.name)


def jvm_pid(spark: Any) -> int | None:
    try:
        return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:
        return None


def keyed_source(spark: Any, inputs: int, partitions: int = 8) -> Any:
    """``inputs`` inputs named by ``key`` (``input-0000000``...), 4 rows each, ``v`` distinct."""
    from pyspark.sql import functions as F

    rows = spark.range(0, 4 * inputs, numPartitions=partitions)
    key = F.format_string("input-%07d", (F.col("id") / 4).cast("long")).alias("key")
    return rows.select(key, F.col("id").alias("v"))


def exact(spark: Any, out: str, inputs: int) -> bool:
    """Does the output hold each ``v`` of the ``inputs`` inputs exactly once?"""
    from pyspark.sql import functions as F

    n = 4 * inputs
    row = (
        spark.read.parquet(out)
        .agg(
            F.count("v").alias("rows"),
            F.countDistinct("v").alias("distinct"),
            F.sum("v").alias("total"),
            F.min("v").alias("low"),
            F.max("v").alias("high"),
        )
        .first()
    )
    return (row["rows"], row["distinct"], row["total"], row["low"], row["high"]) == (
        n,
        n,
        n * (n - 1) // 2,
        0,
        n - 1,
    )


def keys_run(
    spark: Any,
    inputs: int,
    out: Path,
    tracker: Any,
    proxy: Any,
    page_size: int,
    ddb_pid: int | None = None,
) -> dict[str, Any]:
    """One run over ``inputs`` keys (``tracker`` None: untracked); its figures."""
    from xor_ack_dynamodb.spark import Sink, track

    source = keyed_source(spark, inputs)
    proxy.reset()
    with Peak(jvm_pid(spark), ddb_pid) as peak:
        start = time.monotonic()
        report = track(
            spark,
            lambda key, rows: rows,  # an input's rows as they are (a lambda: pickled by value)
            "v long",
            Sink(str(out), format="parquet", overwrite=True),
            source=source,
            key="key",
            tracker=tracker,
            tracking=tracker is not None,
            page_size=page_size,
        )
        wall = time.monotonic() - start
    counted = proxy.stats()
    phases: dict[str, float] = {}
    for summary in report.rounds:
        for phase, seconds in summary.seconds.items():
            phases[phase] = round(phases.get(phase, 0.0) + seconds, 3)
    phases.update(report.seconds)
    run: dict[str, Any] = {
        "inputs": inputs,
        "tracking": tracker is not None,
        "wall": round(wall, 3),
        "acked": report.acked,
        "ok": report.ok,
        "rounds": len(report.rounds),
        "writes": report.chain_writes,
        "seconds": phases,
        "dynamodb": counted,
        "memory": peak.as_dict(),
        "cpu_seconds": peak.cpu,
    }
    if tracker is not None:
        run["exact"] = report.ok and report.acked == inputs and exact(spark, str(out), inputs)
        run["requests_per_input"] = round(counted["total_requests"] / inputs, 4)
        run["wru_per_input"] = round(counted["wru"] / inputs, 3)
        run["rru_per_input"] = round(counted["rru"] / inputs, 3)
    return run


def list_files(spark: Any, root: Path, files: int) -> dict[str, Any]:
    """``files`` small files written under ``root``, then listed: by the word count's
    lister (``list_local``, on the driver) and by Spark (the text reader's file paths,
    sorted and brought back a partition at a time, as ``track`` pages them)."""
    from pyspark.sql import functions as F

    from xor_ack_dynamodb.spark.input_listing import list_local
    from xor_ack_dynamodb.spark.paging import sorted_keys

    for i in range(files):
        folder = root / f"d{i // 1000:03d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:07d}.txt").write_text(f"line {i}\n")
    figures: dict[str, Any] = {"files": files}
    with Peak(jvm_pid(spark)) as peak:
        start = time.monotonic()
        found = sum(1 for entry in list_local(str(root)) if entry.problem is None)
        figures["list_local_seconds"] = round(time.monotonic() - start, 2)
    figures["list_local_found"] = found
    figures["list_local_memory"] = peak.as_dict()
    lines = spark.read.option("recursiveFileLookup", "true").text(str(root))
    source = lines.select(F.col("_metadata.file_path").alias("file"))
    with Peak(jvm_pid(spark)) as peak:
        start = time.monotonic()
        listing, _ = sorted_keys(source, "file", None)
        figures["spark_found"] = sum(1 for _ in listing)
        figures["spark_seconds"] = round(time.monotonic() - start, 2)
    figures["spark_memory"] = peak.as_dict()
    return figures


def sizing(requests_per_input: float, wru: float, rru: float, driver_ms: float) -> dict[str, Any]:
    """What ``TARGET_PER_HOUR`` inputs an hour need from DynamoDB on demand, on paper."""
    per_second = TARGET_PER_HOUR / 3600
    return {
        "inputs_per_second": round(per_second, 1),
        "requests_per_second": round(per_second * requests_per_input, 1),
        "wru_per_second": round(per_second * wru, 1),
        "rru_per_second": round(per_second * rru, 1),
        "dollars_per_million_inputs": round(
            wru * DOLLARS_PER_MILLION_WRU + rru * DOLLARS_PER_MILLION_RRU, 3
        ),
        "driver_ms_per_input": round(driver_ms, 3),
        "driver_inputs_per_hour": int(3600 * 1000 / driver_ms) if driver_ms else None,
    }


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"
