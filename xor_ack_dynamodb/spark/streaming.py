"""Structured Streaming: every micro-batch's new inputs tracked to completion (``foreachBatch``).

Each micro-batch is a tracked job of its own (:func:`track` over the batch's
rows, the inputs being the batch's distinct keys: with a file source, the files
that arrived), committed to a folder of its own, ``OUTPUT/batch=N-RUN``.
Which inputs the stream committed is said by chains in the table, not by the
checkpoint (``stream_marks``): an input an earlier run committed is left out, so
a batch Spark runs again after a restart, or every file read again after the
checkpoint was lost, commits each input once.  ``on_event`` gets each input's
end as the library's typed events (``events.Acked`` / ``events.Failed``, as
:func:`track` tells them); a batch with a failed input raises
(:class:`BatchFailed`), which stops the query, unless ``stop_on_failure=False``.

Untracked (``tracking=False``) there are no marks: each batch goes to
``OUTPUT/batch=N-START`` (``START``: new at each start of the query), which a batch run
again in the same start replaces.
"""

from __future__ import annotations

import itertools
import logging
import os
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from ..errors._refusals import shown
from .chain_batches import Unanswered
from .commit import resolver
from .errors import BatchFailed, Incurable, InvalidArgument, OutputUnusable
from .files import Files, is_connect
from .job_spec import RUN_ID_MAX, EventSink, refuse_report
from .ledger import refuse_reserved
from .output import check as output_check
from .paths import is_relative, qualified, server_path, staging_path
from .report import TrackedReport
from .sink import Sink
from .stages import Process
from .stream_marks import (
    DEFAULT_RETENTION,
    MAX_RETENTION,
    StreamMarks,
    check_stream_name,
    stream_name,
)
from .stream_marks import batch_path as run_batch_path
from .table_check import check_table

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

log = logging.getLogger("xor_ack_dynamodb.spark")


def batch_report(report: str | os.PathLike[str], batch_folder: str) -> str:
    """Where the report of the batch run committed to ``batch_folder`` goes: ``report`` with
    the folder's name before its suffix (``run.jsonl``: ``run.batch=000003-RUN.jsonl``)."""
    stem, suffix = os.path.splitext(os.fspath(report))
    return f"{stem}.{batch_folder.rstrip('/').rsplit('/', 1)[-1]}{suffix}"


#: ``track_stream``'s options that name the chains' table (resolved once, when it is called).
CHAINS_OPTIONS = ("table", "endpoint_url", "region", "partition_key", "tracker")
#: What each run of a micro-batch adds to a ``run_id`` given: ``-`` and 12 hex digits.
FRESH = 12
#: The batch id a report's name is checked with: ten digits (a batch a minute for 19,000 years).
LONGEST_BATCH_ID = 10**10 - 1


def batch_run_id(given: str | None) -> str:
    """A new id for each run of a micro-batch (``run_id=`` given: its prefix): a live mark
    names its run, which committed only if a folder of that very run is in the output."""
    fresh = uuid.uuid4().hex[:FRESH]
    return f"{given}-{fresh}" if given else fresh


def track_stream(
    stream: Any,
    process: Process,
    schema: str | StructType,
    sink: Sink,
    *,
    key: str,
    checkpoint: str | None = None,
    available_now: bool = False,
    on_event: EventSink | None = None,
    name: str | None = None,
    retention: float = DEFAULT_RETENTION,
    stop_on_failure: bool = True,
    **options: Any,
) -> Any:
    """Start the query; ``options`` are :func:`track`'s (table, faults, partitions, ...).

    Returns the ``StreamingQuery``; ``available_now=True`` processes what is there
    and stops (``query.awaitTermination()``).  ``name``: the stream's name in the
    chains' table (default: from the output's path, so the same after a restart);
    ``retention``: seconds it remembers an input it committed (default 30 days).
    A ``run_id`` option is the prefix of each micro-batch run's id, new for every run.
    A ``report`` option (``run.jsonl``) is each batch run's own file, named after its
    folder (``run.batch=000003-RUN.jsonl``).  ``stop_on_failure``: a batch with an input
    that failed (after its replays) raises ``BatchFailed``, which stops the query; False:
    the batch commits its acked inputs and the query goes on, the failed ones told to
    ``on_event``, logged, and left as failed chains (their keys are not marked committed).
    """
    from .declared import check_key, schema_ddl, schema_struct
    from .tracking import job_spec, tracked_job

    if not isinstance(sink, Sink):
        raise InvalidArgument(
            f"sink={sink!r} is not a Sink: give Sink(path=...), the folder each micro-batch "
            "is committed under"
        )
    if sink.path is None:
        raise InvalidArgument(
            "track_stream commits each micro-batch to a folder of its own (OUTPUT/batch=N-RUN): "
            "give Sink(path=...); a table sink would take a batch that Spark runs again twice"
        )
    if not getattr(stream, "isStreaming", False):
        raise InvalidArgument(
            "stream= is not a streaming DataFrame (spark.readStream...): for a DataFrame "
            "read once, use track()"
        )
    for option in ("keys", "source"):
        if option in options:
            raise InvalidArgument(
                f"{option}= is track()'s: a stream's inputs are the keys (key=...) of each "
                "micro-batch of stream="
            )
    if not isinstance(available_now, bool):
        raise InvalidArgument(
            f"available_now={available_now!r}: give True (process what is there, then "
            "stop) or False (run until stopped)"
        )
    if not isinstance(checkpoint, str) or not checkpoint.strip():
        raise InvalidArgument(
            f"checkpoint={checkpoint!r}: give the folder where Spark keeps the query's "
            "progress (checkpoint=...), one per query, the same at every restart"
        )
    if (
        isinstance(retention, bool)
        or not isinstance(retention, int | float)
        or not 0 < retention <= MAX_RETENTION  # nan, inf and an int too big for a float too
    ):
        raise InvalidArgument(
            f"retention={shown(retention)}: give the seconds a stream remembers an input it "
            f"committed, a number > 0 and at most {MAX_RETENTION:.0f} (100 years; default "
            f"{DEFAULT_RETENTION:g}: 30 days)"
        )
    if not isinstance(stop_on_failure, bool):
        raise InvalidArgument(
            f"stop_on_failure={stop_on_failure!r}: give True (a batch with a failed input "
            "stops the query) or False (the query goes on)"
        )
    if not stop_on_failure and options.get("tracking", True) is False:
        raise InvalidArgument(
            "stop_on_failure=False goes on past a batch's failed inputs, which only their "
            "chains can fail alone: an untracked stream (tracking=False) stops at its first "
            "input that fails; track it, or leave stop_on_failure=True"
        )
    given = options.get("run_id")
    if isinstance(given, str) and len(given) > RUN_ID_MAX - 1 - FRESH:
        raise InvalidArgument(
            f"run_id={given!r}: track_stream adds '-' and {FRESH} characters to it for each "
            f"run of a micro-batch, and a run's id has at most {RUN_ID_MAX}: give at most "
            f"{RUN_ID_MAX - 1 - FRESH} characters"
        )
    if name is not None:
        check_stream_name(name)
    folder = sink.path
    output = qualified(folder)
    stream_id = name or stream_name(output)
    # Every check a batch's job makes, before Spark writes the checkpoint: a refusal there
    # would stop the query with a StreamingQueryException and a checkpoint already begun.
    spark = stream.sparkSession
    # As the sink's folder: absolute; over Spark Connect a relative one is refused (the
    # server would keep the query's progress in its own working directory).
    checkpoint = resolver(spark)(checkpoint, "checkpoint")
    files = Files(spark)
    for what, where in (("checkpoint", checkpoint), ("the sink's folder", folder)):
        found = files.listing(files.followed(resolver(spark)(where, what)))
        if found is not None and not found.is_dir:  # Spark's error, after the checkpoint
            raise OutputUnusable(
                f"{what} {where!r} is a file: give a folder (it is made if it is missing)"
            )
    ddl: str = schema_ddl(schema)
    struct = schema_struct(spark, ddl)
    check_key(stream, key, stream=True)
    refuse_reserved(struct.fieldNames())
    checked = dict(options)
    if is_connect(spark) and isinstance(checked.get("report"), str | os.PathLike):
        checked["report"] = None  # on the server's disk: its name alone is checked below
    tracker = job_spec(
        spark, process, ddl, sink, source=stream, key=key, on_event=on_event, **checked
    ).tracker
    if tracker is not None:
        check_table(tracker, stream_id)  # the table there and answering, once
    # The chains' table resolved here, once: a batch may run where the caller's environment
    # is not (over Spark Connect, in the server's Python), so it is given the resolved one.
    given_options = {k: v for k, v in options.items() if k not in CHAINS_OPTIONS}
    report = given_options.get("report")
    if report is not None and is_connect(spark):
        # written by the batches, in the server: a relative one in its working directory
        server_path(os.fspath(report), "report")  # RelativePath (an absolute one: as is)
    elif report is not None:
        # The driver writes it: a relative one is where it was when the stream started,
        # not where a batch finds the working directory (a notebook's %cd).
        given_options["report"] = os.path.abspath(os.fspath(report))
    # The sink as each batch's commit writes it, tried beside the output (then removed).
    resolved = resolver(spark)(folder, "the sink's folder")
    # Each batch's folder under the output as resolved now: a relative one made absolute
    # against the working directory of today, not of the batch's time (a notebook's %cd).
    base = resolved if is_relative(folder) else folder
    if given_options.get("report") is not None:
        # Each batch's report is named after its folder: the longest such name must fit.
        # Over Spark Connect the batches write it on the server's disk, not this one's:
        # each batch checks it there, before its first write.
        longest = run_batch_path(base, LONGEST_BATCH_ID, batch_run_id(given))
        named = batch_report(given_options["report"], longest)
        refuse_report(named, folder, disk=not is_connect(spark))
    scratch = f"{staging_path(resolved, batch_run_id(None))}-check"
    output_check(spark, struct, sink, scratch, files)
    # Untracked: each start of the query commits to folders of its own (a batch run again
    # in it replaces its folder); started again without its checkpoint, the batch ids
    # begin at 0 again, and batch=000000 of the earlier start was replaced: its rows lost.
    start = batch_run_id(None)

    def batch(frame: Any, batch_id: int) -> None:
        spark = frame.sparkSession
        settings = dict(given_options)
        marks = None
        run_id = batch_run_id(settings.pop("run_id", None))
        if tracker is not None:
            marks = StreamMarks(spark, tracker, stream_id, output, run_id, retention)
            path = run_batch_path(base, batch_id, run_id)
            target = replace(sink, path=path)
            settings["tracker"] = tracker
        else:
            path = run_batch_path(base, batch_id, start)
            target = replace(sink, path=path, overwrite=True)
        if settings.get("report") is not None:  # one file per batch run, none replaced
            settings["report"] = batch_report(settings["report"], path)
        job = tracked_job(
            spark,
            process,
            ddl,
            target,
            source=frame,
            key=key,
            on_event=on_event,
            run_id=run_id,
            marks=marks,
            **settings,
        )
        try:
            report = job.run()
        except Incurable as exc:
            # Every input of the batch failed for what the function returned for it: the
            # inputs' own failure, which stop_on_failure=False goes on past, as it does in a
            # batch where other inputs were acked.  What is wrong where the tasks run stops,
            # and so does a batch with a page of inputs never run: recorded done, it would
            # lose them (the query stops; started again, the batch runs again).
            at_fault = exc.inputs_at_fault and isinstance(exc.report, TrackedReport)
            if stop_on_failure or marks is None or not at_fault:
                raise
            report = cast(TrackedReport, exc.report)
            try:
                marks.before_commit(report)
            except Unanswered as lost:  # as the run's own phase says it
                raise job.dynamodb_failed(lost) from lost.cause
        if not report.ok:
            failed = (i for i in report.endings() if i.status == "failed")
            first = list(itertools.islice(failed, 3))  # the first three, not all in memory
            names = ", ".join(i.key for i in first)
            if first and first[0].history:  # the first one's reason
                names += f"; {first[0].key}: {first[0].history[-1]}"
            said = (
                f"micro-batch {batch_id}: {report.failed_count} inputs failed ({names}); "
                f"its output {target.path} holds the acked ones only"
            )
            stopped = job.stopped_short()
            if stopped is not None and not stopped.inputs_at_fault:  # recorded done, the
                raise BatchFailed(  # inputs not run, or failed for where tasks run, are lost
                    f"{said}; the run stopped: {stopped}: fix it and restart the query to run"
                    " the batch again (its acked inputs are not written twice)"
                ) from stopped
            if stop_on_failure:
                raise BatchFailed(
                    f"{said}: restart the query to run the batch again (its acked inputs are "
                    "not written twice), or give stop_on_failure=False to go on past inputs "
                    "that fail for good"
                )
            log.warning("%s; the query goes on (stop_on_failure=False)", said)

    writer = stream.writeStream.foreachBatch(batch).option("checkpointLocation", checkpoint)
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()
