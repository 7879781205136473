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
