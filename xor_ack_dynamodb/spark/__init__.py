"""Track any PySpark job per input: chains in DynamoDB, replay, exactly-once output.

Layer: an integration. Imports the DynamoDB tracker and the vocabulary; its output rules,
faults, errors and config are its own (never the word count's, which is built on it).

DataFrame API only, so the same code runs on ``local[*]``, a cluster
(``spark-submit --master spark://...``) and over Spark Connect
(``SPARK_REMOTE=sc://...``).  See ``docs/spark.md``.
"""

from __future__ import annotations

from .columns import input_file
from .conf import chains_config
from .errors import (
    BatchFailed,
    ChainsTableMissing,
    ConnectCheckFailed,
    DatabaseMissing,
    DynamoDBFailed,
    FinishFailed,
    Incurable,
    InputEmpty,
    InputMissing,
    InputRejected,
    InputsInterleaved,
    InvalidArgument,
    KeyColumnMissing,
    OutputDisplaced,
    OutputExists,
    OutputNotOurs,
    OutputUnusable,
    OutputUnwritable,
    OutputWriteFailed,
    PartitionColumnMissing,
    Refused,
    RelativePath,
    RemoteFilesUnsupported,
    ReservedColumn,
    RoundTimedOut,
    RunIdInUse,
    SchemaInvalid,
    SparkTrackingError,
    TableColumnsDiffer,
    TornBatch,
    TrackingNotConfigured,
    UntrackedRunFailed,
)
from .faults import FaultConfig
from .job import TrackedJob
from .job_spec import EventSink, JobSpec
from .report import InputResult, RoundObserver, RoundSummary, TrackedReport
from .sink import Sink
from .stages import Process
from .streaming import track_stream
from .tracker import TrackerConfig
from .tracking import track

__all__ = [
    "BatchFailed",
    "ChainsTableMissing",
    "ConnectCheckFailed",
    "DatabaseMissing",
    "DynamoDBFailed",
    "EventSink",
    "FaultConfig",
    "FinishFailed",
    "Incurable",
    "InputEmpty",
    "InputMissing",
    "InputRejected",
    "InputResult",
    "InputsInterleaved",
    "InvalidArgument",
    "JobSpec",
    "KeyColumnMissing",
    "OutputDisplaced",
    "OutputExists",
    "OutputNotOurs",
    "OutputUnusable",
    "OutputUnwritable",
    "OutputWriteFailed",
    "PartitionColumnMissing",
    "Process",
    "Refused",
    "RelativePath",
    "RemoteFilesUnsupported",
    "ReservedColumn",
    "RoundObserver",
    "RoundSummary",
    "RoundTimedOut",
    "RunIdInUse",
    "SchemaInvalid",
    "Sink",
    "SparkTrackingError",
    "TableColumnsDiffer",
    "TornBatch",
    "TrackedJob",
    "TrackedReport",
    "TrackerConfig",
    "TrackingNotConfigured",
    "UntrackedRunFailed",
    "chains_config",
    "input_file",
    "track",
    "track_stream",
]


def __getattr__(name: str) -> object:
    """Deprecated names (``OutputSchemaMismatch``), with a warning: see ``errors``."""
    if name == "OutputSchemaMismatch":
        from . import errors

        return errors.__getattr__(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
