"""One async face for both clients: every behaviour is tested on the async client and its twin."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aioboto3
import boto3

from xor_ack_dynamodb import SyncXorAckDynamoDB, XorAckDynamoDB
from xor_ack_dynamodb.retry import botocore_config


class SyncFacade:
    """Runs the sync client's methods in a worker thread and awaits them."""

    def __init__(self, inner: SyncXorAckDynamoDB) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name == "xor":
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(attr, *args, **kwargs)

        return call


@contextlib.asynccontextmanager
async def open_client(
    kind: str, endpoint_url: str, table: str, partition_key: str = "tagID", **options: Any
) -> AsyncIterator[Any]:
    config = options.pop("config", None) or botocore_config()
    if kind == "async":
        session = aioboto3.Session()
        async with session.client(
            "dynamodb", endpoint_url=endpoint_url, region_name="us-east-1", config=config
        ) as client:
            # The direct path, as connect() has it (the hooks tests keep botocore's).
            yield XorAckDynamoDB(
                client, table=table, partition_key=partition_key, direct=True, **options
            )
    else:
        client = boto3.client(
            "dynamodb", endpoint_url=endpoint_url, region_name="us-east-1", config=config
        )
        try:
            yield SyncFacade(
                SyncXorAckDynamoDB(client, table=table, partition_key=partition_key, **options)
            )
        finally:
            client.close()
