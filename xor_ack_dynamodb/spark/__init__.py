"""Track any PySpark job per input: chains in DynamoDB, replay, exactly-once output.

DataFrame API only, so the same code runs on ``local[*]``, a cluster
(``spark-submit --master spark://...``) and over Spark Connect
(``SPARK_REMOTE=sc://...``).  See ``docs/spark.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..pipeline.faults import FaultConfig
from ..pipeline.tracker import TrackerConfig
from .conf import chains_config
from .errors import (
    BatchFailed,
    InputRejected,
    OutputSchemaMismatch,
    RemoteFilesUnsupported,
    RoundTimedOut,
    TrackingNotConfigured,
)
from .job import EventSink, JobSpec, TrackedJob
from .report import InputResult, RoundObserver, RoundSummary, TrackedReport
from .sink import Sink
from .stages import Process

__all__ = [
    "BatchFailed",
    "EventSink",
    "FaultConfig",
    "InputRejected",
    "InputResult",
    "JobSpec",
    "OutputSchemaMismatch",
    "RemoteFilesUnsupported",
    "RoundObserver",
    "RoundSummary",
    "RoundTimedOut",
    "Sink",
    "TrackedJob",
    "TrackedReport",
    "TrackingNotConfigured",
    "chains_config",
    "track",
    "track_stream",
]


def track(
    spark: Any,
    process: Process,
    schema: str,
    sink: Sink,
    *,
    source: Any = None,
    key: str | None = None,
    keys: Sequence[str] | None = None,
    table: str | None = None,
    endpoint_url: str | None = None,
    region: str | None = None,
    tracker: TrackerConfig | None = None,
    tracking: bool = True,
    partitions: int | None = None,
    max_attempts: int = 8,
    faults: FaultConfig | None = None,
    run_id: str | None = None,
    round_timeout: float | None = None,
    on_event: EventSink | None = None,
) -> TrackedReport:
    """Run ``process(key, rows)`` once per input, tracked, and commit the acked inputs' rows.

    ``process`` gets an input's key and its rows (a ``pyarrow.Table`` of the
    source's other columns; empty with ``keys=`` and no source: the function reads
    the input itself) and returns a ``pyarrow.Table`` with the columns of
    ``schema`` (DDL).  Inputs come from ``source`` (a DataFrame, ``key`` naming the
    column that says which input each row belongs to, e.g. ``_metadata.file_path``)
    or from ``keys``.  The chains' table comes from ``table`` / the session's conf
    ``spark.xorack.*`` / the environment (``conf.chains_config``), unless a
    ``tracker`` (a ``TrackerConfig``) names it whole.  ``tracking=False``: no chains.

    ``round_timeout``: seconds a round's Spark jobs may take before they are
    cancelled and the round's unfinished inputs replayed.  ``on_event`` gets each
    input's end as the library's typed events (``events.Acked`` / ``events.Failed``,
    ``tag`` = the input's chain).  A ``KeyboardInterrupt`` cancels the running jobs,
    removes the staging folder and leaves the output as it was, then propagates.
    """
    if tracker is None and tracking:
        tracker = chains_config(spark, table=table, endpoint_url=endpoint_url, region=region)
    if not tracking:
        tracker = None
    spec = JobSpec(
        process=process,
        schema=schema,
        sink=sink,
        source=source,
        key=key,
        keys=keys,
        tracker=tracker,
        partitions=partitions,
        max_attempts=max_attempts,
        faults=faults or FaultConfig(),
        run_id=run_id,
        round_timeout=round_timeout,
        on_event=on_event,
    )
    return TrackedJob(spark, spec).run()


from .streaming import track_stream  # noqa: E402 - it calls track, defined above
