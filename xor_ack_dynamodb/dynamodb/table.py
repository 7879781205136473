"""The table the clients expect: one definition shared by the CLI, the tests and the demo.

``TableSpec`` is the single source of the table's shape: a partition key of type
``S`` holding the tag (attribute name configurable, default ``tagID``) and TTL on
``expires_at``.  The CloudFormation template (``infra/table.yaml``) and
``docker-compose.yml`` declare the same key schema and TTL attribute;
``tests/infra`` parses both and compares them with ``TableSpec``.

The functions take a boto3 DynamoDB client, so they work against AWS,
DynamoDB Local and moto alike.  Creating and deleting a table, and the proof that an
existing table holds chains before anything changes it, are ``ownership``'s.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from ..errors import InvalidArgument, TableMismatch, XorAckError
from .aws import error_code
from .item import (
    ATTRIBUTES as ITEM_ATTRIBUTES,
)
from .item import (
    DEFAULT_PARTITION_KEY,
    DUE_AT,
    EXPIRES_AT,
    FAILED_AT,
    FAILED_INDEX,
    FAILED_SHARD,
    INVENTORY_SHARDS,
    OPEN_INDEX,
    OPEN_SHARD,
)

# The inventory's index names and its number of shards are public here, for readers of
# the indexes (the dashboard): docs/inventory.md.
__all__ = [
    "DEFAULT_TABLE",
    "FAILED_INDEX",
    "INDEXES",
    "INVENTORY_SHARDS",
    "OPEN_INDEX",
    "STREAM_VIEW",
    "TTL_ATTRIBUTE",
    "InvalidTableSpec",
    "TableInfo",
    "TableMismatch",
    "TableSpec",
    "TableWaitTimeout",
    "describe_table",
    "index_keys",
    "ttl_on",
    "wait_active",
]

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import StreamSpecificationTypeDef, TableDescriptionTypeDef

DEFAULT_TABLE = "xor-ack-chains"
#: DynamoDB type of the partition key: the tag is a string.
KEY_TYPE = "S"
#: The TTL attribute, fixed by the item layout (``item.EXPIRES_AT``).
TTL_ATTRIBUTE = EXPIRES_AT


def ttl_on(ttl: Mapping[str, Any]) -> bool:
    """Is TTL on, or being turned on, by a ``DescribeTimeToLive`` result's
    ``TimeToLiveDescription`` (whatever its attribute)?"""
    return ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")


def chains_ttl_on(table: str, ttl: Mapping[str, Any]) -> bool:
    """Is TTL on (or being turned on) for the chains' ``expires_at``?  ``TableMismatch``
    when it is on for another attribute: DynamoDB allows one TTL attribute per table, and
    expired chains would never go away."""
    if not ttl_on(ttl):
        return False
    attribute = ttl.get("AttributeName")
    if attribute not in (None, TTL_ATTRIBUTE):
        raise TableMismatch(
            f"table {table} has TTL on {attribute!r}, the clients expire chains through "
            f"{TTL_ATTRIBUTE!r}: DynamoDB allows one TTL attribute per table; use another "
            "table"
        )
    return True


#: The sparse inventory indexes (name -> (partition key, sort key)), both numbers,
#: both KEYS_ONLY: see ``item.OPEN_INDEX``.
INDEXES: dict[str, tuple[str, str]] = {
    OPEN_INDEX: (OPEN_SHARD, DUE_AT),
    FAILED_INDEX: (FAILED_SHARD, FAILED_AT),
}
#: The table's stream: both images, so a consumer sees each transition
#: (created, acked, failed, expired, deleted) from one record.
STREAM_VIEW = "NEW_AND_OLD_IMAGES"

BillingMode = Literal["PAY_PER_REQUEST", "PROVISIONED"]
BILLING_MODES: tuple[BillingMode, ...] = ("PAY_PER_REQUEST", "PROVISIONED")

_TABLE_NAME = re.compile(r"[a-zA-Z0-9_.-]{3,255}")


class InvalidTableSpec(XorAckError):
    """A table name, key name, billing mode or capacity that DynamoDB would refuse."""


class TableWaitTimeout(XorAckError, TimeoutError):
    """A table was not ACTIVE (or gone, after DeleteTable) within the time waited.

    Nothing is undone: DynamoDB goes on creating, updating or deleting it.  ``left`` says
    what the interrupted call did not get to do.
    """

    def __init__(self, table: str, status: str, seconds: float, left: str = "") -> None:
        super().__init__(
            f"table {table} is still {status} after {seconds:g} s; "
            + (left or "DynamoDB goes on with it")
        )
        self.table = table
        self.status = status
        self.seconds = seconds


@dataclass(frozen=True)
class TableSpec:
    """Name, key and capacity of an ack-chain table."""

    name: str = DEFAULT_TABLE
    partition_key: str = DEFAULT_PARTITION_KEY
    billing_mode: BillingMode = "PAY_PER_REQUEST"
    read_capacity: int = 5
    write_capacity: int = 5

    def __post_init__(self) -> None:
        for field_name in ("name", "partition_key"):
            value = getattr(self, field_name)
            if not isinstance(value, str):
                raise InvalidTableSpec(
                    f"{field_name}={value!r} is not valid: give the table's {field_name} as a "
                    "string"
                )
        if not _TABLE_NAME.fullmatch(self.name):
            raise InvalidTableSpec(
                f"table name {self.name!r} is not valid: 3 to 255 characters of "
                "a-z, A-Z, 0-9, '_', '-' and '.'"
            )
        try:
            size = len(self.partition_key.encode())
        except UnicodeEncodeError as exc:  # a lone surrogate: a non-UTF-8 byte of argv
            raise InvalidTableSpec(
                f"partition key {self.partition_key!r} is not valid: 1 to 255 bytes of UTF-8 "
                "(no lone surrogates)"
            ) from exc
        if not self.partition_key or size > 255:
            raise InvalidTableSpec(
                f"partition key {self.partition_key!r} is not valid: 1 to 255 bytes"
            )
        if self.partition_key in ITEM_ATTRIBUTES:
            raise InvalidTableSpec(
                f"partition key cannot be {self.partition_key!r}: the chain item uses that "
                "attribute; pick another name (the default is "
                f"{DEFAULT_PARTITION_KEY!r})"
            )
        if self.billing_mode not in BILLING_MODES:
            raise InvalidTableSpec(
                f"billing mode {self.billing_mode!r} is not one of {', '.join(BILLING_MODES)}"
            )
        if self.read_capacity < 1 or self.write_capacity < 1:
            raise InvalidTableSpec("read and write capacity must be at least 1")

    @property
    def ttl_attribute(self) -> str:
        return TTL_ATTRIBUTE

    def key_schema(self) -> list[dict[str, str]]:
        return [{"AttributeName": self.partition_key, "KeyType": "HASH"}]

    def attribute_definitions(self) -> list[dict[str, str]]:
        indexed = sorted({name for keys in INDEXES.values() for name in keys})
        return [{"AttributeName": self.partition_key, "AttributeType": KEY_TYPE}] + [
            {"AttributeName": name, "AttributeType": "N"} for name in indexed
        ]

    def index_request(self, name: str) -> dict[str, Any]:
        """The ``GlobalSecondaryIndexes`` entry of inventory index ``name``."""
        shard, sort = INDEXES[name]
        index: dict[str, Any] = {
            "IndexName": name,
            "KeySchema": [
                {"AttributeName": shard, "KeyType": "HASH"},
                {"AttributeName": sort, "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
            **self.throughput(),
        }
        return index

    def throughput(self) -> dict[str, Any]:
        """``ProvisionedThroughput`` for a provisioned table (or index), else nothing."""
        if self.billing_mode != "PROVISIONED":
            return {}
        units = {"ReadCapacityUnits": self.read_capacity, "WriteCapacityUnits": self.write_capacity}
        return {"ProvisionedThroughput": units}

    def create_request(self) -> dict[str, Any]:
        """The ``CreateTable`` parameters for this table."""
        request: dict[str, Any] = {
            "TableName": self.name,
            "AttributeDefinitions": self.attribute_definitions(),
            "KeySchema": self.key_schema(),
            "BillingMode": self.billing_mode,
            "GlobalSecondaryIndexes": [self.index_request(name) for name in INDEXES],
            "StreamSpecification": {"StreamEnabled": True, "StreamViewType": STREAM_VIEW},
        }
        if self.billing_mode == "PROVISIONED":
            request["ProvisionedThroughput"] = {
                "ReadCapacityUnits": self.read_capacity,
                "WriteCapacityUnits": self.write_capacity,
            }
        return request

    def ttl_request(self) -> dict[str, Any]:
        """The ``UpdateTimeToLive`` parameters that turn TTL on for this table."""
        return {
            "TableName": self.name,
            "TimeToLiveSpecification": {"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
        }

    def check(self, table: TableDescriptionTypeDef) -> None:
        """Raise ``TableMismatch`` unless a ``DescribeTable`` result has this key schema."""
        key = table.get("KeySchema", [])
        types = {
            a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", [])
        }
        hash_keys = [k["AttributeName"] for k in key if k["KeyType"] == "HASH"]
        has_sort_key = any(k["KeyType"] == "RANGE" for k in key)
        if hash_keys != [self.partition_key] or has_sort_key:
            found = ", ".join(f"{k['AttributeName']} ({k['KeyType']})" for k in key) or "none"
            said = f"table {self.name} has key {found}, expected {self.partition_key} (HASH) only"
            rest = "; only a chains table made with another partition key is used with that key"
            raise TableMismatch(
                f"{said}: name the chains table (table=...){rest} (partition_key=...)"
            ).with_cli(f"{said}: name the chains table (--table){rest} (--partition-key)")
        if types.get(self.partition_key) != KEY_TYPE:
            raise TableMismatch(
                f"table {self.name}: partition key {self.partition_key} has type "
                f"{types.get(self.partition_key)}, expected {KEY_TYPE}"
            )


@dataclass(frozen=True)
class TableInfo:
    """What ``describe_table`` reports about an existing table."""

    name: str
    arn: str
    status: str
    partition_key: str
    partition_key_type: str
    billing_mode: str
    read_capacity: int
    write_capacity: int
    item_count: int
    size_bytes: int
    ttl_status: str
    ttl_attribute: str | None
    deletion_protection: bool
    sse_status: str | None
    #: The stream's view type, None when the table has no stream enabled.
    stream_view: str | None = None
    stream_arn: str | None = None
    #: Global secondary indexes: name -> status (ACTIVE, CREATING, ...).
    indexes: dict[str, str] = field(default_factory=dict)
    #: The sort key and its type, if the table has one (a chains table has none).
    sort_key: str | None = None
    sort_key_type: str | None = None

    @property
    def keyed_as_chains(self) -> bool:
        """Is the key a string partition key alone, as every chains table's?"""
        return self.partition_key_type == KEY_TYPE and self.sort_key is None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _flag(value: Any) -> bool:
    # moto reports CloudFormation's "true"/"false" parameters as strings
    return value.lower() == "true" if isinstance(value, str) else bool(value)


def describe_table(client: DynamoDBClient, name: str) -> TableInfo:
    """Describe the table and its TTL setting; ``ResourceNotFoundException`` when missing.

    Needs ``dynamodb:DescribeTable``; without ``dynamodb:DescribeTimeToLive`` the TTL
    status is reported as unknown.
    """
    table = client.describe_table(TableName=name)["Table"]
    try:
        ttl = client.describe_time_to_live(TableName=name).get("TimeToLiveDescription", {})
        ttl_status = str(ttl.get("TimeToLiveStatus", "DISABLED"))
    except ClientError as exc:
        # A policy other than infra/table.yaml's may grant DescribeTable, not DescribeTimeToLive.
        if error_code(exc) != "AccessDeniedException":
            raise
        ttl, ttl_status = {}, "UNKNOWN (no dynamodb:DescribeTimeToLive permission)"
    hash_key = next(k["AttributeName"] for k in table["KeySchema"] if k["KeyType"] == "HASH")
    sort_keys = [k["AttributeName"] for k in table["KeySchema"] if k["KeyType"] == "RANGE"]
    types = {a["AttributeName"]: a["AttributeType"] for a in table["AttributeDefinitions"]}
    throughput = table.get("ProvisionedThroughput") or {}
    billing = (table.get("BillingModeSummary") or {}).get("BillingMode") or "PROVISIONED"
    stream: StreamSpecificationTypeDef | dict[str, Any] = table.get("StreamSpecification") or {}
    return TableInfo(
        name=table["TableName"],
        arn=table.get("TableArn", ""),
        status=table.get("TableStatus", ""),
        partition_key=hash_key,
        partition_key_type=types.get(hash_key, ""),
        billing_mode=billing,
        read_capacity=int(throughput.get("ReadCapacityUnits", 0)),
        write_capacity=int(throughput.get("WriteCapacityUnits", 0)),
        item_count=int(table.get("ItemCount", 0)),
        size_bytes=int(table.get("TableSizeBytes", 0)),
        ttl_status=ttl_status,
        ttl_attribute=ttl.get("AttributeName"),
        deletion_protection=_flag(table.get("DeletionProtectionEnabled", False)),
        sse_status=(table.get("SSEDescription") or {}).get("Status"),
        stream_view=str(stream["StreamViewType"]) if stream.get("StreamEnabled") else None,
        stream_arn=table.get("LatestStreamArn") if stream.get("StreamEnabled") else None,
        indexes={
            str(index["IndexName"]): str(index.get("IndexStatus", ""))
            for index in table.get("GlobalSecondaryIndexes") or []
        },
        sort_key=sort_keys[0] if sort_keys else None,
        sort_key_type=types.get(sort_keys[0], "") if sort_keys else None,
    )


def wait_budget(timeout: object) -> float:
    """``timeout``, the seconds a table operation waits, if it is a number above 0;
    ``InvalidArgument`` otherwise (before the operation's first request)."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise InvalidArgument(
            f"timeout={timeout!r} is not valid: the seconds to wait for the table, a number"
            " above 0 (pass wait=False not to wait)"
        )
    return float(timeout)


def wait_active(client: DynamoDBClient, name: str, *, timeout: float = 60.0) -> None:
    """Poll until the table is ACTIVE (``TableWaitTimeout`` after ``timeout`` seconds)."""
    wait_budget(timeout)
    deadline = time.monotonic() + timeout
    while (status := client.describe_table(TableName=name)["Table"]["TableStatus"]) != "ACTIVE":
        if time.monotonic() > deadline:
            raise TableWaitTimeout(name, status, timeout)
        time.sleep(0.2)


def index_keys(index: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """An index's (HASH, RANGE) attribute names, from a ``DescribeTable`` result."""
    keys = {k["KeyType"]: k["AttributeName"] for k in index.get("KeySchema", [])}
    return keys.get("HASH"), keys.get("RANGE")
