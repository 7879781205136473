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
    Refused,
    SparkTrackingError,
)

#: The base of every error of the word count: the Spark library's.
PipelineError = SparkTrackingError

__all__ = [
    "InputEmpty",
    "InputMissing",
    "OutputExists",
    "OutputNotOurs",
    "PathsOverlap",
    "PipelineError",
    "Refused",
    "ReportExists",
    "SampleExists",
    "TableMissing",
]


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


class SampleExists(Refused):
    """DIRECTORY of ``wordcount-sample`` holds files that are not this very sample."""
