"""The changes the tooling makes to tables, and the proof that a table is its own.

``create_table`` makes a chains table as ``TableSpec`` says (TTL on) and leaves an existing
one as it is; ``delete_table`` deletes one.  Nothing changes or deletes a table that does
not show it is a chains table (``NotAChainsTable``, with nothing changed):
``check_deletable`` before ``delete_table`` (the shape ``create_table`` gives),
``check_chains_table`` before ``upgrade_table`` or ``create_table`` accepts an existing
table (that shape, or items that are all chains).  DynamoDB Local does not support tags,
so none is relied on.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..errors import InvalidArgument, XorAckError
from .aws import error_code
from .item import ATTRIBUTES as ITEM_ATTRIBUTES
from .item import CHAIN_ID, STAMP, VERSION, is_marker_key
from .table import (
    INDEXES,
    KEY_TYPE,
    TTL_ATTRIBUTE,
    TableSpec,
    TableWaitTimeout,
    chains_ttl_on,
    index_keys,
    ttl_on,
    wait_active,
    wait_budget,
)

__all__ = [
    "NotAChainsTable",
    "check_chains_table",
    "check_deletable",
    "create_table",
    "delete_table",
    "enable_ttl",
    "inventory_indexes",
]

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class NotAChainsTable(XorAckError):
    """An existing table does not show that the project's tooling made it: it is left as it is.

    The tooling deletes or changes only tables it made; nothing was changed.  ``why`` is
    what the table lacks (for a caller that says the refusal in its own words).
    """

    def __init__(self, message: str, why: str = "") -> None:
        super().__init__(message)
        self.why = why


def check_spec(function: str, spec: object) -> None:
    """``InvalidArgument`` unless ``spec`` is a ``TableSpec`` (a name alone is not one)."""
    if not isinstance(spec, TableSpec):
        name = spec if isinstance(spec, str) else "..."
        raise InvalidArgument(
            f"{function} takes a TableSpec (TableSpec(name={name!r})), not {spec!r}"
        )


def create_table(
    client: DynamoDBClient, spec: TableSpec, *, wait: bool = True, timeout: float = 60.0
) -> bool:
    """Create the table (and enable TTL on ``expires_at``) with a boto3 client.

    Idempotent: an existing table is checked, never changed: ``TableMismatch`` when
    its key differs, ``NotAChainsTable`` when nothing shows it holds chains
    (``check_chains_table``).  What an older chains table lacks is ``upgrade_table``'s
    to add.  Returns True when the table was created, False when it already existed.
    ``TableWaitTimeout`` when ``wait`` runs out before the table is ACTIVE (a new table then
    has no TTL yet: ``upgrade_table`` turns it on).  Without ``wait``, TTL is turned on only
    if the new table is ACTIVE already (DynamoDB refuses it on a table being created); else
    ``upgrade_table`` turns it on once it is.
    """
    check_spec("create_table", spec)
    if wait:
        wait_budget(timeout)
    created = True
    try:
        client.create_table(**spec.create_request())
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
        created = False
        table = client.describe_table(TableName=spec.name)["Table"]
        spec.check(table)
        check_chains_table(client, table)
    if wait:
        try:
            wait_active(client, spec.name, timeout=timeout)
        except TableWaitTimeout as slow:
            if not created:
                raise
            upgrade = f"`xor-ack --table {spec.name} table upgrade`"
            left = "TTL is not on yet: once it is ACTIVE, run {} to turn it on"
            late = TableWaitTimeout(
                spec.name, slow.status, slow.seconds, left.format(f"upgrade_table() or {upgrade}")
            )
            cli = TableWaitTimeout(spec.name, slow.status, slow.seconds, left.format(upgrade))
            raise late.with_cli(str(cli)) from slow
    # DynamoDB refuses UpdateTimeToLive while a table is CREATING: without the wait, TTL is
    # turned on only if the new table is ACTIVE already (DynamoDB Local's are at once)
    if created and (wait or _status(client, spec.name) == "ACTIVE"):
        enable_ttl(client, spec.name)
    return created


def _status(client: DynamoDBClient, name: str) -> str:
    return str(client.describe_table(TableName=name)["Table"]["TableStatus"])


def enable_ttl(client: DynamoDBClient, table: str) -> None:
    """Turn on TTL on ``expires_at`` unless it already is.

    Raises ``TableMismatch`` when TTL is on for another attribute: DynamoDB
    allows one TTL attribute per table, and expired chains would never go away.
    """
    status = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    if chains_ttl_on(table, status):
        return
    client.update_time_to_live(
        TableName=table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
    )


def _own_key(table: Mapping[str, Any]) -> str | None:
    """Why ``table``'s key is not one ``TableSpec`` makes (one HASH key of type S), or None."""
    key = table.get("KeySchema", [])
    types = {a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", [])}
    name = partition_key_of(table)
    if len(key) != 1 or not name or name in ITEM_ATTRIBUTES:
        found = ", ".join(f"{k['AttributeName']} ({k['KeyType']})" for k in key) or "none"
        return f"its key is {found}"
    if types.get(name) != KEY_TYPE:
        return f"its key {name} has type {types.get(name)}"
    return None


def inventory_indexes(table: Mapping[str, Any]) -> list[str]:
    """The inventory indexes a ``DescribeTable`` result has as ``TableSpec`` makes them.

    Same name, same keys, keys only: whatever their status.
    """
    return [
        str(index["IndexName"])
        for index in table.get("GlobalSecondaryIndexes") or []
        if INDEXES.get(index.get("IndexName", "")) == index_keys(index)
        and (index.get("Projection") or {}).get("ProjectionType") == "KEYS_ONLY"
    ]


def check_deletable(table: Mapping[str, Any]) -> None:
    """Raise ``NotAChainsTable`` unless a ``DescribeTable`` result is a chains table.

    The proof is the shape ``create_table`` gives (and ``upgrade_table`` gives an older
    chains table): one partition key of type S and both inventory indexes, on their keys.
    DynamoDB Local does not support tags, so none is relied on.
    """
    name = str(table.get("TableName", "?"))
    lacks = [index for index in INDEXES if index not in inventory_indexes(table)]
    why = _own_key(table) or (f"it has no index {' and no index '.join(lacks)}" if lacks else None)
    if why is None:
        return
    raise NotAChainsTable(
        f"table {name} is not a chains table as `xor-ack table create` makes it ({why}); "
        "nothing was deleted: the tooling deletes only tables it made. A chains table made "
        f"by an earlier release: run `xor-ack --table {name} table upgrade` first. Any other "
        f"table: delete it yourself if you mean to (aws dynamodb delete-table --table-name "
        f"{name})",
        why,
    )


#: How many items ``check_chains_table`` reads of a table without an inventory index.
SAMPLE = 10


def is_chain_item(item: Mapping[str, Any]) -> bool:
    """Whether a raw item has the two attributes every release's chain item has."""
    return set(item.get(STAMP) or {}) == {"B"} and set(item.get(VERSION) or {}) == {"N"}


def is_tracking_item(item: Mapping[str, Any], partition_key: str) -> bool:
    """Whether a raw item is one the package writes in a chains table: a chain, or a fleet's
    marker beside its chains (a key holding ``FLEET_MARKER``, a binary ``chain_id``)."""
    key = (item.get(partition_key) or {}).get("S")
    return is_chain_item(item) or (
        isinstance(key, str) and is_marker_key(key) and set(item.get(CHAIN_ID) or {}) == {"B"}
    )


def partition_key_of(table: Mapping[str, Any]) -> str:
    """The HASH key's name of a ``DescribeTable`` result ("" when it has none)."""
    hashes = [k["AttributeName"] for k in table.get("KeySchema", []) if k["KeyType"] == "HASH"]
    return str(hashes[0]) if hashes else ""


def check_chains_table(
    client: Any, table: Mapping[str, Any], ttl: Mapping[str, Any] | None = None
) -> None:
    """Raise ``NotAChainsTable`` unless an existing table shows it holds chains.

    ``table`` and ``ttl`` are ``DescribeTable`` and ``DescribeTimeToLive`` results (``ttl``
    None: read here, ``dynamodb:DescribeTimeToLive``).  Shown by
    the key ``TableSpec`` makes and: an inventory index on its keys (a table made or
    upgraded since the inventory); else up to ``SAMPLE`` items read (``dynamodb:Scan``)
    that are all chains or a fleet's markers (``is_tracking_item``); else, with no item, TTL
    on ``expires_at``, which every release turned on at creation.  Called before anything
    changes an existing table.
    """
    name = str(table.get("TableName", "?"))
    if ttl is None:
        ttl = client.describe_time_to_live(TableName=name).get("TimeToLiveDescription", {})
    why = _own_key(table)
    if why is None and inventory_indexes(table):
        return
    if why is None:
        items = client.scan(TableName=name, Limit=SAMPLE).get("Items", [])
        key = partition_key_of(table)
        strangers = [item for item in items if not is_tracking_item(item, key)]
        if (items and not strangers) or (
            not items and ttl_on(ttl) and ttl.get("AttributeName") == TTL_ATTRIBUTE
        ):
            return
        why = "no inventory index, and " + (
            f"items that are not chains (no binary {STAMP} and number {VERSION}) nor a "
            "fleet's markers"
            if strangers
            else f"no item and no TTL on {TTL_ATTRIBUTE}"
        )

    def said(option: str) -> str:
        return (
            f"table {name} does not look like a chains table ({why}); nothing was changed: the "
            f"tooling changes only tables it made. Name the chains table ({option}). A chains "
            f"table an earlier release made, still empty: turn TTL on for {TTL_ATTRIBUTE} (aws "
            f"dynamodb update-time-to-live --table-name {name} --time-to-live-specification "
            f"Enabled=true,AttributeName={TTL_ATTRIBUTE}) and run it again"
        )

    raise NotAChainsTable(said("table=..."), why).with_cli(said("--table"))


def delete_table(
    client: DynamoDBClient, name: str, *, wait: bool = True, timeout: float = 60.0
) -> None:
    """Delete a chains table and, with ``wait``, poll until it is gone.

    ``NotAChainsTable``, with nothing deleted, unless the table has the key and the
    inventory indexes ``create_table`` makes (``check_deletable``);
    ``ResourceNotFoundException`` when it does not exist; ``TableWaitTimeout`` when it still
    exists after ``timeout`` seconds; a ``ValidationException``
    when deletion protection is on (turn it off first: it is on by default in
    ``infra/table.yaml``).
    """
    if wait:
        wait_budget(timeout)
    check_deletable(client.describe_table(TableName=name)["Table"])
    client.delete_table(TableName=name)
    if wait:
        wait_deleted(client, name, timeout)


def wait_deleted(client: DynamoDBClient, name: str, timeout: float = 60.0) -> None:
    """Poll until the table ``name``, being deleted, is gone (``TableWaitTimeout`` after
    ``timeout`` seconds)."""
    deadline = time.monotonic() + wait_budget(timeout)
    while True:
        try:
            status = client.describe_table(TableName=name)["Table"]["TableStatus"]
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                return
            raise
        if time.monotonic() > deadline:
            raise TableWaitTimeout(name, status, timeout, "DynamoDB goes on deleting it")
        time.sleep(0.2)
