"""Errors of the word count that a user can act on.

The Spark library's errors (:mod:`xor_ack_dynamodb.spark.errors`) reach the
command as they are; the word count adds its own refusals below, under the same
base (``PipelineError`` is the library's ``SparkTrackingError``).
"""

from __future__ import annotations

from ..spark.errors import (
    InputEmpty,
    InputMissing,
    OutputExists,
    OutputNotOurs,
    OutputUnusable,
    Refused,
    SparkTrackingError,
)
from ..spark.paths import MANIFEST, shown

#: The base of every error of the word count: the Spark library's.
PipelineError = SparkTrackingError

__all__ = [
    "FolderUnwritable",
    "InputEmpty",
    "InputMissing",
    "NameUnwatchable",
    "OutputExists",
    "OutputNotOurs",
    "PathsOverlap",
    "PipelineError",
    "Refused",
    "ReportExists",
    "ReportUnwritable",
    "SampleExists",
    "SampleUnwritable",
    "TableMissing",
    "in_command_terms",
]

COMMAND = "xor-ack wordcount"


def in_command_terms(exc: Refused) -> Refused:
    """The library's refusal of an output, said with the command's options.

    The library speaks of ``Sink(overwrite=True)``; the command's user passes
    ``--output`` and ``--overwrite``.  Other refusals are returned as they are.
    """
    if isinstance(exc, OutputUnusable):
        return exc  # said in neither the library's words nor the command's
    if isinstance(exc, OutputExists):
        if exc.is_file:
            said = (
                f"output {exc.output} is a file: choose a folder name for --output that does "
                "not exist"
            )
        else:
            said = (
                f"output {exc.output} exists and is not empty: choose another --output, or "
                f"pass --overwrite to replace a folder that {COMMAND} wrote before"
            )
        return OutputExists(said, exc.output, exc.is_file)
    if isinstance(exc, OutputNotOurs):
        if exc.extra:
            said = (
                f"output {exc.output} holds {len(exc.extra)} entries {COMMAND} did not write "
                f"({shown(list(exc.extra))}), so --overwrite does not replace it: move them "
                "away or choose another --output"
            )
        else:
            said = (
                f"output {exc.output} was not written by {COMMAND} (no valid {MANIFEST}), so "
                "--overwrite does not replace it: choose another --output"
            )
        return OutputNotOurs(said, exc.output, exc.extra)
    return exc


class TableMissing(PipelineError):
    """The chains table named with ``--table`` does not exist where the run looks for it."""

    def __init__(self, table: str, where: str) -> None:
        super().__init__(
            f"table {table!r} not found at {where}: create it with "
            f"`xor-ack --table {table} table create` (or leave out --endpoint-url/--table "
            "to run against a local DynamoDB that the command starts)"
        )
        self.table = table


class PathsOverlap(Refused):
    """OUTPUT, --report or --work-dir is INPUT, lies inside it, or contains it."""


class ReportExists(Refused):
    """--report names an existing file and --overwrite was not given, or it is no report."""


class ReportUnwritable(Refused):
    """--report lies under a file, or under a folder this process may not write to."""


class FolderUnwritable(Refused):
    """OUTPUT's folder or --work-dir lies under a file, or under a folder this process may not
    write to."""


class SampleExists(Refused):
    """DIRECTORY of ``wordcount-sample`` holds files that are not this very sample."""


class SampleUnwritable(Refused):
    """DIRECTORY of ``wordcount-sample`` cannot be created (under a file, no permission)."""


class NameUnwatchable(Refused):
    """A file in the INPUT of ``--watch`` has a name Spark's file source cannot read (a
    ``:``, which no Hadoop path holds): the stream's listing would stop at it, every file."""
