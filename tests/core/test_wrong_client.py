"""A boto client the tracker cannot drive is refused when the tracker is made, naming it.

Another service's client (S3, SQS, DynamoDB Streams), or the other flavour (a boto3
client for the async tracker, an aiobotocore one for the sync twin), used to be taken
and then to fail at the first call with a bare ``AttributeError`` / ``TypeError``
(``'S3' object has no attribute 'update_item'``, ``object dict can't be used in 'await'
expression``, ``'coroutine' object has no attribute 'get'``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aioboto3
import boto3
import pytest

from xor_ack_dynamodb import SyncXorAckDynamoDB, XorAckDynamoDB
from xor_ack_dynamodb.errors import InvalidArgument

REGION = "us-east-1"


def sync_client(service: str) -> Any:
    return boto3.client(service, region_name=REGION, endpoint_url="http://127.0.0.1:9")


@pytest.fixture
async def async_clients() -> AsyncIterator[dict[str, Any]]:
    session = aioboto3.Session()
    endpoint = "http://127.0.0.1:9"
    async with (
        session.client("dynamodb", region_name=REGION, endpoint_url=endpoint) as ddb,
        session.client("s3", region_name=REGION, endpoint_url=endpoint) as s3,
    ):
        yield {"dynamodb": ddb, "s3": s3}


@pytest.mark.parametrize("service", ["s3", "sqs", "dynamodbstreams"])
def test_the_sync_tracker_refuses_another_services_client(service: str) -> None:
    client = sync_client(service)
    with pytest.raises(InvalidArgument, match=rf"client .*DynamoDB.* not an? .*{service}"):
        SyncXorAckDynamoDB(client, table="chains")
    # Refused before the client was touched: no hook of the tracker was registered on it.
    assert not client.meta.events._emitter._handlers.prefix_search("needs-retry.dynamodb")


async def test_the_async_tracker_refuses_another_services_client(
    async_clients: dict[str, Any],
) -> None:
    with pytest.raises(InvalidArgument, match=r"client .*DynamoDB.* not an? .*s3"):
        XorAckDynamoDB(async_clients["s3"], table="chains", direct=True)


def test_the_async_tracker_refuses_a_boto3_client() -> None:
    with pytest.raises(InvalidArgument, match=r"aiobotocore.*SyncXorAckDynamoDB"):
        XorAckDynamoDB(sync_client("dynamodb"), table="chains")


async def test_the_sync_tracker_refuses_an_aiobotocore_client(
    async_clients: dict[str, Any],
) -> None:
    with pytest.raises(InvalidArgument, match=r"boto3.*XorAckDynamoDB"):
        SyncXorAckDynamoDB(async_clients["dynamodb"], table="chains")


async def test_the_right_clients_are_taken(async_clients: dict[str, Any]) -> None:
    assert SyncXorAckDynamoDB(sync_client("dynamodb"), table="chains").table == "chains"
    assert XorAckDynamoDB(async_clients["dynamodb"], table="chains").table == "chains"
