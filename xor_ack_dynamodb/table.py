"""The table the clients expect: one definition shared by the CLI, the tests and the demo.

The CloudFormation template (``infra/table.yaml``) and ``docker-compose.yml``
declare the same key schema and TTL attribute; a test keeps them in agreement.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import ClientError

from .item import DEFAULT_PARTITION_KEY, EXPIRES_AT

DEFAULT_TABLE = "xor-ack-chains"


@dataclass(frozen=True)
class TableSpec:
    """Name, key and capacity of an ack-chain table."""

    name: str = DEFAULT_TABLE
    partition_key: str = DEFAULT_PARTITION_KEY
    billing_mode: Literal["PAY_PER_REQUEST", "PROVISIONED"] = "PAY_PER_REQUEST"
    read_capacity: int = 5
    write_capacity: int = 5

    def create_request(self) -> dict[str, Any]:
        """The ``CreateTable`` parameters for this table."""
        request: dict[str, Any] = {
            "TableName": self.name,
            "AttributeDefinitions": [{"AttributeName": self.partition_key, "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": self.partition_key, "KeyType": "HASH"}],
            "BillingMode": self.billing_mode,
        }
        if self.billing_mode == "PROVISIONED":
            request["ProvisionedThroughput"] = {
                "ReadCapacityUnits": self.read_capacity,
                "WriteCapacityUnits": self.write_capacity,
            }
        return request


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def create_table(client: Any, spec: TableSpec, *, wait: bool = True, timeout: float = 60.0) -> bool:
    """Create the table (and enable TTL on ``expires_at``) with a boto3 client.

    Returns True when it was created, False when it already existed.
    """
    created = True
    try:
        client.create_table(**spec.create_request())
    except ClientError as exc:
        if _code(exc) != "ResourceInUseException":
            raise
        created = False
    if wait:
        deadline = time.monotonic() + timeout
        while client.describe_table(TableName=spec.name)["Table"]["TableStatus"] != "ACTIVE":
            if time.monotonic() > deadline:
                raise TimeoutError(f"table {spec.name} not ACTIVE after {timeout:g} s")
            time.sleep(0.2)
    enable_ttl(client, spec.name)
    return created


def enable_ttl(client: Any, table: str) -> None:
    """Turn on TTL on ``expires_at`` unless it already is."""
    status = client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    if status.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
        return
    client.update_time_to_live(
        TableName=table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": EXPIRES_AT},
    )


def delete_table(client: Any, name: str) -> None:
    client.delete_table(TableName=name)
