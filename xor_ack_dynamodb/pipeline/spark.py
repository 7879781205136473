"""Spark plumbing: the command's session, and Hadoop's FileSystem for a Hadoop URI output.

The library (``xor_ack_dynamodb.spark.files``) commits a Hadoop URI (``s3a://``,
``hdfs://``, ``gs://``) through Hadoop's FileSystem API in the driver's JVM (classic
Spark only); local paths never come here.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

#: Task attempts per task in local mode when faults are injected (``local[N,F]``).
LOCAL_MAX_FAILURES = 8

_LOCAL = re.compile(r"^local(?:\[(\d+|\*)\])?$")


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
            "spark.python.daemon.module": "xor_ack_dynamodb.spark.daemon",
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


def start_session(
    master: str | None, remote: str | None, faults: bool, verbose: bool = False
) -> Any:
    """The command's session: Spark Connect at ``remote``, else classic Spark at ``master``.

    ``master=None`` is ``local[*]``, or spark-submit's master under spark-submit.
    With faults injected a local master retries failed tasks (``local[N,F]``) and
    Spark's logs of the failed attempts are hidden unless ``verbose``.
    """
    if remote:
        from pyspark.sql import SparkSession as Session

        return Session.builder.remote(remote).appName("xor-ack-wordcount").getOrCreate()
    if master is None and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        master = "local[*]"
    if master is not None and faults:
        master = master_with_retries(master)
    quiet_level = "FATAL" if faults else "ERROR"
    return build_session(master, log_level="WARN" if verbose else quiet_level, quiet=not verbose)


def stop_session(spark: SparkSession | None, timeout: float = 15.0) -> None:
    """Stop ``spark`` and the JVM this process launched for it: no Java process is left.

    ``SparkSession.stop`` leaves the py4j gateway's JVM running until the Python
    process exits; this closes its stdin (the JVM exits on end of input) and
    kills it if it has not exited within ``timeout`` seconds.
    """
    if spark is not None and type(spark).__module__.startswith("pyspark.sql.connect"):
        spark.stop()  # a Spark Connect client: no JVM on this side
        return
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


# -- the Hadoop file system: the job's writes, for any scheme ----------------------------
