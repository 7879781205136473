"""Spark plumbing: the session, listing inputs through Hadoop, reading exact files, cleanup.

Inputs and outputs go through Hadoop's FileSystem API (via the JVM), never the
driver's local disk, so ``s3a://``, ``hdfs://``, ``gs://`` and ``file:`` paths
all work the same way.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyspark import RDD
from pyspark.sql import SparkSession

#: Task attempts per task in local mode when faults are injected (``local[N,F]``).
LOCAL_MAX_FAILURES = 8

_LOCAL = re.compile(r"^local(?:\[(\d+|\*)\])?$")
_GLOB_SPECIAL = set("\\*?[]{}")


def master_with_retries(master: str, max_failures: int = LOCAL_MAX_FAILURES) -> str:
    """``local[N]`` -> ``local[N,F]``: local mode retries a failed task only when told to.

    Other masters are returned as they are (on a cluster ``spark.task.maxFailures``
    applies, 4 by default).
    """
    match = _LOCAL.match(master.strip())
    if match is None:
        return master
    return f"local[{match.group(1) or 1},{max_failures}]"


def is_local(master: str | None) -> bool:
    return master is None or master.strip().startswith("local")


def build_session(
    master: str | None,
    *,
    app_name: str = "xor-ack-wordcount",
    shuffle_partitions: int = 8,
    extra: dict[str, str] | None = None,
    log_level: str = "ERROR",
) -> SparkSession:
    """A SparkSession; ``master=None`` leaves the master to ``spark-submit``.

    A local master binds everything to 127.0.0.1, turns the UI off and runs the
    Python workers with this interpreter.  ``log_level="FATAL"`` also hides the
    stack traces Spark logs for every failed task attempt (useful when faults are
    injected on purpose: a job that fails still raises on the driver).
    """
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if is_local(master) and master is not None:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        for key, value in {
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.python.daemon.module": "xor_ack_dynamodb.pipeline.daemon",
        }.items():
            builder = builder.config(key, value)
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark


@dataclass(frozen=True)
class InputFile:
    path: str
    size: int


def _hidden(name: str) -> bool:
    # Hadoop's FileInputFormat skips these (``_SUCCESS``, ``.crc``, ...): so does the listing.
    return name.startswith(("_", "."))


def list_files(spark: SparkSession, root: str) -> list[InputFile]:
    """Every file under ``root`` (recursively), as fully qualified paths, sorted."""
    jvm: Any = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(root)
    fs = path.getFileSystem(conf)
    if not fs.exists(path):
        raise FileNotFoundError(f"input {root} does not exist")
    qualified = fs.makeQualified(path).toString().rstrip("/")
    found: list[InputFile] = []
    iterator = fs.listFiles(path, True)
    while iterator.hasNext():
        status = iterator.next()
        name = status.getPath().toString()
        relative = name[len(qualified) :].lstrip("/") if name.startswith(qualified) else name
        if any(_hidden(part) for part in relative.split("/") if part):
            continue
        found.append(InputFile(name, int(status.getLen())))
    return sorted(found, key=lambda f: f.path)


def escape_input_path(path: str) -> str:
    """One exact path for Hadoop's comma-separated, glob-expanded input list."""
    out: list[str] = []
    for ch in path:
        if ch in _GLOB_SPECIAL:
            out.append("\\" + ch)
        elif ch == ",":
            out.append("{\\,}")  # a one-way alternation: a comma that does not split the list
        else:
            out.append(ch)
    return "".join(out)


def read_files(
    spark: SparkSession, paths: Iterable[str], partitions: int
) -> RDD[tuple[str, bytes]]:
    """``(path, content)`` of exactly ``paths``, read by the executors."""
    joined = ",".join(escape_input_path(p) for p in paths)
    return spark.sparkContext.binaryFiles(joined, minPartitions=max(1, partitions))


def delete_path(spark: SparkSession, target: str) -> None:
    """Remove ``target`` (recursively) if it exists."""
    jvm: Any = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(target)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    if fs.exists(path):
        fs.delete(path, True)
