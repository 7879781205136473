"""The driver of a tracked job: rounds of chains, judging, replay, one commit.

Round ``k`` takes the inputs still pending, each under a new chain
``run_id/key#k`` (``plan.file_tag``):

1. the driver creates every chain of the round (stamp ``F``);
2. one Spark job: the user's function per input (``mapInArrow`` over each
   task's inputs, sorted by input; stamp ``F ^ D``), a shuffle into
   ``partitions`` tasks, the rows written to ``STAGING/rows/_xa_round=k`` by
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

A round's Spark jobs run in a thread under a job tag, cancelled (``jobs.TaggedJobs``) past
``round_timeout``, its inputs replayed, or on Ctrl-C: the staging folder removed, the output
as it was, the ``KeyboardInterrupt`` raised.  Each input's end is told as the library's typed
events (:class:`~xor_ack_dynamodb.events.Acked`, :class:`~xor_ack_dynamodb.events.Failed`).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import Any

from ..errors import CreateManyFailed, TagExists, XorAckError
from ..lifecycle import Acked, Failed
from . import declared, output
from .chain_batches import RoundChains, Unanswered, said_of
from .check import committed_sums
from .commit import Counts, Written
from .errors import DynamoDBFailed, Incurable, OutputWriteFailed, RoundTimedOut, RunIdInUse
from .files import is_connect
from .input_tasks import default_input_tasks
from .isolation import Isolation, incurable, output_at_fault, returned, task_of
from .job_spec import EventSink, JobSpec
from .jobs import TaggedJobs, first_line, untracked_failure
from .keyed import Keyed
from .ledger import AckedLedger, refuse_reserved, rows_dir
from .paging import Page, ahead, pages, sorted_keys
from .plan import file_tag
from .report import InputResult, TrackedReport
from .round_plan import arrow_schema, markers, produced_rows, source_columns
from .stages import STAGED_DDL, STAGED_PARQUET, RoundSpec
from .table_check import check_table
from .targets import target_for
from .telling import tell
from .tracker import chains_for


class TrackedJob:
    def __init__(self, spark: Any, spec: JobSpec) -> None:
        self.spark = spark
        self.spec = spec
        self.run_id = spec.run_id or uuid.uuid4().hex[:12]
        self.target = target_for(spark, spec, self.run_id)
        self.files = self.target.files
        self.staging = self.target.staging
        self.rows_root = self.target.rows_root
        self.connect = is_connect(spark)
        self.isolation = Isolation(spec.max_errors)
        self.committed = False  # the output was put in place (what an interruption leaves)
        #: This run wrote into its staging folder: the cleanup removes it (until then another
        #: run under the run_id may hold the folder).
        self.staged = False
        self.out_struct = declared.schema_struct(spark, spec.schema)
        declared.check_key(spec.source, spec.key)
        self.columns = tuple(f.name for f in self.out_struct.fields)
        refuse_reserved(self.columns)
        self.keyed = Keyed(self.run_id)
        self.report = TrackedReport(
            self.run_id, spec.sink.target, spec.tracker is not None, report_path=spec.report_path
        )
        self.ledger = AckedLedger(spark, self.rows_root, by_spark=self.connect)
        self._chains: RoundChains | None = None
        self._following: Page | None = None  # the next page, once listed
        #: Why the run stopped early (an error no replay cures), once it did.
        self._stopped: str | None = None
        self._output_at_fault = False  # what _stopped says: the function's output, every input
        self._abandoned = 0  # inputs of the pages after the stop, never run
        self._round_inputs = 0
        self._round_no: int | None = None  # the round under way, for an error's message
        late = "timeout: round not finished within {:g} s"  # told once there is a timeout
        self.jobs = TaggedJobs(
            spark, f"xor-ack-{self.run_id}", lambda: RoundTimedOut(late.format(spec.round_timeout))
        )
        self.input_tasks = spec.input_tasks or default_input_tasks(spark)

    # -- the run ----------------------------------------------------------------------

    def run(self) -> TrackedReport:
        started = time.monotonic()
        spec = self.spec
        if spec.tracker is not None and spec.marks is None:  # a stream's: when it starts
            check_table(spec.tracker, self.run_id)  # before any Spark job: in seconds
        if self.connect:
            from .connect_check import check_server

            check_server(self.spark)  # the server's Python can run the tasks at all
        self.target.check(self.out_struct, probe=spec.marks is None)  # a stream's: at its start
        listing, known = sorted_keys(spec.source, spec.key, spec.keys, self._keyless)
        if spec.marks is not None:
            listing, known = spec.marks.unmarked(listing), None
        self.report.ended_before(spec.failed_before, known)
        if spec.observer is not None:
            spec.observer.started(self.report)
        try:
            for page, following in ahead(pages(listing, spec.page_size)):
                self.report.listed += len(page.keys)
                self._following = following
                self._page(page)
            t = time.monotonic()
            rows = self.ledger.acked_rows(spec.schema, self.columns)
            inputs = self.report.listed  # those failed before any round: not complete either
            counts = Counts(inputs, inputs - self.report.failed_count)
            if spec.marks is not None:
                spec.marks.before_commit(self.report)
            written = self._commit(rows, counts)
            self.report.output_state = written
            self.committed = written != "kept"
            if spec.marks is not None and self.committed:
                spec.marks.after_commit(self.report)
            self.report.seconds["output"] = round(time.monotonic() - t, 3)
        except BaseException as exc:
            self.report.abandon()  # a report file of an earlier run stays as it was
            lost = exc if isinstance(exc, Unanswered) else None
            self._abandon(f"the run stopped: {output.said(exc if lost is None else lost.cause)}")
            if lost is not None:
                raise self.dynamodb_failed(lost) from lost.cause
            raise
        finally:
            if self.staged and not spec.keep_staging:
                self.target.cleanup()
        self.report.seconds["total"] = round(time.monotonic() - started, 3)
        self._finish()
        return self.report

    def _finish(self) -> None:
        """The report's summary line written, with the inputs an earlier run committed."""
        if self.spec.marks is not None:
            self.report.skipped = self.spec.marks.skipped
        self.report.finish()

    def _commit(self, rows: Any, counts: Counts) -> Written:
        """The target's commit, its Spark jobs under the run's tag: a Ctrl-C cancels them and
        waits for them to end, so nothing writes beside the output after the cleanup.  A
        write that fails is ``OutputWriteFailed``; the library's own refusals stay as they
        are."""
        written: list[Written] = []
        self.staged = True
        error = self.jobs.run(
            lambda: written.append(self.target.commit(rows, counts, self.run_id)), None
        )
        if error is None:
            return written[0]
        if isinstance(error, XorAckError) or not isinstance(error, Exception):
            raise error  # a refusal of the commit's own rules, or a Ctrl-C in the commit
        state = (  # Spark had begun replacing the rows, or not
            f"the table {self.spec.sink.table} was being overwritten with rows already"
            " written, and may hold some or none of its former rows"
            if getattr(self.target, "replacing", False)
            else "nothing was written to it (a former output, or table, is as it was)"
        )
        raise OutputWriteFailed(
            f"the output could not be written ({output.said(error)}); {state}: fix what the"
            " error names and run the job again (its inputs are processed again)",
            self.report,
        ) from error

    def _page(self, page: Page) -> None:
        """A page's rounds until every input ended; its acked pairs to the ledger."""
        entries = {i: InputResult(page.key(i)) for i in page.ids}
        acked: list[tuple[int, int]] = []
        pending = list(page.ids)
        if self._stopped is not None:  # an earlier page found what no replay cures
            why = f"the run stopped: {self._stopped}"
            self._abandoned += len(entries)
            unanswered = self._abandon(why, self._tell)  # its chains, if made, told
            if unanswered is not None:
                raise Unanswered("abandon", unanswered)
            pending = []
            Isolation.stop(list(entries.values()), self._stopped)
            for entry in entries.values():
                self.report.ended(entry)
        elif self.spec.tracker is None:
            self._round(1, page, pending, entries, acked)
            for i, entry in entries.items():
                entry.status, entry.attempts = "counted", 1
                acked.append((1, i))
                self.report.ended(entry)
        else:
            self.isolation = Isolation(self.spec.max_errors)  # a page's inputs, their errors
            for round_ in range(1, self.spec.max_attempts + 1):
                if not pending:
                    break
                pending = self._round(round_, page, pending, entries, acked)
            for i in pending:
                entries[i].status = "failed"
                self.report.ended(entries[i])
        self.ledger.add(page.number, acked)

    def _keyless(self, rows: int | None) -> None:
        """The source's rows whose key is null (in no input): said by the report."""
        self.report.null_key_rows = rows

    def _abandon(self, why: str, tell: EventSink | None = None) -> BaseException | None:
        """No chain of a round that will not end left live; DynamoDB's error, if any."""
        return None if self._chains is None else self._chains.abandon(why, tell)

    def dynamodb_failed(self, lost: Unanswered) -> DynamoDBFailed:
        """The run's error when DynamoDB failed the driver: where, and what it left."""
        return DynamoDBFailed(
            lost.phase,
            said_of(lost.cause),
            run_id=self.run_id,
            round_=self._round_no if "{round}" in DynamoDBFailed.PHASES[lost.phase] else None,
            left_open=tuple(self._chains.left_open if self._chains is not None else ()),
            acked=self.report.acked,
        )

    @property
    def chains(self) -> RoundChains:
        if self._chains is None:
            tracker = self.spec.tracker
            assert tracker is not None
            # The driver's client holds a page of created chains (known_many: no read);
            # this process's client for that config: the next job in this driver reuses it.
            page = self.spec.page_size  # this page's chains and the next page's
            driver = replace(tracker, cache_size=max(tracker.cache_size, 2 * page))
            timeout = self.spec.chain_timeout
            self._chains = RoundChains(tracker, chains_for(driver), self.keyed, timeout)
        return self._chains

    # -- one round ----------------------------------------------------------------------

    def _round(
        self,
        round_: int,
        page: Page,
        pending: list[int],
        entries: dict[int, InputResult],
        acked: list[tuple[int, int]],
    ) -> list[int]:
        self._round_no = round_
        summary = self.report.round_summary(round_, len(pending))
        if self.spec.observer is not None:
            self.spec.observer.round_started(round_, len(pending))
        deadline = (
            None if self.spec.round_timeout is None else time.monotonic() + self.spec.round_timeout
        )
        self._round_inputs = len(pending)
        keys = [page.key(i) for i in pending]
        tags = [file_tag(self.run_id, key, round_) for key in keys]
        spec = RoundSpec(
            run_id=self.run_id,
            round=round_,
            process=self.spec.process,
            columns=self.columns,
            schema=arrow_schema(self.out_struct),
            source_columns=source_columns(self.spec),
            tracker=self.spec.tracker,
            faults=self.spec.faults,
            transit_tasks=self.spec.partitions or 1,
            isolate=self.isolation.for_round(pending),
        )
        created: dict[str, bytes | None] = {}
        if self.spec.tracker is not None:
            t = time.monotonic()
            # Each task stamps on its chains as created: one conditional write, no read.
            try:
                created = self.chains.created((page.number, round_), tags)
            except (CreateManyFailed, TagExists) as exc:
                if not self.chains.held:
                    raise
                raise RunIdInUse(self.run_id, tuple(sorted(self.chains.held))) from exc
            summary.add_seconds("create", time.monotonic() - t)
            # The next page's chains, created while this job runs; not with a deadline,
            # which would count this page's rounds too.
            if round_ == 1 and self._following is not None and self.spec.chain_timeout is None:
                following = self._following
                keys_ahead = [file_tag(self.run_id, key, 1) for key in following.keys]
                self.chains.create_ahead((following.number, 1), keys_ahead)
        keys_df = markers(self.spark, keys, pending, tags, created)
        staged = rows_dir(self.rows_root, round_, page.number)
        t = time.monotonic()
        self.staged = True
        error = self.jobs.run(
            lambda: (
                produced_rows(self.spec, spec, keys_df, self._tasks(spec))
                .write.options(**STAGED_PARQUET)
                .parquet(staged)
            ),
            deadline,
            None if self.spec.tracker is None else self.chains.watching(),  # DynamoDB gone?
        )
        summary.add_seconds("produce", time.monotonic() - t)
        if self.spec.tracker is None:
            if error is None:
                return []
            raise untracked_failure(error, self.spec.round_timeout, self.report)
        states = None
        if error is None:
            t = time.monotonic()
            sums: dict[int, int] = {}  # per input, the sum of its committed rows' hashes
            ddl = f"{self.spec.schema}, {STAGED_DDL}"
            error = self.jobs.run(
                lambda: sums.update(committed_sums(self.spark, staged, ddl)), deadline
            )
            if error is None:  # each C: one write on the chain as read after the job
                by_tag = {tag: sums.get(i, 0) for i, tag in zip(pending, tags, strict=True)}
                states = self.chains.commit(self.run_id, by_tag)
            summary.add_seconds("check", time.monotonic() - t)
        job_error = None if error is None else first_line(error)
        t = time.monotonic()
        outcomes = self.chains.judge(tags, states, job_error, self._tell)
        self.report.chain_writes, self.chains.writes = (
            self.report.chain_writes + self.chains.writes,
            0,
        )
        summary.add_seconds("judge", time.monotonic() - t)
        if error is not None:  # a task died, or the job: isolate whose function never returned
            tasks = self._tasks(spec)
            self.isolation.round_failed(
                pending,
                returned(pending, tags, self.chains.judged, created),
                str(error),
                lambda ids: task_of(ids, tasks),
            )
        # An error no replay cures (in every input of this page's round) stops the run after it.
        where = "the Spark Connect server's workers" if self.connect else "the workers"
        said = [outcome for outcome, _ in outcomes]
        text = None if error is None else str(error)
        # What every input returned is the function's fault only if a page's first round
        # shows it in two inputs or more: one input's own failure (alone in its replay, or
        # in a page of one) fails that input alone.
        judged = text is not None or (round_ == 1 and len(said) > 1)
        message = incurable(text, said, said.count("acked"), where) if judged else None
        if message is not None and self._stopped is None:
            # Stopped now, whatever each input's own ending: with max_errors=1 every one was
            # spent (failed for good) and the run went on, writing an output of none.
            self._stopped = message
            self._output_at_fault = text is None and output_at_fault(said)
        still: list[int] = []
        for i, (outcome, permanent) in zip(pending, outcomes, strict=True):
            entry = entries[i]
            entry.attempts = round_
            entry.history.append(outcome)
            spent = outcome != "acked" and self.isolation.spent(i, outcome)
            if outcome == "acked":
                entry.status = "acked"
                acked.append((round_, i))
                summary.acked += 1
                self.report.ended(entry)
            elif permanent or spent or round_ >= self.spec.max_attempts:
                entry.status = "failed"
                summary.failed += 1
                self.report.ended(entry)
            elif message is not None:  # it would be replayed, to fail the same way
                self._stopped = message
                Isolation.stop([entry], message)
                summary.failed += 1
                self.report.ended(entry)
            else:
                summary.replayed += 1
                still.append(i)
        summary.job_error = summary.job_error or job_error
        if self.spec.observer is not None:
            self.spec.observer.round_ended(summary, self.report)
        if self._stopped is not None and self.report.acked == 0:
            self._finish()  # nothing to commit: stop, the output untouched
            raise self._incurable(inputs_left=self._following is not None)  # one page ahead
        return still

    def stopped_short(self) -> Incurable | None:
        """Why a returned run stopped early, as ``Incurable`` says it; None if it did not."""
        return None if self._stopped is None else self._incurable(self._abandoned > 0)

    def _incurable(self, inputs_left: bool) -> Incurable:
        said, fault = str(self._stopped), self._output_at_fault  # once stopped
        return Incurable(said, self.report, output_at_fault=fault, inputs_left=inputs_left)

    def _tasks(self, spec: RoundSpec) -> int:
        """Tasks of the per-input stages: one per input, at most ``input_tasks``."""
        return max(1, min(self.input_tasks, self._round_inputs))

    def _tell(self, event: Acked | Failed) -> None:
        if isinstance(event, Failed):  # the chains a table's dashboard counts failed
            self.report.chains_failed += 1
        if self.spec.on_event is not None:
            tell(self.spec.on_event, event, self.report)
