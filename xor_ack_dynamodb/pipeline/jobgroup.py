"""Spark jobs of a run in a job group: waited for, cancelled on interruption, watched."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pyspark import InheritableThread

from .options import RoundProgress

if TYPE_CHECKING:
    from .job import WordCount


#: How often the driver refreshes progress while a job runs (seconds).
POLL_INTERVAL = 0.25
#: How long a cancelled job may take to end after an interruption (seconds).
CANCEL_WAIT = 30.0


def in_job_group(
    job: WordCount,
    group: str,
    description: str,
    action: Callable[[], None],
    poll: Callable[[], None] | None = None,
) -> BaseException | None:
    """Run ``action`` in a thread as job group ``group``; the error it raised, if any.

    The driver's thread only waits, so that an interruption (Ctrl-C,
    SIGTERM) lands here: the group's jobs are then cancelled and waited for
    before it propagates, and no task is left writing into the staging folder.
    """
    box: dict[str, BaseException] = {}

    def target() -> None:
        job.sc.setJobGroup(group, description, interruptOnCancel=True)
        try:
            action()
        except BaseException as exc:  # reported to the driver's thread
            box["error"] = exc

    thread = InheritableThread(target=target)
    thread.daemon = True
    thread.start()
    try:
        while thread.is_alive():
            thread.join(POLL_INTERVAL)
            if poll is not None:
                poll()
    except BaseException:
        job.sc.cancelJobGroup(group)
        thread.join(CANCEL_WAIT)
        raise
    return box.get("error")


def progress(job: WordCount, group: str, round_: int, files: int) -> RoundProgress:
    tracker = job.sc.statusTracker()
    done = total = failures = 0
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        if info is None:
            continue
        for stage_id in info.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is None:
                continue
            done += stage.numCompletedTasks
            total += stage.numTasks
            failures += stage.numFailedTasks
    return RoundProgress(round_, files, done, total, failures, dict(job.metrics.value))
