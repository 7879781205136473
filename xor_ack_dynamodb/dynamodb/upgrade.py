"""Bring a table made before the inventory and the events up to ``TableSpec``'s shape.

A table created by an earlier release has the key and TTL but no stream and neither
inventory index.  ``upgrade_table`` adds what is missing, one ``UpdateTable`` per change
(DynamoDB takes one index creation at a time, and a stream change alone), waiting for each
new index to be ACTIVE before the next.  What to change is decided by ``plan_upgrade`` from
one ``DescribeTable`` and one ``DescribeTimeToLive``, before anything is changed: a table
it cannot upgrade (another key, another TTL attribute, an index of that name on other keys,
a stream of another view type), or one that does not show it holds chains (a user's
table: ``check_chains_table``), is refused with nothing changed.  Run twice, the second run
changes nothing; an upgrade interrupted while an index was being built resumes where it
stopped.

Chains written before the upgrade carry no index keys, so they are not in the inventory:
they keep working and age out by their TTL.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from ..errors import StreamViewConflict, UpgradeTimeout
from .ownership import check_chains_table, check_spec
from .table import (
    INDEXES,
    STREAM_VIEW,
    TTL_ATTRIBUTE,
    BillingMode,
    TableMismatch,
    TableSpec,
    chains_ttl_on,
    index_keys,
)

ChangeKind = Literal["ttl", "stream", "index"]


@dataclass(frozen=True)
class Change:
    """One change an upgrade makes: TTL on an attribute, the stream, or one index."""

    kind: ChangeKind
    name: str

    def __str__(self) -> str:
        if self.kind == "ttl":
            return f"turn TTL on for {self.name}"
        if self.kind == "stream":
            return f"enable the stream ({self.name})"
        shard, sort = INDEXES[self.name]
        return f"create index {self.name} ({shard}, {sort}; keys only)"


if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TableDescriptionTypeDef


def plan_upgrade(spec: TableSpec, table: Mapping[str, Any], ttl: Mapping[str, Any]) -> list[Change]:
    """What ``table`` (a ``DescribeTable`` result) lacks, in the order it is added.

    ``ttl`` is ``DescribeTimeToLive``'s ``TimeToLiveDescription``.  Raises
    ``TableMismatch`` or ``StreamViewConflict`` for a table that cannot be upgraded.
    An index that exists (whatever its status) is not planned again.
    """
    spec.check(cast("TableDescriptionTypeDef", table))
    name = str(table.get("TableName", spec.name))
    changes: list[Change] = []

    if not chains_ttl_on(name, ttl):
        changes.append(Change("ttl", TTL_ATTRIBUTE))

    stream = table.get("StreamSpecification") or {}
    if stream.get("StreamEnabled"):
        view = str(stream.get("StreamViewType"))
        if view != STREAM_VIEW:
            raise StreamViewConflict(name, view, STREAM_VIEW)
    else:
        changes.append(Change("stream", STREAM_VIEW))

    types = {a["AttributeName"]: a["AttributeType"] for a in table.get("AttributeDefinitions", [])}
    existing = {i["IndexName"]: i for i in table.get("GlobalSecondaryIndexes") or []}
    for index, keys in INDEXES.items():
        for attribute_name in keys:
            if types.get(attribute_name, "N") != "N":
                raise TableMismatch(
                    f"table {name} defines {attribute_name} as type "
                    f"{types[attribute_name]}, the inventory index {index} needs N: use "
                    "another table"
                )
        found = existing.get(index)
        if found is None:
            changes.append(Change("index", index))
        elif index_keys(found) != keys:
            raise TableMismatch(
                f"table {name} has an index {index} on {index_keys(found)}, expected "
                f"{keys}: delete that index or use another table"
            )
    return changes


def _table_spec(spec: TableSpec, table: dict[str, Any]) -> TableSpec:
    """``spec`` with the table's own billing mode and capacity (for a new index's throughput)."""
    billing: BillingMode = "PAY_PER_REQUEST"
    if ((table.get("BillingModeSummary") or {}).get("BillingMode") or "PROVISIONED") != (
        "PAY_PER_REQUEST"
    ):
        billing = "PROVISIONED"
    throughput = table.get("ProvisionedThroughput") or {}
    return TableSpec(
        name=spec.name,
        partition_key=spec.partition_key,
        billing_mode=billing,
        read_capacity=max(1, int(throughput.get("ReadCapacityUnits") or 1)),
        write_capacity=max(1, int(throughput.get("WriteCapacityUnits") or 1)),
    )


def _building(table: dict[str, Any]) -> dict[str, str]:
    """Indexes of the table that are not ACTIVE yet, with their status."""
    return {
        i["IndexName"]: str(i.get("IndexStatus"))
        for i in table.get("GlobalSecondaryIndexes") or []
        if i.get("IndexStatus") != "ACTIVE"
    }


def _apply(client: Any, spec: TableSpec, table: dict[str, Any], change: Change) -> None:
    if change.kind == "ttl":
        client.update_time_to_live(**spec.ttl_request())
    elif change.kind == "stream":
        client.update_table(
            TableName=spec.name,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": STREAM_VIEW},
        )
    else:
        own = _table_spec(spec, table)
        client.update_table(
            TableName=spec.name,
            AttributeDefinitions=own.attribute_definitions(),
            GlobalSecondaryIndexUpdates=[{"Create": own.index_request(change.name)}],
        )


def upgrade_table(
    client: Any,
    spec: TableSpec,
    *,
    timeout: float = 3600.0,
    progress: Callable[[str], None] | None = None,
    poll: float = 0.2,
) -> list[Change]:
    """Add the stream, the inventory indexes and TTL that ``spec``'s table lacks.

    Returns the changes made, in order (empty: the table was up to date).  Waits, up to
    ``timeout`` seconds per index, for the table and each index to be ACTIVE before the
    next change (``UpgradeTimeout`` otherwise: run it again to resume).  ``progress`` is
    called with a line before each change and each wait.  Needs ``dynamodb:DescribeTable``,
    ``DescribeTimeToLive``, ``UpdateTable`` and ``UpdateTimeToLive`` (and ``Scan`` on a
    table without an inventory index).  A table that does not show it holds chains is
    refused with nothing changed (``NotAChainsTable``: ``check_chains_table``).
    """
    check_spec("upgrade_table", spec)
    say = progress or (lambda line: None)
    made: list[Change] = []
    while True:
        table = _wait_settled(client, spec.name, timeout, poll, say)
        ttl = client.describe_time_to_live(TableName=spec.name).get("TimeToLiveDescription", {})
        changes = plan_upgrade(spec, table, ttl)
        if not changes:
            return made
        if not made:
            check_chains_table(client, table, ttl)  # before the first change
        change = changes[0]
        say(f"{change}")
        _apply(client, spec, table, change)
        made.append(change)


def _wait_settled(
    client: Any, name: str, timeout: float, poll: float, say: Callable[[str], None]
) -> dict[str, Any]:
    """Describe the table once it and all its indexes are ACTIVE."""
    started = time.monotonic()
    told: set[str] = set()
    delay = poll
    while True:
        table: dict[str, Any] = client.describe_table(TableName=name)["Table"]
        building = _building(table)
        if table.get("TableStatus") == "ACTIVE" and not building:
            return table
        for index, status in building.items():
            if index not in told:
                say(f"waiting for index {index} ({status}) to be ACTIVE")
                told.add(index)
        if time.monotonic() - started > timeout:
            index, status = next(iter(building.items()), ("(table)", str(table["TableStatus"])))
            raise UpgradeTimeout(name, index, status, timeout)
        time.sleep(delay)
        delay = min(delay * 2, 10.0)
