"""Spark plumbing: the session, listing inputs through Hadoop, reading exact files, cleanup.

Inputs and outputs go through Hadoop's FileSystem API (via the JVM), never the
driver's local disk, so ``s3a://``, ``hdfs://``, ``gs://`` and ``file:`` paths
all work the same way.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pyspark import RDD
from pyspark.sql import SparkSession

from .errors import InputEmpty, InputMissing, PipelineError
from .paths import (
    MANIFEST,
    InputFile,
    Listing,
    Unreadable,
    hidden,
    is_remote,
    list_local,
    read_local,
)

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
    quiet: bool = False,
) -> SparkSession:
    """A SparkSession; ``master=None`` leaves the master to ``spark-submit``.

    A local master binds everything to 127.0.0.1, turns the UI off and runs the
    Python workers with this interpreter.  ``log_level="FATAL"`` also hides the
    stack traces Spark logs for every failed task attempt (useful when faults are
    injected on purpose: a job that fails still raises on the driver).
    ``quiet``: a JVM started here writes its own output (log4j's start-up lines,
    warnings, the Python workers' stderr) to ``/dev/null``.
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
    with _jvm_output_silenced(quiet):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark


@contextmanager
def _jvm_output_silenced(quiet: bool) -> Iterator[None]:
    """While the JVM is launched, file descriptors 1 and 2 point to /dev/null (it inherits them)."""
    if not quiet:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (null, *saved):
            os.close(fd)


def stop_session(spark: SparkSession | None, timeout: float = 15.0) -> None:
    """Stop ``spark`` and the JVM this process launched for it: no Java process is left.

    ``SparkSession.stop`` leaves the py4j gateway's JVM running until the Python
    process exits; this closes its stdin (the JVM exits on end of input) and
    kills it if it has not exited within ``timeout`` seconds.
    """
    from pyspark import SparkContext

    try:
        if spark is not None:
            # After an interruption py4j's connection may be broken: the JVM goes anyway.
            with contextlib.suppress(Exception):
                spark.stop()
    finally:
        gateway: Any = SparkContext._gateway
        proc: Any = getattr(gateway, "proc", None)
        if proc is not None:  # a JVM this process launched (not spark-submit's)
            with contextlib.suppress(Exception):
                gateway.shutdown()
            SparkContext._gateway = None
            SparkContext._jvm = None
            with contextlib.suppress(Exception):
                proc.stdin.close()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)


def list_files(spark: SparkSession, root: str) -> list[InputFile]:
    """Every file under ``root`` (recursively), sorted: local ones listed by Python.

    Hadoop cannot name a local file whose name holds a ``:`` (it reads
    ``a:b`` as a URI), so local inputs are listed (:func:`.paths.list_local`)
    and read (:func:`read_files`) without it; Hadoop URIs go through its
    FileSystem API.
    """
    if not is_remote(root):
        return list_local(root)
    jvm: Any = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(root)
    fs = path.getFileSystem(conf)
    if not fs.exists(path):
        raise InputMissing(f"input {root} does not exist: give a folder or file to count")
    qualified_root = fs.makeQualified(path).toString().rstrip("/")
    found: list[InputFile] = []
    iterator = fs.listFiles(path, True)
    while iterator.hasNext():
        status = iterator.next()
        name = status.getPath().toString()
        relative = (
            name[len(qualified_root) :].lstrip("/") if name.startswith(qualified_root) else name
        )
        if any(hidden(part) for part in relative.split("/") if part):
            continue
        found.append(InputFile(name, int(status.getLen())))
    if not found:
        raise InputEmpty(
            f"input {root} holds no file to count (names starting with '_' or '.' are "
            "skipped): nothing to do"
        )
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


def balanced(files: Sequence[InputFile], partitions: int) -> list[list[str]]:
    """``files`` in ``partitions`` groups of about equal bytes (largest first, to the lightest)."""
    groups: list[list[str]] = [[] for _ in range(max(1, min(partitions, len(files))))]
    heap = [(0, i) for i in range(len(groups))]
    for f in sorted(files, key=lambda f: (-f.size, f.path)):
        size, i = heapq.heappop(heap)
        groups[i].append(f.path)
        heapq.heappush(heap, (size + max(f.size, 1), i))
    return groups


def _read_group(paths: Iterable[str]) -> Iterator[tuple[str, bytes | Unreadable]]:
    for path in paths:
        yield path, read_local(path)


def read_files(
    spark: SparkSession, files: Sequence[InputFile], partitions: int
) -> RDD[tuple[str, bytes | Unreadable]]:
    """``(path, content)`` of exactly ``files``, read by the executors.

    Local files are read by the Python workers (any name a POSIX file system
    allows works, and a file that cannot be read fails alone); Hadoop URIs with
    ``binaryFiles``.
    """
    if files and not is_remote(files[0].path):
        groups = balanced(files, partitions)
        rdd = spark.sparkContext.parallelize(groups, len(groups))
        return rdd.flatMap(_read_group)
    joined = ",".join(escape_input_path(f.path) for f in files)
    return spark.sparkContext.binaryFiles(joined, minPartitions=max(1, partitions))


# -- the Hadoop file system: the job's writes, for any scheme ----------------------------


def _fs(spark: SparkSession, target: str) -> tuple[Any, Any]:
    jvm: Any = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(target)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


def delete_path(spark: SparkSession, target: str) -> None:
    """Remove ``target`` (recursively) if it exists: only ever a path the job created."""
    fs, path = _fs(spark, target)
    if fs.exists(path):
        fs.delete(path, True)


def listing(spark: SparkSession, target: str) -> Listing | None:
    """What is at ``target`` (:class:`.paths.Listing`), None if nothing."""
    fs, path = _fs(spark, target)
    if not fs.exists(path):
        return None
    if not fs.getFileStatus(path).isDirectory():
        return Listing(is_dir=False)
    names = tuple(sorted(status.getPath().getName() for status in fs.listStatus(path)))
    manifest = read_text(spark, f"{target.rstrip('/')}/{MANIFEST}") if MANIFEST in names else None
    return Listing(is_dir=True, names=names, manifest=manifest)


def read_text(spark: SparkSession, target: str) -> str | None:
    fs, path = _fs(spark, target)
    jvm: Any = spark._jvm
    stream = fs.open(path)
    try:
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return None


def write_text(spark: SparkSession, target: str, text: str) -> None:
    """Create ``target`` (never over an existing file) holding ``text``."""
    fs, path = _fs(spark, target)
    stream = fs.create(path, False)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def make_folder(spark: SparkSession, target: str) -> None:
    """Create the folder ``target``, which must not exist (so that it is ours to delete)."""
    fs, path = _fs(spark, target)
    if fs.exists(path):
        raise PipelineError(f"{target} exists already: it is not this run's to use")
    fs.mkdirs(path)


def rename(spark: SparkSession, source: str, target: str) -> None:
    """Rename ``source`` to ``target`` (which must not exist)."""
    fs, src = _fs(spark, source)
    _, dst = _fs(spark, target)
    if fs.exists(dst) or not fs.rename(src, dst):
        raise PipelineError(f"could not rename {source} to {target}")


def remove_empty_folder(spark: SparkSession, target: str) -> None:
    """Remove ``target`` only if it is an empty folder (fails otherwise)."""
    fs, path = _fs(spark, target)
    if fs.listStatus(path) or not fs.delete(path, False):
        raise PipelineError(f"{target} is no longer empty: it was left as it is")
