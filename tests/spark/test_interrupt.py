"""Ctrl-C in the middle of a tracked job: the jobs are cancelled, nothing half-committed."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import Sink, track

# The workers cannot import this test module (pytest names it from the tests folder): its
# function travels by value, so the tasks do sleep rather than fail to load it.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def slow(key: str, rows: Any) -> Any:
    import pyarrow as pa

    time.sleep(20)
    return pa.table({"key": [key]})


def test_a_keyboard_interrupt_cancels_the_round_and_leaves_no_output(
    local_spark: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    sent: list[float] = []

    def interrupt() -> None:
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(3.0, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            track(local_spark, slow, "key string", Sink(str(out)), keys=["a", "b"], tracking=False)
    finally:
        timer.cancel()
    # The jobs were cancelled (each task sleeps 20 s: 17 s more after the Ctrl-C), the
    # staging folder removed, and the output never appeared.
    assert time.monotonic() - sent[0] < 12
    assert list(tmp_path.iterdir()) == []
    # The session is still usable.
    assert local_spark.range(3).count() == 3


def fast(key: str, rows: Any) -> Any:
    import pyarrow as pa

    return pa.table({"key": [key]})


def slow_to_write(started: Path) -> Any:
    """A sink's ``finish`` whose rows take 20 s each to write; the first marks ``started``."""

    def finish(frame: Any) -> Any:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType

        def slow_key(key: str) -> str:
            started.touch()
            time.sleep(20)
            return key

        return frame.withColumn("key", F.udf(slow_key, StringType())("key")).repartition(1)

    return finish


def test_a_keyboard_interrupt_during_the_output_write_cancels_it_and_leaves_nothing(
    local_spark: Any, tmp_path: Path
) -> None:
    """The output's own write runs under the run's tag, as the rounds do: a Ctrl-C during
    it cancels it and waits for it before the staging folder is removed.  It used to go on
    writing after the cleanup, leaving a complete hidden folder beside the output."""
    started = tmp_path / "started"
    work = tmp_path / "work"
    work.mkdir()

    sent: list[float] = []
    over = threading.Event()  # track() returned: no Ctrl-C after it, into another test

    def interrupt_once_writing() -> None:
        give_up = time.monotonic() + 60
        while not started.exists() and time.monotonic() < give_up and not over.is_set():
            time.sleep(0.1)
        if not over.wait(1.0):
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=interrupt_once_writing, daemon=True)
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            track(
                local_spark,
                fast,
                "key string",
                Sink(str(work / "out"), finish=slow_to_write(started)),
                keys=["a", "b"],
                tracking=False,
            )
    finally:
        over.set()
        watcher.join()
    assert started.exists()
    # cancelled, not written to its end (its rows take 20 s each: 19 s more after the Ctrl-C)
    assert time.monotonic() - sent[0] < 12
    jobs = local_spark.sparkContext.statusTracker()
    give_up = time.monotonic() + 60
    while jobs.getActiveJobsIds() and time.monotonic() < give_up:  # a write still going?
        time.sleep(0.5)
    time.sleep(2)
    assert sorted(p.relative_to(work).as_posix() for p in work.rglob("*")) == []
    assert local_spark.range(3).count() == 3
