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

import contextlib
import pickle
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol

from pyspark import InheritableThread, SparkContext, TaskContext
from pyspark.accumulators import Accumulator
from pyspark.broadcast import Broadcast
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from ..errors import TagNotFound
from ..item import ChainState
from ..sync import SyncXorAckDynamoDB
from .buckets import identity_partition
from .errors import PipelineError
from .faults import FaultConfig
from .keyed import Keyed
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
from .plan import RoundPlan, TaskInfo, file_tag
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
from .stages import (
    TASK_TOTALS,
    BucketRecord,
    StagingRow,
    count_buckets,
    split_files,
    sum_buckets,
)
from .tracker import CountsParam, TrackerConfig, chains_for, merge_counts, stats_delta

STAGING_SCHEMA = StructType(
    [
        StructField("file", IntegerType(), False),
        StructField("words", ArrayType(StringType(), False), True),
        StructField("counts", ArrayType(LongType(), False), True),
        StructField("blob", BinaryType(), True),
    ]
)
COUNTS_SCHEMA = StructType(
    [StructField("word", StringType(), False), StructField("count", LongType(), False)]
)
ENTRY_SCHEMA = StructType(
    [StructField("word", StringType(), False), StructField("n", LongType(), False)]
)
#: How often the driver refreshes progress while a job runs (seconds).
POLL_INTERVAL = 0.25
#: How long a cancelled job may take to end after an interruption (seconds).
CANCEL_WAIT = 30.0


@dataclass
class WordCountOptions:
    """Everything a run needs besides the SparkSession."""

    input: str
    output: str
    tracking: bool = True
    tracker: TrackerConfig | None = None
    #: Counting tasks; None: the Spark default parallelism (cores), between 2 and 8.
    partitions: int | None = None
    read_partitions: int | None = None
    timeout: float = 300.0
    max_attempts: int = 8
    faults: FaultConfig = field(default_factory=FaultConfig)
    run_id: str | None = None
    work_dir: str | None = None
    keep_staging: bool = False
    #: Replace an existing OUTPUT, if it is a folder this tool wrote (see ``paths``).
    overwrite: bool = False
    output_partitions: int = 1
    driver_concurrency: int = 32

    def __post_init__(self) -> None:
        if self.partitions is not None and self.partitions < 1:
            raise ValueError("partitions must be >= 1")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be > 0 seconds")
        if self.output_partitions < 1:
            raise ValueError("output_partitions must be >= 1")
        if self.tracking and self.tracker is None:
            raise ValueError("tracking needs a tracker (TrackerConfig)")
        if self.partitions is not None:
            check_token_window(self.tracker, self.partitions)


def check_token_window(tracker: TrackerConfig | None, partitions: int) -> None:
    """Every write of a chain's life must stay in its recent-token list (exact idempotency)."""
    if tracker is not None and tracker.token_window < partitions + 4:
        raise ValueError(
            f"token_window {tracker.token_window} is too small for {partitions} "
            "partitions: it must be >= partitions + 4 so that every write of a chain "
            "stays recognisable"
        )


@dataclass
class RoundProgress:
    """A snapshot while a round runs, for the progress display."""

    round: int
    files: int
    tasks_done: int
    tasks_total: int
    task_failures: int
    metrics: dict[str, int]


class Observer(Protocol):
    """Receives progress (the rich display implements it; ``None`` means silent)."""

    def started(self, report: Report) -> None: ...
    def round_started(self, round_: int, files: int) -> None: ...
    def round_progress(self, progress: RoundProgress) -> None: ...
    def round_ended(self, result: RoundResult, report: Report) -> None: ...
    def step(self, text: str) -> None: ...
    def finished(self, report: Report) -> None: ...


class _Silent:
    def started(self, report: Report) -> None:
        pass

    def round_started(self, round_: int, files: int) -> None:
        pass

    def round_progress(self, progress: RoundProgress) -> None:
        pass

    def round_ended(self, result: RoundResult, report: Report) -> None:
        pass

    def step(self, text: str) -> None:
        pass

    def finished(self, report: Report) -> None:
        pass


# -- the tasks (run on executors) ---------------------------------------------------------


def _task_info() -> TaskInfo:
    ctx = TaskContext.get()
    if ctx is None:  # pragma: no cover - always set inside a Spark task
        return TaskInfo(0, 0)
    return TaskInfo(ctx.partitionId(), ctx.attemptNumber())


def _report(plan: RoundPlan, metrics: Accumulator[dict[str, int]], local: Counter[str]) -> None:
    counts = dict(local)
    if plan.tracker is not None:
        merge_counts(counts, stats_delta(plan.tracker))
    metrics.add(counts)


def _stage1_task(
    bplan: Broadcast[RoundPlan],
    metrics: Accumulator[dict[str, int]],
    _index: int,
    files: Iterable[tuple[str, bytes]],
) -> Iterator[BucketRecord]:
    plan = bplan.value
    chains = chains_for(plan.tracker) if plan.tracking and plan.tracker else None
    local: Counter[str] = Counter()
    yield from split_files(plan, _task_info(), files, chains, local)
    _report(plan, metrics, local)


def _stage2_task(
    bplan: Broadcast[RoundPlan],
    metrics: Accumulator[dict[str, int]],
    _index: int,
    records: Iterable[BucketRecord],
) -> Iterator[StagingRow]:
    plan = bplan.value
    if plan.tracker is None:  # pragma: no cover - guarded by the driver
        raise PipelineError("a tracked round without a tracker")
    local: Counter[str] = Counter()
    yield from count_buckets(plan, _task_info(), records, chains_for(plan.tracker), local)
    _report(plan, metrics, local)


def _sum_task(
    bplan: Broadcast[RoundPlan],
    metrics: Accumulator[dict[str, int]],
    _index: int,
    records: Iterable[BucketRecord],
) -> Iterator[tuple[str, int]]:
    plan = bplan.value
    local: Counter[str] = Counter()
    yield from sum_buckets(plan, _task_info(), records, local)
    _report(plan, metrics, local)


def _unpickle_entries(row: Any) -> list[tuple[str, int]]:
    entries: list[tuple[str, int]] = pickle.loads(row["blob"])
    return entries


# -- the driver -------------------------------------------------------------------------


class WordCount:
    """One run.  ``run()`` returns the report; see the module docstring for the rounds."""

    def __init__(
        self, spark: SparkSession, options: WordCountOptions, observer: Observer | None = None
    ) -> None:
        self.spark = spark
        self.sc: SparkContext = spark.sparkContext
        self.opts = options
        self.observer: Observer = observer or _Silent()
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
            self._last = self._progress(group, round_, files)
            self.observer.round_progress(self._last)

        def poll() -> None:
            nonlocal timed_out
            update()
            if not timed_out and time.monotonic() > deadline:
                timed_out = True
                self.sc.cancelJobGroup(group)

        error = self._in_job_group(group, description, action, poll)
        update()
        if timed_out:
            return f"timeout: round not finished within {self.opts.timeout:g} s", True
        if error is not None:
            return f"spark job failed: {_first_line(error)}", False
        return None, False

    def _in_job_group(
        self,
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
            self.sc.setJobGroup(group, description, interruptOnCancel=True)
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
            self.sc.cancelJobGroup(group)
            thread.join(CANCEL_WAIT)
            raise
        return box.get("error")

    def _progress(self, group: str, round_: int, files: int) -> RoundProgress:
        tracker = self.sc.statusTracker()
        done = total = failures = 0
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            for stage_id in job.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is None:
                    continue
                done += stage.numCompletedTasks
                total += stage.numTasks
                failures += stage.numFailedTasks
        return RoundProgress(round_, files, done, total, failures, dict(self.metrics.value))

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
            counts = self._tracked() if opts.tracking else self._untracked()
            self.observer.step("writing the counts")
            with self.clock.phase("output"):
                words, distinct = self._write_output(counts)
                self._commit()
        finally:
            if not opts.keep_staging:
                with self.clock.phase("cleanup"):
                    delete_path(self.spark, self.staging)
                    if opts.work_dir:
                        delete_path(self.spark, self.rows_dir)
        self._totals(words, distinct)
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

    def _untracked(self) -> DataFrame:
        """The same stages without chains: one round, no staging, nothing verified."""
        readable = [i for i, f in enumerate(self.files) if f.problem is None]
        plan = RoundPlan(
            run_id=self.run_id,
            round=1,
            partitions=self.partitions,
            paths=tuple(self.files[i].path for i in readable),
            file_ids=tuple(readable),
            faults=self.opts.faults,
        )
        self.observer.round_started(1, len(readable))
        bplan = self.sc.broadcast(plan)
        inputs = [self.files[i] for i in readable]
        rdd = read_files(self.spark, inputs, self._read_partitions(len(inputs)))
        counts = (
            rdd.mapPartitionsWithIndex(partial(_stage1_task, bplan, self.metrics))
            .partitionBy(plan.partitions, identity_partition)
            .mapPartitionsWithIndex(partial(_sum_task, bplan, self.metrics))
        )
        for i in readable:
            f = self.report.files[i]
            f.status, f.attempts = "counted", 1
            f.history.append(Attempt(1, "counted (not tracked)"))
        result = RoundResult(1, len(plan.paths), plan.partitions)
        self.report.rounds.append(result)
        return self.spark.createDataFrame(counts, COUNTS_SCHEMA, verifySchema=False)

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
        return self._final_counts(acked_in)

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
            outcomes = self._settle(tags, error)
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

    def _settle(self, tags: Sequence[str], job_error: str | None) -> list[str]:
        """Each chain's outcome once its round's job has ended: ``acked`` or why not.

        A chain is judged when the job has ended, not later: every task of the job
        is over by then, so a chain that is not zero can only be completed by a
        stray attempt whose output was not committed; accepting that would be a
        false ack.  Every chain not acked is closed with ``fail`` so that late
        stamps are refused.
        """
        if job_error is not None:
            # Nothing of this round was committed: even a zero chain cannot count.
            def close(tag: str) -> str:
                with contextlib.suppress(TagNotFound):
                    self.chains.fail(tag, reason=job_error)
                return job_error

            return self._parallel(close, tags)

        states: dict[str, ChainState | None] = self.chains.get_many(tags)
        judged: dict[str, str] = {}
        for tag, state in states.items():
            if state is None:
                judged[tag] = "chain missing"
            elif state.acked:
                judged[tag] = "acked"
            elif state.failed:
                judged[tag] = state.reason or "failed"

        def close_incomplete(tag: str) -> str:
            reason = "incomplete: not zero when its round ended"
            try:
                closed = self.chains.fail(tag, reason=reason)
            except TagNotFound:
                return "chain missing"
            if closed.acked:  # completed between the read and the fail: too late to count
                return "completed after its round ended (not counted)"
            return reason

        rest = [tag for tag in tags if tag not in judged]
        judged.update(zip(rest, self._parallel(close_incomplete, rest), strict=True))
        return [judged[tag] for tag in tags]

    def _final_counts(self, acked_in: dict[int, int]) -> DataFrame:
        """Sum by word the staging rows of each file's acked round.

        A round whose files were all acked contributes its counting tasks' totals
        rows; a round with files that were not is summed from the per-file rows of
        its acked files only.
        """
        if not acked_in:
            return self.spark.createDataFrame([], COUNTS_SCHEMA)
        complete = [
            r.round for r in self.report.rounds if r.job_error is None and r.acked == r.files
        ]
        partial = sorted({r for r in acked_in.values()} - set(complete))
        # The schema is known: giving it spares Spark a job that reads every file's footer.
        schema = StructType([*STAGING_SCHEMA.fields, StructField("round", IntegerType(), False)])
        staging = self.spark.read.schema(schema).parquet(self.rows_dir)
        parts: list[DataFrame] = []
        if complete:
            pairs = F.explode(F.arrays_zip(F.col("words"), F.col("counts"))).alias("pair")
            parts.append(
                staging.where((F.col("file") == TASK_TOTALS) & F.col("round").isin(complete))
                .select(pairs)
                .select(F.col("pair.words").alias("word"), F.col("pair.counts").alias("n"))
            )
        if partial:
            acked = self.spark.createDataFrame(
                sorted((r, f) for f, r in acked_in.items() if r in partial),
                StructType(
                    [
                        StructField("round", IntegerType(), False),
                        StructField("file", IntegerType(), False),
                    ]
                ),
            )
            blobs = (
                staging.where(F.col("round").isin(partial) & (F.col("file") >= 0))
                .join(F.broadcast(acked), ["round", "file"])
                .select("blob")
            )
            entries = blobs.rdd.flatMap(_unpickle_entries)
            parts.append(self.spark.createDataFrame(entries, ENTRY_SCHEMA, verifySchema=False))
        if len(complete) == 1 and not partial:
            # One round's totals: each word went to one counting task (its bucket), so
            # every word has exactly one totals row and nothing is left to sum.
            return parts[0].select("word", F.col("n").alias("count"))
        rows = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        return rows.groupBy("word").agg(F.sum("n").cast("long").alias("count"))

    def _write_output(self, counts: DataFrame) -> tuple[int, int]:
        """Write the counts into the staging folder; (words, distinct words)."""
        counts = counts.persist()
        result: dict[str, Any] = {}

        def action() -> None:
            (
                counts.repartition(self.opts.output_partitions)
                .sortWithinPartitions(F.desc("count"), F.asc("word"))
                .write.option("header", True)
                .csv(self.staged_output)
            )
            result["row"] = counts.agg(
                F.count(F.lit(1)).alias("distinct"), F.sum("count").alias("words")
            ).first()

        try:
            error = self._in_job_group(
                f"xor-ack-{self.run_id}-output", "xor-ack wordcount: the counts", action
            )
        finally:
            counts.unpersist()
        if error is not None:
            raise error
        row = result.get("row")
        if row is None:  # pragma: no cover - an aggregate always has one row
            return 0, 0
        return int(row["words"] or 0), int(row["distinct"] or 0)

    def _totals(self, words: int, distinct: int) -> None:
        metrics = dict(self.metrics.value)
        if self._driver is not None:
            merge_counts(metrics, {f"ddb.{k}": v for k, v in self._driver.stats.snapshot().items()})
        requests = {
            k[len("ddb.requests.") :]: v
            for k, v in metrics.items()
            if k.startswith("ddb.requests.")
        }
        writes = metrics.get("ddb.writes", 0)
        records = metrics.get("records", 0)
        self.clock.add("total", 0.0)
        seconds = {k: round(v, 3) for k, v in self.clock.seconds.items() if k != "total"}
        seconds["total"] = round(self.clock.total(), 3)
        self.report.totals = {
            "files": len(self.files),
            "acked": self.report.acked,
            "failed": self.report.failed,
            "rounds": len(self.report.rounds),
            "words": words,
            "distinct_words": distinct,
            "records": records,
            "records_lost_to_faults": metrics.get("records_lost", 0),
            "dynamodb": {
                "requests": metrics.get("ddb.requests", 0),
                "by_operation": requests,
                "writes": writes,
                "stamps": metrics.get("ddb.stamps", 0),
                "conflicts": metrics.get("ddb.conflicts", 0),
                "resent_writes_recognised": metrics.get("ddb.resent_writes_recognised", 0),
                "records_per_write": round(records / writes, 2) if writes else None,
            },
            "seconds": seconds,
        }


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
