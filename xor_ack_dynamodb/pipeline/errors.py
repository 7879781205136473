"""Errors of the pipeline that a user can act on."""

from __future__ import annotations

from ..errors import XorAckError


class PipelineError(XorAckError):
    """The word count cannot run as asked; the message says why and what to do."""


class TableMissing(PipelineError):
    """The chains table named with ``--table`` does not exist where the run looks for it."""

    def __init__(self, table: str, where: str) -> None:
        super().__init__(
            f"table {table!r} not found at {where}: create it with "
            f"`xor-ack --table {table} table create` (or leave out --endpoint-url/--table "
            "to run against a local DynamoDB that the command starts)"
        )
        self.table = table


class Refused(PipelineError):
    """The run was refused before anything was read or written (the CLI exits 2)."""


class InputMissing(Refused):
    """INPUT does not exist (or is a broken symbolic link)."""


class InputEmpty(Refused):
    """INPUT holds no file to count."""


class PathsOverlap(Refused):
    """OUTPUT, --report or --work-dir is INPUT, lies inside it, or contains it."""


class OutputExists(Refused):
    """OUTPUT exists and is not empty, and --overwrite was not given."""


class OutputNotOurs(Refused):
    """--overwrite was given but OUTPUT is not a folder this tool wrote (or holds more)."""


class ReportExists(Refused):
    """--report names an existing file and --overwrite was not given, or it is no report."""


class SampleExists(Refused):
    """DIRECTORY of ``wordcount-sample`` holds files that are not this very sample."""
