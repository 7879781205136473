"""The driver of a tracked job: rounds of chains, judging, replay, one commit.

Round ``k`` takes the inputs still pending, each under a new chain
``run_id/key#k`` (``plan.file_tag``):

1. the driver creates every chain of the round (stamp ``F``);
2. one Spark job: the user's function per input (``mapInArrow`` over each
   task's inputs, sorted by input; stamp ``F ^ D``), a shuffle into
   ``partitions`` tasks, the rows written to ``STAGING/rows/round=k`` by
   Spark's committer;
3. the commit check over what was committed (``check``): per input, the sum of
   the hashes its rows carry (computed where each row was produced); the
   driver writes one stamp ``C`` per input;
4. the driver reads every chain: zero -> the input is acked in round ``k``;
   otherwise ``fail`` and replay in round ``k + 1`` (or ``failed``).

Then the output: each input's acked round's rows (a join), through the sink's
``finish``, committed by ``commit`` / ``table_sink`` where Spark runs, never over
what this library did not write, nor a good output with a worse one.  A bad input
fails alone (``isolation``, ``sandbox``).  DataFrame API only: the same code runs
on classic Spark and over Spark Connect.

A round's Spark jobs run in a thread of their own under a job tag: past
``round_timeout`` (or on Ctrl-C, a ``KeyboardInterrupt`` in the calling thread)
the driver cancels them with ``interruptTag``.  A timed-out round's inputs are
replayed; an interrupt removes the staging folder and leaves the output as it
was (absent, the former one, or the complete new one), then propagates.
Each input's end is told as the library's typed events
(:class:`~xor_ack_dynamodb.events.Acked`, :class:`~xor_ack_dynamodb.events.Failed`).
"""

from __future__ import annotations

import pickle
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..chain import ChainState
from ..dynamodb.sync import SyncXorAckDynamoDB
from ..errors import ChainFailed, TagNotFound
from ..lifecycle import Acked, Failed, failure
from . import output, stages
from .check import committed_sums
from .commit import Counts
from .errors import Incurable, RoundTimedOut
from .faults import FaultConfig
from .files import is_connect
from .isolation import Isolation, incurable, retryable, returned, task_of
from .jobs import TaggedJobs, first_line
from .keyed import Keyed
from .plan import file_tag
from .report import InputResult, RoundObserver, RoundSummary, TrackedReport
from .sink import Sink
from .stages import CREATED, ID, INPUT, MARKER, STAGED_DDL, TAG, Process, RoundSpec
from .targets import target_for
from .tracker import TrackerConfig, chains_for

KEYS_DDL = f"{INPUT} string, {ID} int, {TAG} string, {CREATED} binary"
#: What the driver tells about each input's end (``track(on_event=...)``).
EventSink = Callable[[Acked | Failed], None]


@dataclass
class JobSpec:
    """A tracked job: what to read, what to do per input, where the result goes."""

    process: Process
    schema: str  # the rows ``process`` returns, as a DDL string ("word string, n long")
    sink: Sink
    source: Any = None  # a DataFrame with a column ``key`` naming each row's input, or None
    key: str | None = None
    keys: Sequence[str] | None = None  # the inputs; default: the distinct keys of ``source``
    tracker: TrackerConfig | None = None
    partitions: int | None = None  # shuffle partitions before staging; None: Spark's setting
    input_tasks: int = 16  # tasks of the per-input stages (fewer when fewer inputs)
    max_attempts: int = 8
    #: Attempts of an input whose function raised (or ended its process) before it is failed.
    max_errors: int = 2
    faults: FaultConfig = field(default_factory=FaultConfig)
    run_id: str | None = None
    keep_staging: bool = False
    #: Where the rounds' staged rows go (a hidden folder of the run); None: the staging folder.
    work_dir: str | None = None
    #: Seconds a round's Spark jobs may take; its unfinished inputs are replayed.  None: no limit.
    round_timeout: float | None = None
    on_event: EventSink | None = None
    observer: RoundObserver | None = None
    #: Inputs that failed before any round (``InputResult`` with status ``failed``).
    failed_before: Sequence[InputResult] = ()

    def __post_init__(self) -> None:
        if self.source is None and self.keys is None:
            raise ValueError("give the inputs: a source DataFrame with key=..., or keys=[...]")
        if self.source is not None and not self.key:
            raise ValueError("a source DataFrame needs key=<the column naming each row's input>")
        if min(self.max_attempts, self.max_errors) < 1:
            raise ValueError("max_attempts and max_errors must be >= 1")
        if self.round_timeout is not None and self.round_timeout <= 0:
            raise ValueError("round_timeout must be > 0 seconds")


class TrackedJob:
    def __init__(self, spark: Any, spec: JobSpec) -> None:
        self.spark = spark
        self.spec = spec
        self.run_id = spec.run_id or uuid.uuid4().hex[:12]
        self.target = target_for(spark, spec.sink, self.run_id, spec.work_dir)
        self.files = self.target.files
        self.staging = self.target.staging
        self.rows_root = self.target.rows_root
        self.connect = is_connect(spark)
        self.isolation = Isolation(spec.max_errors)
        #: The output was renamed into place (what an interruption leaves behind).
        self.committed = False
        self.out_struct = spark.createDataFrame([], spec.schema).schema
        self.columns = tuple(f.name for f in self.out_struct.fields)
        self.keyed = Keyed(self.run_id)
        self.report = TrackedReport(self.run_id, spec.sink.target, spec.tracker is not None)
        self._chains: SyncXorAckDynamoDB | None = None
        self._judged: dict[str, ChainState | None] = {}
        self._round_inputs = 0
        self.jobs = TaggedJobs(spark, f"xor-ack-{self.run_id}", self._timed_out)

    # -- the run ----------------------------------------------------------------------

    def run(self) -> TrackedReport:
        started = time.monotonic()
        if self.connect:
            from .connect_check import check_server

            check_server(self.spark)  # the server's Python can run the tasks at all
        self.target.check()
        keys = self._keys()
        self.report.inputs = [InputResult(k) for k in keys]
        if self.spec.observer is not None:
            self.spec.observer.started(self.report)
        acked_in: dict[int, int] = {}
        try:
            pending = list(range(len(keys)))
            if self.spec.tracker is None:
                self._round(1, pending, {})
                for entry in self.report.inputs:
                    entry.status, entry.attempts = "counted", 1
                acked_in = dict.fromkeys(pending, 1)
            else:
                for round_ in range(1, self.spec.max_attempts + 1):
                    if not pending:
                        break
                    pending = self._round(round_, pending, acked_in)
                for i in pending:
                    self.report.inputs[i].status = "failed"
            t = time.monotonic()
            rows = output.acked_rows(self.spark, self.spec, self.rows_root, self.columns, acked_in)
            counts = Counts(len(keys), sum(1 for i in self.report.inputs if i.status != "failed"))
            written = self.target.commit(rows, counts, self.run_id)
            self.report.output_state = written
            self.committed = written != "kept"
            self.report.seconds["output"] = round(time.monotonic() - t, 3)
        finally:
            if not self.spec.keep_staging:
                self.target.cleanup()
        if self.spec.failed_before:
            self.report.inputs = sorted(
                [*self.report.inputs, *self.spec.failed_before], key=lambda i: i.key
            )
        self.report.seconds["total"] = round(time.monotonic() - started, 3)
        return self.report

    def _keys(self) -> list[str]:
        if self.spec.keys is not None:
            return sorted(dict.fromkeys(self.spec.keys))
        rows = self.spec.source.select(self.spec.key).distinct().collect()
        return sorted(str(r[0]) for r in rows if r[0] is not None)

    @property
    def chains(self) -> SyncXorAckDynamoDB:
        if self._chains is None:
            assert self.spec.tracker is not None
            # this process's client for the config: the next job in this driver reuses it
            self._chains = chains_for(self.spec.tracker)
        return self._chains

    # -- one round ----------------------------------------------------------------------

    def _round(self, round_: int, pending: list[int], acked_in: dict[int, int]) -> list[int]:
        summary = RoundSummary(round_, len(pending))
        if self.spec.observer is not None:
            self.spec.observer.round_started(round_, len(pending))
        deadline = (
            None if self.spec.round_timeout is None else time.monotonic() + self.spec.round_timeout
        )
        self._round_inputs = len(pending)
        keys = [self.report.inputs[i].key for i in pending]
        tags = [file_tag(self.run_id, key, round_) for key in keys]
        tags_of = dict(zip(pending, tags, strict=True))
        spec = RoundSpec(
            run_id=self.run_id,
            round=round_,
            process=self.spec.process,
            columns=self.columns,
            schema=_arrow_schema(self.out_struct),
            source_columns=self._source_columns(),
            tracker=self.spec.tracker,
            faults=self.spec.faults,
            transit_tasks=self.spec.partitions or 1,
            isolate=self.isolation.for_round(pending),
        )
        created: dict[str, bytes | None] = dict.fromkeys(tags)
        if self.spec.tracker is not None:
            t = time.monotonic()
            self._create({tag: self.keyed.file_stamp(tag) for tag in tags})
            # Each task stamps on its chains as created: one conditional write, no read.
            for tag, state in self.chains.get_many(tags).items():
                created[tag] = None if state is None else pickle.dumps(state)
            summary.seconds["create"] = round(time.monotonic() - t, 3)
        keys_df = self.spark.createDataFrame(
            [(k, i, tag, created[tag]) for k, i, tag in zip(keys, pending, tags, strict=True)],
            KEYS_DDL,
        )
        rows_dir = f"{self.rows_root}/round={round_}"
        t = time.monotonic()
        error = self.jobs.run(
            lambda: self._produce(spec, keys_df).write.parquet(rows_dir), deadline
        )
        summary.seconds["produce"] = round(time.monotonic() - t, 3)
        if self.spec.tracker is None:
            if error is not None:
                raise error
            self.report.rounds.append(summary)
            return []
        if error is None:
            t = time.monotonic()
            sums: dict[int, int] = {}
            error = self.jobs.run(lambda: sums.update(self._check(rows_dir)), deadline)
            if error is None:
                states = self.chains.get_many(tags)  # each C: one write on the chain as read
                self._each(
                    lambda i: stages.stamp_committed(
                        spec, tags_of[i], sums.get(i, 0), states.get(tags_of[i])
                    ),
                    pending,
                )
            summary.seconds["check"] = round(time.monotonic() - t, 3)
        job_error = None if error is None else first_line(error)
        t = time.monotonic()
        outcomes = self._judge(tags, job_error)
        summary.seconds["judge"] = round(time.monotonic() - t, 3)
        if error is not None:  # a task died, or the job: isolate whose function never returned
            tasks = self._tasks(spec)
            self.isolation.round_failed(
                pending,
                returned(pending, tags, self._judged, created),
                str(error),
                lambda ids: task_of(ids, tasks),
            )
        still: list[int] = []
        for i, (outcome, permanent) in zip(pending, outcomes, strict=True):
            entry = self.report.inputs[i]
            entry.attempts = round_
            entry.history.append(outcome)
            spent = outcome != "acked" and self.isolation.spent(i, outcome)
            if outcome == "acked":
                entry.status = "acked"
                acked_in[i] = round_
                summary.acked += 1
            elif permanent or spent or round_ >= self.spec.max_attempts:
                entry.status = "failed"
                summary.failed += 1
            else:
                summary.replayed += 1
                still.append(i)
        summary.job_error = job_error
        self.report.rounds.append(summary)
        if self.spec.observer is not None:
            self.spec.observer.round_ended(summary, self.report)
        where = "the Spark Connect server's workers" if self.connect else "the workers"
        text = None if error is None else str(error)
        message = incurable(text, [o for o, _ in outcomes], summary.acked, where)
        if message is None or not still:
            return still
        if not acked_in:  # nothing to commit: stop, the output untouched
            raise Incurable(message, self.report)
        return self.isolation.stop([self.report.inputs[i] for i in still], message)

    def _create(self, stamps: dict[str, bytes]) -> None:
        """The round's chains: 100 per transaction, or one request each (``transactions``)."""
        tracker = self.spec.tracker
        assert tracker is not None
        if tracker.transactions:
            self.chains.create_many(stamps)
            return
        tags = list(stamps)
        self._each(lambda i: self.chains.create(tags[i], stamps[tags[i]]), range(len(tags)))

    def _source_columns(self) -> tuple[str, ...]:
        if self.spec.source is None:
            return ()
        return tuple(c for c in self.spec.source.columns if c != self.spec.key)

    def _produce(self, spec: RoundSpec, keys_df: Any) -> Any:
        from pyspark.sql import functions as F

        markers = keys_df.withColumn(MARKER, F.lit(True))
        if self.spec.source is None:
            grouped = markers
        else:
            rows = (
                self.spec.source.withColumnRenamed(self.spec.key, INPUT)
                .join(F.broadcast(keys_df.drop(CREATED)), INPUT)
                .withColumn(MARKER, F.lit(False))
            )
            grouped = rows.unionByName(markers, allowMissingColumns=True)
        out_ddl = f"{self.spec.schema}, {STAGED_DDL}"
        # Each input's rows in one task, one input after the other (``stages.produce``).
        grouped = grouped.repartition(self._tasks(spec), ID).sortWithinPartitions(ID)
        produced = grouped.mapInArrow(lambda batches: stages.produce(spec, batches), out_ddl)
        moved = produced.repartition(self.spec.partitions) if self.spec.partitions else produced
        if not spec.faults.enabled:
            return moved  # the shuffle and the write stay in the JVM: no Python task
        return moved.mapInArrow(lambda it: stages.transit(spec, it), out_ddl)

    def _check(self, rows_dir: str) -> dict[int, int]:
        """Per input of the round, the sum of its committed rows' hashes (``check``)."""
        staged_ddl = f"{self.spec.schema}, {STAGED_DDL}"
        return committed_sums(self.spark, rows_dir, staged_ddl)

    def _each(self, fn: Callable[[int], object], items: Sequence[int]) -> None:
        """``fn`` over ``items``, as many at a time as the tracker's connections allow."""
        tracker = self.spec.tracker
        assert tracker is not None
        if not items:
            return
        with ThreadPoolExecutor(max_workers=max(1, min(tracker.concurrency, len(items)))) as pool:
            list(pool.map(fn, items))

    def _tasks(self, spec: RoundSpec) -> int:
        """Tasks of the per-input stages: one per input, at most ``input_tasks``."""
        return max(1, min(self.spec.input_tasks, self._round_inputs))

    def _timed_out(self) -> RoundTimedOut:
        return RoundTimedOut(f"timeout: round not finished within {self.spec.round_timeout:g} s")

    def _judge(self, tags: list[str], job_error: str | None) -> list[tuple[str, bool]]:
        """Per chain of a round: ``acked`` or why not, and whether that is final.

        A zero chain of a round whose output was committed is acked.  A chain the
        user's function closed (:class:`InputRejected`) fails for good with its
        reason.  Any other is closed with ``fail`` (late stamps are refused) and
        its input replayed.
        """
        states = self._judged = self.chains.get_many(tags)
        return [self._judge_one(tag, states.get(tag), job_error) for tag in tags]

    def _judge_one(self, tag: str, state: ChainState | None, job: str | None) -> tuple[str, bool]:
        if state is not None and state.failed:  # closed by its task: the function failed
            self.report.chain_writes += state.version
            self._tell(failure(tag, state.chain_id, state.failed_at or 0.0, _why(state)))
            return _why(state), not retryable(state.reason)
        if job is None and state is not None and state.acked:
            self.report.chain_writes += state.version
            latency = (state.acked_at or state.updated_at) - state.created_at
            self._tell(Acked(tag, state.chain_id, state.acked_at or 0.0, latency))
            return "acked", False
        reason = job or "incomplete: not zero when its round ended"
        try:
            closed = self.chains.fail(tag, reason=reason)
        except TagNotFound:
            return "chain missing", False
        except ChainFailed as already:  # failed since the read (its stage, a sweep, a deadline)
            return self._judge_one(tag, already.state, job)  # judged as found
        self.report.chain_writes += closed.version
        if closed.acked:
            return "completed after its round ended (not counted)", False
        self._tell(failure(tag, closed.chain_id, closed.failed_at or 0.0, reason))
        return reason, False

    def _tell(self, event: Acked | Failed) -> None:
        if self.spec.on_event is not None:
            self.spec.on_event(event)


def _arrow_schema(struct: Any) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct)


def _why(state: ChainState) -> str:
    return state.reason or "failed"
