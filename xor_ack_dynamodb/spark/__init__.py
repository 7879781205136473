"""Track any PySpark job per input: chains in DynamoDB, replay, exactly-once output.

DataFrame API only, so the same code runs on ``local[*]``, a cluster
(``spark-submit --master spark://...``) and over Spark Connect
(``SPARK_REMOTE=sc://...``).  See ``docs/spark.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..pipeline.faults import FaultConfig
from .conf import chains_config
from .errors import BatchFailed, OutputSchemaMismatch, RemoteFilesUnsupported, TrackingNotConfigured
from .job import JobSpec, TrackedJob
from .report import InputResult, RoundSummary, TrackedReport
from .sink import Sink
from .stages import Process

__all__ = [
    "BatchFailed",
    "FaultConfig",
    "InputResult",
    "JobSpec",
    "OutputSchemaMismatch",
    "RemoteFilesUnsupported",
    "RoundSummary",
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
    tracking: bool = True,
    partitions: int | None = None,
    max_attempts: int = 8,
    faults: FaultConfig | None = None,
    run_id: str | None = None,
) -> TrackedReport:
    """Run ``process(key, rows)`` once per input, tracked, and commit the acked inputs' rows.

    ``process`` gets an input's key and its rows (a ``pyarrow.Table`` of the
    source's other columns; empty with ``keys=`` and no source: the function reads
    the input itself) and returns a ``pyarrow.Table`` with the columns of
    ``schema`` (DDL).  Inputs come from ``source`` (a DataFrame, ``key`` naming the
    column that says which input each row belongs to, e.g. ``_metadata.file_path``)
    or from ``keys``.  The chains' table comes from ``table`` / the session's conf
    ``spark.xorack.*`` / the environment (``conf.chains_config``).
    """
    tracker = (
        chains_config(spark, table=table, endpoint_url=endpoint_url, region=region)
        if tracking
        else None
    )
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
    )
    return TrackedJob(spark, spec).run()


from .streaming import track_stream  # noqa: E402 - it calls track, defined above
