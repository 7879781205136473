"""What every part of the client benchmark shares: the region, credentials, pools, retry, sizes."""

from __future__ import annotations

from collections.abc import Sequence

import boto3

from xor_ack_dynamodb import RetryPolicy
from xor_ack_dynamodb.table import TableSpec, create_table

REGION = "us-east-1"
#: Local servers accept any credentials; these never leave the machine.
CREDENTIALS = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench"}
POOL = 512
#: Lost races are retried until they land (bounded by time, not attempts), for both.
RACE_RETRY = RetryPolicy(max_attempts=100_000, base_delay=0.005, max_delay=0.5, max_elapsed=300)
STAMP_BYTES = 16
SCALING_WRITERS = (1, 4, 16, 64, 256)
IMPLS = ("seed", "ours")


def make_tables(endpoint: str, names: Sequence[str], *, plain: bool = False) -> None:
    """The chain tables ``xor-ack table create`` makes (the inventory's two indexes, the
    stream); ``plain``: the key alone, as the seed's table was, to see what those cost."""
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name=REGION, **CREDENTIALS)
    for name in names:
        if not plain:
            create_table(client, TableSpec(name=name))
            continue
        key = TableSpec(name=name).partition_key
        client.create_table(
            TableName=name,
            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.get_waiter("table_exists").wait(TableName=name)
