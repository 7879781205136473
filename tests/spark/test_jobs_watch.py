"""A round's jobs stop as soon as the work they need fails (``TaggedJobs.run(watch=)``).

A scripted session: its "job" runs until ``interruptTag`` is called, as Spark's
jobs end when their tag is interrupted.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

from xor_ack_dynamodb.spark.errors import RoundTimedOut
from xor_ack_dynamodb.spark.jobs import TaggedJobs


class Session:
    """addTag / removeTag / interruptTag, and a job that runs until interrupted."""

    def __init__(self) -> None:
        self.interrupted = threading.Event()
        self.tags: list[str] = []

    def addTag(self, tag: str) -> None:
        self.tags.append(tag)

    def removeTag(self, tag: str) -> None:
        self.tags.remove(tag)

    def interruptTag(self, tag: str) -> None:
        self.interrupted.set()

    def job(self) -> None:
        if not self.interrupted.wait(10):
            raise AssertionError("never interrupted")
        raise RuntimeError("job cancelled")


def jobs(spark: Any) -> TaggedJobs:
    return TaggedJobs(spark, "xor-ack-t", lambda: RoundTimedOut("timeout"))


def test_a_watched_failure_cancels_the_jobs_and_is_their_error() -> None:
    spark = Session()
    watch: Future[None] = Future()
    refused = ValueError("the creates failed")
    threading.Timer(0.2, lambda: watch.set_exception(refused)).start()
    started = time.monotonic()
    error = jobs(spark).run(spark.job, None, watch=watch)
    assert error is refused and spark.interrupted.is_set()
    assert time.monotonic() - started < 5  # not the job's own 10 s
    assert spark.tags == []


def test_a_watched_success_lets_the_jobs_run_to_their_end() -> None:
    spark = Session()
    watch: Future[None] = Future()
    watch.set_result(None)
    ran: list[bool] = []
    assert jobs(spark).run(lambda: ran.append(True), None, watch=watch) is None
    assert ran == [True] and not spark.interrupted.is_set()


def test_the_deadline_still_holds_while_watching() -> None:
    spark = Session()
    watch: Future[None] = Future()  # never done
    error = jobs(spark).run(spark.job, time.monotonic() + 0.3, watch=watch)
    assert isinstance(error, RoundTimedOut) and spark.interrupted.is_set()


def test_jobs_that_end_before_the_watched_work_are_not_cancelled() -> None:
    spark = Session()
    watch: Future[None] = Future()  # still running when the job ends
    assert jobs(spark).run(lambda: None, None, watch=watch) is None
    assert not spark.interrupted.is_set()
