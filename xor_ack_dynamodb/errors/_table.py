"""What a table, its stream or its indexes lack, or an upgrade of them could not finish;
import them from ``errors``.

Kept apart from ``errors`` only for size, as ``_failures`` is: ``errors`` re-exports every
name here, and each class says ``xor_ack_dynamodb.errors`` as its module.
"""

from __future__ import annotations

from ._failures import _MODULE, XorAckError


class TableMismatch(XorAckError):
    """An existing table has another key schema or TTL attribute than the clients expect
    (raised by ``sweep()`` and ``list_chains()`` as well as by the table tools)."""

    __module__ = _MODULE


class RegionMissing(XorAckError):
    """No AWS region was given or configured for a DynamoDB client."""

    __module__ = _MODULE

    def __init__(self) -> None:
        super().__init__(
            "no AWS region for AWS's endpoint: set AWS_REGION (or AWS_DEFAULT_REGION), pass "
            "region_name=, or set region in the AWS profile (~/.aws/config); for DynamoDB "
            'Local, set AWS_ENDPOINT_URL_DYNAMODB to it (`eval "$(xor-ack local start)"` '
            "starts one and sets it)"
        )


class NotDynamoDB(XorAckError):
    """The endpoint answered a request as no DynamoDB does: a success or a refusal (4xx)
    whose body is not DynamoDB's JSON (a web page, another service).  Nothing was read or
    written there."""

    __module__ = _MODULE

    def __init__(self, endpoint: str, operation: str, status: int, content_type: str) -> None:
        said = (
            f"{endpoint} answered {operation} with HTTP {status} and no DynamoDB reply"
            f" ({content_type or 'no content type'}): it is not DynamoDB, so nothing was"
            " read or written there; check the endpoint URL"
        )
        super().__init__(f"{said} (endpoint_url=, or AWS_ENDPOINT_URL_DYNAMODB)")
        self.cli_message = f"{said} (--endpoint-url, or AWS_ENDPOINT_URL_DYNAMODB)"
        self.endpoint = endpoint
        self.operation = operation
        self.status = status


class CorruptRecord(XorAckError):
    """A DynamoDB Streams record that is not a chain's transition: not a stream record of
    the expected shape, an image missing (the stream must be ``NEW_AND_OLD_IMAGES``), or an
    image that is not a chain item (``item.decode`` refused it).

    ``.record`` names the record (sequence number and event id); the other records of
    the batch are decoded all the same.
    """

    __module__ = _MODULE

    def __init__(self, record: str, problem: str) -> None:
        super().__init__(
            f"stream {record} {problem}: it is not a transition of an xor-ack chain (check "
            "that the stream is NEW_AND_OLD_IMAGES and the table holds only chains)"
        )
        self.record = record
        self.problem = problem


class StreamNotEnabled(XorAckError):
    """The table has no DynamoDB stream to read events from."""

    __module__ = _MODULE

    def __init__(self, table: str) -> None:
        super().__init__(
            f"table {table} has no stream: enable one with view type NEW_AND_OLD_IMAGES "
            "(tables made by `xor-ack table create` have it; `aws dynamodb update-table "
            f"--table-name {table} --stream-specification "
            "StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES` adds it)"
        )
        self.table = table


class StreamReadFailed(XorAckError):
    """A shard of the stream could not be read: its reads failed that many times in a row.

    Raised by ``events.read`` (``xor-ack chain stats``) rather than counting a stream without
    that shard's records.  ``.shard`` names it, ``.attempts`` the reads that failed in a row;
    the last read's error (access denied, throttled past botocore's retries, ...) is the
    ``__cause__``.  A follower (``events.follow``) never raises it: it reports each failure
    and keeps trying.
    """

    __module__ = _MODULE

    def __init__(self, shard: str, attempts: int, error: str) -> None:
        super().__init__(
            f"shard {shard} of the stream could not be read: {attempts} reads of it in a row "
            f"failed (last: {error}); nothing is counted without its records. Check that the "
            "reader may read the stream (GetRecords, GetShardIterator) and try again"
        )
        self.shard = shard
        self.attempts = attempts


class InventoryMissing(XorAckError):
    """The table has no inventory index to sweep or list: an earlier release made it."""

    __module__ = _MODULE

    def __init__(self, table: str, index: str) -> None:
        said = (
            f"table {table} has no index {index}: an earlier release made it, before the "
            "inventory that sweeps and lists read; nothing was written. Add the indexes with "
        )
        super().__init__(f"{said}upgrade_table() or `xor-ack --table {table} table upgrade`")
        self.cli_message = f"{said}`xor-ack --table {table} table upgrade`"
        self.table = table
        self.index = index


class InventoryBuilding(InventoryMissing):
    """The inventory index is there, still being built (its backfill after ``table
    upgrade``): DynamoDB refuses to read it until it is ACTIVE."""

    __module__ = _MODULE

    def __init__(self, table: str, index: str) -> None:
        XorAckError.__init__(
            self,
            f"index {index} of table {table} is still being built (DynamoDB backfills it from"
            " every item after `table upgrade`) and cannot be read yet; nothing was written:"
            f" run `xor-ack --table {table} table upgrade` to wait until it is ACTIVE (or"
            " `table describe` to see it), then again",
        )
        self.table = table
        self.index = index


class StreamViewConflict(XorAckError):
    """The table already has a stream of another view type than the events need.

    Nothing was changed.  DynamoDB keeps one stream per table, so the upgrade does not
    replace a stream another consumer may read.
    """

    __module__ = _MODULE

    def __init__(self, table: str, view: str, needed: str) -> None:
        super().__init__(
            f"table {table} already has a stream with view type {view}; the chain events need "
            f"{needed}. Nothing was changed. If no other consumer reads that stream, turn it off "
            f"(aws dynamodb update-table --table-name {table} --stream-specification "
            "StreamEnabled=false) and run `xor-ack table upgrade` again"
        )
        self.table = table
        self.view = view


class UpgradeTimeout(XorAckError):
    """An index the upgrade created was not ACTIVE within the time allowed."""

    __module__ = _MODULE

    def __init__(self, table: str, index: str, status: str, seconds: float) -> None:
        super().__init__(
            f"index {index} of table {table} is still {status} after {seconds:g} s (DynamoDB "
            "backfills it from every item); nothing is lost: run `xor-ack table upgrade` "
            "again later to wait for it and finish (or pass a longer --timeout)"
        )
        self.table = table
        self.index = index
