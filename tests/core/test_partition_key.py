"""A client whose ``partition_key`` is not the table's is told ``TableMismatch`` at its first
request, whatever the call, and nothing is written.  On DynamoDB Local (moto refuses a
transaction's wrong key with a message of its own, where DynamoDB names the key).

Before, only the listings said so; every other call got DynamoDB's bare
``ValidationException`` ("One of the required keys was not given a value"), which names
neither the option nor the table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.conftest import MISSHAPEN_KEYS, misshapen_table
from xor_ack_dynamodb import new_stamp
from xor_ack_dynamodb.errors import TableMismatch
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client

CALLS: dict[str, Callable[[Any], Awaitable[object]]] = {
    "create": lambda ack: ack.create("job-1", new_stamp()),
    "stamp": lambda ack: ack.stamp("job-1", new_stamp()),
    "get": lambda ack: ack.get("job-1"),
    "wait": lambda ack: ack.wait("job-1", timeout=1),
    "fail": lambda ack: ack.fail("job-1", "bad input"),
    "delete": lambda ack: ack.delete("job-1"),
    "create_many": lambda ack: ack.create_many({"job-1": new_stamp(), "job-2": new_stamp()}),
    "create_many partiql": lambda ack: ack.create_many({"job-1": new_stamp()}, via="partiql"),
    "stamp_many": lambda ack: ack.stamp_many({"job-1": new_stamp(), "job-2": new_stamp()}),
    "get_many": lambda ack: ack.get_many(["job-1", "job-2"]),
}


@pytest.mark.parametrize("batch_writes", [False, True])
async def test_a_partition_key_the_table_does_not_have_is_a_table_mismatch(
    kind: str, local: tuple[str, TableSpec], batch_writes: bool
) -> None:
    endpoint, spec = local  # the table's key: tagID
    async with open_client(
        kind, endpoint, spec.name, partition_key="job", batch_writes=batch_writes
    ) as ack:
        for name, call in CALLS.items():
            with pytest.raises(TableMismatch) as told:
                await call(ack)
            message = str(told.value)
            assert f"table {spec.name}'s key is not job (type S) alone" in message, name
            assert "partition_key=" in message and "nothing was written" in message, name
            assert isinstance(told.value.__cause__, ClientError), name
    raw = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    assert raw.scan(TableName=spec.name)["Count"] == 0


@pytest.mark.parametrize("shape", MISSHAPEN_KEYS)
async def test_a_table_whose_key_has_the_name_but_not_the_shape_is_a_table_mismatch(
    kind: str, ddb_local_endpoint: str, shape: str
) -> None:
    """The chains' key name, but a number, or with a sort key: DynamoDB says "Type mismatch
    for key" or "The number of conditions on the keys is invalid", which the first fix of
    this refusal did not know (and which name nothing to do)."""
    raw = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    with misshapen_table(ddb_local_endpoint, shape) as name:
        async with open_client(kind, ddb_local_endpoint, name) as ack:
            for call_name in ("create", "stamp", "get", "create_many", "get_many"):
                with pytest.raises(TableMismatch, match=f"table {name}'s key is not tagID"):
                    await CALLS[call_name](ack)
        assert raw.scan(TableName=name)["Count"] == 0
