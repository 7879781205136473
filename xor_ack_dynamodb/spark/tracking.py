"""``track()``: one tracked run of a user's per-input job (the rounds are ``job.TrackedJob``'s)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .conf import chains_config
from .declared import schema_ddl
from .errors import InvalidArgument
from .faults import FaultConfig
from .job import TrackedJob
from .job_spec import CommitMarks, EventSink, JobSpec
from .paging import DEFAULT_PAGE_SIZE
from .report import TrackedReport
from .sink import Sink
from .stages import Process
from .tracker import TrackerConfig

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def track(
    spark: Any,
    process: Process,
    schema: str | StructType,
    sink: Sink,
    *,
    source: Any = None,
    key: str | None = None,
    keys: Sequence[str] | None = None,
    table: str | None = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    partition_key: str | None = None,
    tracker: TrackerConfig | None = None,
    tracking: bool = True,
    partitions: int | None = None,
    input_tasks: int | None = None,
    max_attempts: int = 8,
    max_errors: int = 2,
    faults: FaultConfig | None = None,
    run_id: str | None = None,
    round_timeout: float | None = None,
    chain_timeout: float | None = None,
    on_event: EventSink | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    report: str | os.PathLike[str] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
) -> TrackedReport:
    """Run ``process(key, rows)`` once per input, tracked, and commit the acked inputs' rows.

    ``process`` gets an input's key and its rows (a ``pyarrow.Table`` of the
    source's other columns; empty with ``keys=`` and no source: the function reads
    the input itself) and returns a ``pyarrow.Table`` with the columns of
    ``schema`` (DDL, or a ``StructType``).  Inputs come from ``source`` (a DataFrame,
    ``key`` naming the column that says which input each row belongs to, e.g. a
    ``"file"`` column made with ``input_file()``; a row whose key is null is in no input:
    the report counts them, ``null_key_rows``)
    or from ``keys``.  The chains' table comes from ``table`` / the session's conf
    ``spark.xorack.*`` / the environment (``conf.chains_config``; ``partition_key``:
    the table's key attribute, ``tagID`` by default), unless a ``tracker`` (a
    ``TrackerConfig``) names it whole.  ``tracking=False``: no chains.

    A bad input fails alone: an exception from ``process`` fails that input's
    attempt only (its history names the input, the exception's type and message);
    it is replayed until it failed ``max_errors`` times.  The inputs of a task whose
    Python worker died run in a child process each in the next round.  A round that
    fails every input with an error no replay cures raises :class:`Incurable`.
    The output changes only as ``commit`` allows: an existing one is replaced (a
    table appended to) only when every input acked, unless ``Sink(partial=True)``.

    ``round_timeout``: seconds a round's Spark jobs may take before they are
    cancelled and the round's unfinished inputs replayed.  ``chain_timeout``: seconds from
    its creation to each chain's deadline, so that a sweep fails ("timeout") the chains of
    a driver that died before judging them (default: no deadline); give more than a page's
    rounds take, or late chains fail and their inputs are replayed.  ``on_event`` gets each
    input's end as the library's typed events (``events.Acked`` / ``events.Failed``,
    ``tag`` = the input's chain).  A ``KeyboardInterrupt`` cancels the running jobs,
    removes the staging folder and leaves the output as it was, then propagates.

    ``input_tasks``: tasks that run ``process`` (default: three per core of the session,
    at least 16; over Spark Connect three per core the server's
    ``spark.default.parallelism`` names, at least 16); ``partitions``: shuffle the rows
    into this many partitions before staging (default: no shuffle, the function's tasks
    stage them).
    ``page_size``: inputs listed and tracked at a time (the driver holds one page);
    ``report``: a file where each input's ending is written as a JSON line as it
    ends, the run's summary last (the returned report reads its inputs back from
    there, or from a temporary file); written beside it, renamed onto it when the run
    ends: a run refused or that raised leaves a former file as it was.  ``work_dir``: a
    folder where the rounds stage their rows, in a hidden folder of the run (default:
    beside the output; for a table, beside its database's folder), refused at or inside
    the output's folder.
    """
    return tracked_job(
        spark,
        process,
        schema,
        sink,
        source=source,
        key=key,
        keys=keys,
        table=table,
        endpoint_url=endpoint_url,
        region=region,
        partition_key=partition_key,
        tracker=tracker,
        tracking=tracking,
        partitions=partitions,
        input_tasks=input_tasks,
        max_attempts=max_attempts,
        max_errors=max_errors,
        faults=faults,
        run_id=run_id,
        round_timeout=round_timeout,
        chain_timeout=chain_timeout,
        on_event=on_event,
        page_size=page_size,
        report=report,
        work_dir=work_dir,
    ).run()


def tracked_job(
    spark: Any, process: Process, schema: str | StructType, sink: Sink, **options: Any
) -> TrackedJob:
    """:func:`track`'s job, not run yet: ``options`` as :func:`job_spec` takes them
    (``marks``: ``track_stream``'s commit marks)."""
    return TrackedJob(spark, job_spec(spark, process, schema, sink, **options))


def job_spec(
    spark: Any,
    process: Process,
    schema: str | StructType,
    sink: Sink,
    *,
    table: str | None = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    partition_key: str | None = None,
    tracker: TrackerConfig | None = None,
    tracking: bool = True,
    faults: FaultConfig | None = None,
    report: str | os.PathLike[str] | None = None,
    marks: CommitMarks | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    **options: Any,
) -> JobSpec:
    """:func:`track`'s arguments as a checked :class:`JobSpec` (the chains' table resolved)."""
    if report is not None and not isinstance(report, str | os.PathLike):
        raise InvalidArgument(f"report={report!r}: give a file's path, or None")
    if work_dir is not None and not isinstance(work_dir, str | os.PathLike):
        raise InvalidArgument(f"work_dir={work_dir!r}: give a folder's path, or None")
    if not isinstance(tracking, bool):
        raise InvalidArgument(
            f"tracking={tracking!r}: give True (each input tracked by a chain) or False (the "
            "job alone, no chains)"
        )
    if tracker is None and tracking:
        tracker = chains_config(
            spark,
            table=table,
            endpoint_url=endpoint_url,
            region=region,
            partition_key=partition_key,
        )
    return JobSpec(
        process=process,
        schema=schema_ddl(schema),
        sink=sink,
        tracker=tracker if tracking else None,
        faults=faults or FaultConfig(),
        report_path=None if report is None else os.fspath(report),
        marks=marks,
        work_dir=None if work_dir is None else os.fspath(work_dir),
        **options,
    )
