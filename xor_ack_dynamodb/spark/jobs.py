"""A round's Spark jobs under one job tag: run in a thread, cancelled past a deadline or on Ctrl-C.

The calling thread waits for the jobs' thread; past the deadline, or when a
``KeyboardInterrupt`` reaches the waiting thread, it cancels the tagged jobs until
they have ended, so nothing writes after the caller cleans up.  Over Spark Connect
the tag is the session's (``addTag`` / ``interruptTag``); on classic Spark it is the
SparkContext's (``addJobTag`` / ``cancelJobsWithTag``): a classic session's tag added
in the jobs' thread was on no job there (``interruptTag`` found none, and a round past
its deadline ran to its end).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

from .endpoint_watch import WATCH_EVERY

#: The last line of a Python traceback: ``SomeError: what``.
_PYTHON_ERROR = re.compile(r"^[A-Za-z_.]*(Error|Exception|Exit)\b.*")
#: A line that says an exception of any name (the package's ``UnsettledWrite``, say):
#: ``module.Name: message``, not a JVM frame or a JVM exception's line.
_ANY_ERROR = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*: \S.*")
_JVM = ("org.", "java.", "scala.", "py4j.", "at ")
#: Which task of which stage failed a job, in Spark's message.
_TASK = re.compile(r"Task (\d+) in stage ([\d.]+) failed")
#: How long cancelled Spark jobs may take to end after a timeout or an interrupt (seconds).
CANCEL_WAIT = 30.0


class TaggedJobs:
    """Spark jobs run under ``tag``; ``timed_out()`` makes the error of a job past its deadline."""

    def __init__(self, spark: Any, tag: str, timed_out: Callable[[], BaseException]) -> None:
        from .files import is_connect

        self.spark = spark
        self.tag = tag
        self.timed_out = timed_out
        #: Classic Spark's SparkContext (its job tags), None over Spark Connect.
        self._context = None if is_connect(spark) else spark.sparkContext

    def run(
        self,
        action: Callable[[], object],
        deadline: float | None,
        watch: Callable[[], BaseException | None] | None = None,
    ) -> BaseException | None:
        """Run ``action``'s Spark jobs under this run's tag; cancel them past ``deadline``.

        Returns the job's error (``timed_out()`` for the deadline), None if it
        ended well.  A ``KeyboardInterrupt`` while waiting, or an error ``watch`` returns
        (asked every ``WATCH_EVERY`` seconds: the driver's look at DynamoDB while the
        tasks stamp, ``endpoint_watch``), cancels the jobs, waits for them to end (so that
        nothing writes after the staging folder is removed) and propagates.
        """
        if deadline is not None and time.monotonic() >= deadline:
            return self.timed_out()  # creating the chains used the whole budget
        outcome: list[BaseException | None] = []

        def work() -> None:
            self._tagged(True)
            try:
                action()
            except BaseException as exc:  # handed to the waiting thread
                outcome.append(exc)
            else:
                outcome.append(None)
            finally:
                self._tagged(False)

        thread = threading.Thread(target=work, name=f"{self.tag}-jobs", daemon=True)
        thread.start()
        try:
            while thread.is_alive():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                thread.join(WATCH_EVERY if left is None else min(left, WATCH_EVERY))
                stop = None if watch is None or not thread.is_alive() else watch()
                if stop is not None:
                    raise stop
        except BaseException:
            self.cancel(thread)
            raise
        if thread.is_alive():
            self.cancel(thread)
            return self.timed_out()
        return outcome[0] if outcome else None

    def _tagged(self, on: bool) -> None:
        """The jobs this thread starts carry the tag (``on``), or no longer."""
        if self._context is None:
            (self.spark.addTag if on else self.spark.removeTag)(self.tag)
        else:
            (self._context.addJobTag if on else self._context.removeJobTag)(self.tag)

    def cancel(self, thread: threading.Thread) -> None:
        """Interrupt the tagged jobs until the thread that runs them ends (or CANCEL_WAIT)."""
        give_up = time.monotonic() + CANCEL_WAIT
        while thread.is_alive() and time.monotonic() < give_up:
            # A job that had not started yet when interrupted would run: interrupt again.
            if self._context is None:
                self.spark.interruptTag(self.tag)
            else:
                self._context.cancelJobsWithTag(self.tag)
            thread.join(0.5)


def first_line(exc: BaseException) -> str:
    """The line of a failed job's error that says what happened (the Python error, if any)."""
    from .errors import RoundTimedOut

    text = str(exc).strip() or type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if isinstance(exc, RoundTimedOut):
        return lines[0]
    for line in lines:
        if "InjectedFault" in line:
            return line[:300]
    if "Python worker exited unexpectedly" in text:
        task = _TASK.search(text)
        where = f" (task {task.group(1)} of stage {task.group(2)})" if task else ""
        return f"spark job failed: a Python worker died{where}"
    python_errors = [line for line in lines if _PYTHON_ERROR.match(line)]
    if not any(not line.startswith(_JVM) for line in python_errors):
        named = [line for line in lines if _ANY_ERROR.match(line) and not line.startswith(_JVM)]
        python_errors = named or python_errors
    first = python_errors[-1] if python_errors else lines[0]
    return f"spark job failed: {first[:300]}"


def untracked_failure(
    error: BaseException, round_timeout: float | None, report: Any
) -> BaseException:
    """What an untracked run raises for its round's failed job (no chains: no replay):
    ``UntrackedRunFailed`` saying what failed (``error`` its cause), or a Ctrl-C or the
    library's own refusal as it is."""
    from ..errors import XorAckError
    from .errors import RoundTimedOut, UntrackedRunFailed

    if isinstance(error, RoundTimedOut):
        said = f"its job ran past round_timeout ({round_timeout} s): give more"
    elif isinstance(error, XorAckError) or not isinstance(error, Exception):
        return error
    else:
        said = first_line(error)
    failed = UntrackedRunFailed(said, report)
    failed.__cause__, failed.__suppress_context__ = error, True  # as ``raise ... from error``
    return failed
