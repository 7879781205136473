"""The driver: rounds of a tracked word count, replay of what did not finish, exact output.

Round ``k`` processes the files still pending, each under a new chain
``run_id/path#k``:

1. the driver creates every chain of the round (file stamp ``F``), before any
   task reads a file;
2. one Spark job: stage 1 (files -> words, bucketed by counting task) ->
   shuffle -> stage 2 (count, stamp, write staging rows ``(file, words, counts)``
   under ``WORK/round=k`` with Spark's committed writer);
3. when the job has ended, the driver reads every chain of the round: zero ->
   the file is done, its staging rows of round ``k`` count; anything else
   (failed explicitly, not zero, the job failed or ran past ``--timeout``) ->
   the chain is closed with ``fail`` and the file goes to round ``k + 1``.

After the last round the output is the sum, by word, of the staging rows of
each file's acked round only: a replayed file is counted once.

Nothing of the user's is touched before it is judged (``paths``): the rows and
the counts are written into a staging folder the run creates beside OUTPUT
(hidden, named after the run), the counts get a manifest, and only a complete
result is renamed onto OUTPUT.  The staging folder is removed however the run
ends (unless ``keep_staging``); nothing else is ever deleted.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any

from pyspark import SparkContext
from pyspark.accumulators import Accumulator
from pyspark.sql import DataFrame, SparkSession

from ..sync import SyncXorAckDynamoDB
from .buckets import identity_partition
from .errors import PipelineError
from .jobgroup import in_job_group, progress
from .keyed import Keyed
from .options import Observer, RoundProgress, Silent, WordCountOptions, check_token_window
from .output import final_counts, settle, totals, untracked_counts, write_output
from .paths import (
    MANIFEST,
    PERMANENT,
    InputFile,
    OutputAction,
    check_paths,
    judge_output,
    manifest_text,
    printable,
    qualified,
    staging_path,
)
from .plan import RoundPlan, file_tag
from .report import Attempt, FileResult, PhaseClock, Report, RoundResult
from .spark import (
    delete_path,
    list_files,
    listing,
    make_folder,
    read_files,
    remove_empty_folder,
    rename,
    write_text,
)
from .tasks import STAGING_SCHEMA, _stage1_task, _stage2_task
from .tracker import CountsParam

#: How often the driver refreshes progress while a job runs (seconds).
POLL_INTERVAL = 0.25
#: How long a cancelled job may take to end after an interruption (seconds).
CANCEL_WAIT = 30.0
# -- the driver -------------------------------------------------------------------------


__all__ = ["RoundProgress", "WordCount", "WordCountOptions", "run_wordcount"]


class WordCount:
    """One run.  ``run()`` returns the report; see the module docstring for the rounds."""

    def __init__(
        self, spark: SparkSession, options: WordCountOptions, observer: Observer | None = None
    ) -> None:
        self.spark = spark
        self.sc: SparkContext = spark.sparkContext
        self.opts = options
        self.observer: Observer = observer or Silent()
        self.run_id = options.run_id or uuid.uuid4().hex[:12]
        self.partitions = options.partitions or min(8, max(2, self.sc.defaultParallelism))
        check_token_window(options.tracker, self.partitions)
        self.clock = PhaseClock()
        self.metrics: Accumulator[dict[str, int]] = self.sc.accumulator({}, CountsParam())
        self.files: list[InputFile] = []
        self.output = qualified(options.output)
        #: Created by the run, removed at its end: the staged counts, and the rows by default.
        self.staging = staging_path(options.output, self.run_id)
        self.staged_output = f"{self.staging}/output"
        self.rows_dir = (
            f"{qualified(options.work_dir)}/.xor-ack-{self.run_id}"
            if options.work_dir
            else f"{self.staging}/rounds"
        )
        #: The counts were renamed onto OUTPUT (what an interruption leaves behind).
        self.committed = False
        self._last: RoundProgress | None = None
        self.report = Report(
            run_id=self.run_id,
            input=options.input,
            output=options.output,
            tracking=options.tracking,
            settings={
                "partitions": self.partitions,
                "timeout": options.timeout,
                "max_attempts": options.max_attempts,
                "crash_rate": options.faults.crash_rate,
                "drop_rate": options.faults.drop_rate,
                "seed": options.faults.seed,
                "master": self.sc.master,
                "table": options.tracker.table if options.tracker else None,
                "endpoint_url": options.tracker.endpoint_url if options.tracker else None,
                "token_window": options.tracker.token_window if options.tracker else None,
            },
        )
        self._driver: SyncXorAckDynamoDB | None = None

    # -- helpers ----------------------------------------------------------

    @property
    def chains(self) -> SyncXorAckDynamoDB:
        if self._driver is None:
            if self.opts.tracker is None:  # pragma: no cover - guarded in options
                raise PipelineError("tracking needs a tracker")
            # The driver's threads share one client: give it as many connections.
            config = replace(self.opts.tracker, concurrency=self.opts.driver_concurrency)
            self._driver = config.chains()
        return self._driver

    def _parallel(self, fn: Callable[[str], Any], tags: Sequence[str]) -> list[Any]:
        if not tags:
            return []
        workers = min(self.opts.driver_concurrency, len(tags))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(fn, tags))

    def _read_partitions(self, files: int) -> int:
        wanted = self.opts.read_partitions or max(2, self.sc.defaultParallelism * 2)
        return max(1, min(wanted, files))

    def _run_job(
        self,
        group: str,
        description: str,
        action: Callable[[], None],
        deadline: float,
        round_: int,
        files: int,
    ) -> tuple[str | None, bool]:
        """Run ``action`` as job group ``group``; cancel it at ``deadline``.

        Returns (error message or None, whether it was cancelled for the timeout).
        """
        if time.monotonic() > deadline:  # creating the chains used the whole budget
            return f"timeout: round not finished within {self.opts.timeout:g} s", True
        timed_out = False

        def update() -> None:
            self._last = progress(self, group, round_, files)
            self.observer.round_progress(self._last)

        def poll() -> None:
            nonlocal timed_out
            update()
            if not timed_out and time.monotonic() > deadline:
                timed_out = True
                self.sc.cancelJobGroup(group)

        error = in_job_group(self, group, description, action, poll)
        update()
        if timed_out:
            return f"timeout: round not finished within {self.opts.timeout:g} s", True
        if error is not None:
            return f"spark job failed: {_first_line(error)}", False
        return None, False

    # -- the run ------------------------------------------------------------

    def run(self) -> Report:
        opts = self.opts
        with self.clock.phase("list"):
            check_paths(opts.input, opts.output, work_dir=opts.work_dir)
            judge_output(opts.output, listing(self.spark, self.output), opts.overwrite)
            self.files = list_files(self.spark, opts.input)
        self.report.files = [_entry(f) for f in self.files]
        self.observer.started(self.report)
        make_folder(self.spark, self.staging)
        try:
            if opts.tracking and opts.work_dir:
                make_folder(self.spark, self.rows_dir)
            counts = self._tracked() if opts.tracking else untracked_counts(self)
            self.observer.step("writing the counts")
            with self.clock.phase("output"):
                words, distinct = write_output(self, counts)
                self._commit()
        finally:
            if not opts.keep_staging:
                with self.clock.phase("cleanup"):
                    delete_path(self.spark, self.staging)
                    if opts.work_dir:
                        delete_path(self.spark, self.rows_dir)
        totals(self, words, distinct)
        self.observer.finished(self.report)
        return self.report

    def _commit(self) -> None:
        """The staged counts get their manifest, then a rename makes them OUTPUT.

        OUTPUT is judged again first (it may have changed while the job ran); a
        folder of ours is moved into the staging folder (removed with it), an
        empty one removed: the rename only ever lands where nothing is.
        """
        staged = listing(self.spark, self.staged_output)
        names = staged.names if staged is not None else ()
        text = manifest_text(self.run_id, self.report.input, names)
        write_text(self.spark, f"{self.staged_output}/{MANIFEST}", text)
        current = listing(self.spark, self.output)
        action = judge_output(self.opts.output, current, self.opts.overwrite)
        if action is OutputAction.REPLACE_EMPTY:
            remove_empty_folder(self.spark, self.output)
        elif action is OutputAction.REPLACE_OURS:
            previous = f"{self.staging}/previous"
            rename(self.spark, self.output, previous)
            try:
                rename(self.spark, self.staged_output, self.output)
            except BaseException:
                rename(self.spark, previous, self.output)  # the former result goes back
                raise
            self.committed = True
            return
        rename(self.spark, self.staged_output, self.output)
        self.committed = True

    def _tracked(self) -> DataFrame:
        _ = self.chains  # made once here, before any thread of the driver uses it
        pending = [i for i, f in enumerate(self.files) if f.problem is None]
        acked_in: dict[int, int] = {}  # file id -> round whose output counts
        for round_ in range(1, self.opts.max_attempts + 1):
            if not pending:
                break
            pending = self._round(round_, pending, acked_in)
        for file_id in pending:
            self.report.files[file_id].status = "failed"
        return final_counts(self, acked_in)

    def _round(self, round_: int, pending: list[int], acked_in: dict[int, int]) -> list[int]:
        opts = self.opts
        partitions = min(self.partitions, len(pending))
        tags = tuple(file_tag(self.run_id, self.files[i].path, round_) for i in pending)
        plan = RoundPlan(
            run_id=self.run_id,
            round=round_,
            partitions=partitions,
            paths=tuple(self.files[i].path for i in pending),
            file_ids=tuple(pending),
            tags=tags,
            tracker=opts.tracker,
            faults=opts.faults,
        )
        result = RoundResult(round_, len(pending), partitions)
        before = dict(self.metrics.value)
        self.observer.round_started(round_, len(pending))
        keyed = Keyed(self.run_id)
        started = time.monotonic()

        with self.clock.phase("create"):
            stamps = {tag: keyed.file_stamp(tag) for tag in tags}
            if opts.tracker is not None and opts.tracker.transactions:
                self.chains.create_many(stamps, concurrency=self.opts.driver_concurrency)
            else:
                self._parallel(lambda tag: self.chains.create(tag, stamps[tag]), tags)
        result.seconds["create"] = time.monotonic() - started

        job_start = time.monotonic()
        with self.clock.phase("spark"):
            staging = f"{self.rows_dir}/round={round_}"
            bplan = self.sc.broadcast(plan)

            def action() -> None:
                inputs = [self.files[i] for i in pending]
                rdd = read_files(self.spark, inputs, self._read_partitions(len(inputs)))
                rows = (
                    rdd.mapPartitionsWithIndex(partial(_stage1_task, bplan, self.metrics))
                    .partitionBy(partitions, identity_partition)
                    .mapPartitionsWithIndex(partial(_stage2_task, bplan, self.metrics))
                )
                frame = self.spark.createDataFrame(rows, STAGING_SCHEMA, verifySchema=False)
                frame.write.mode("overwrite").parquet(staging)

            error, _ = self._run_job(
                f"xor-ack-{self.run_id}-round-{round_}",
                f"xor-ack wordcount round {round_} ({len(pending)} files)",
                action,
                started + opts.timeout,
                round_,
                len(pending),
            )
        result.seconds["spark"] = time.monotonic() - job_start
        result.job_error = error
        result.task_failures = self._last.task_failures if self._last else 0

        check_start = time.monotonic()
        with self.clock.phase("check"):
            outcomes = settle(self, tags, error)
            if error is not None:
                delete_path(self.spark, staging)
        result.seconds["check"] = time.monotonic() - check_start

        still: list[int] = []
        for file_id, outcome in zip(pending, outcomes, strict=True):
            entry = self.report.files[file_id]
            entry.attempts = round_
            entry.history.append(Attempt(round_, outcome))
            if outcome == "acked":
                entry.status = "acked"
                acked_in[file_id] = round_
                result.acked += 1
            elif round_ >= opts.max_attempts or outcome.startswith(PERMANENT):
                entry.status = "failed"
                result.failed += 1
            else:
                result.replayed += 1
                still.append(file_id)
        after = dict(self.metrics.value)
        result.metrics = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
        self.report.rounds.append(result)
        self.observer.round_ended(result, self.report)
        return still


def _entry(f: InputFile) -> FileResult:
    """The report's entry for ``f``: ``failed`` at once if it cannot be read at all."""
    entry = FileResult(printable(f.path))
    if f.problem is not None:
        entry.status = "failed"
        entry.history.append(Attempt(0, f.problem))
    return entry


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    for line in text.splitlines():
        line = line.strip()
        if "InjectedFault" in line or "CommitRefused" in line:
            return line
    return text.splitlines()[0][:300]


def run_wordcount(
    spark: SparkSession, options: WordCountOptions, observer: Observer | None = None
) -> Report:
    """Run the word count of ``options.input`` into ``options.output``; the report says how."""
    return WordCount(spark, options, observer).run()
