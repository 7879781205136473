"""The seed's algorithm (npm ``xor-ack-dynamodb`` 0.3.1), ported to Python for the benchmark.

This is the baseline of ``bench_client.py``, written from the seed's description,
not a product API.  A stamp is a read-modify-write on the value read:

1. consistent ``GetItem`` of the chain's item;
2. XOR the stamp into the stored value;
3. if the result is non-zero, ``PutItem`` the new value conditioned on the stored
   one still being the value read (``#stamp = :old``); if it is zero,
   ``DeleteItem`` conditioned the same way (the seed removes a completed chain);
4. on ``ConditionalCheckFailedException`` (another writer got in between), back off
   with full-jitter exponential delay and start again at 1.

So an uncontended stamp costs two requests, and under contention every lost race
costs two more.  The seed itself raises ``StaleLocalData`` at the first lost race
and leaves retrying to its caller; the issue's baseline retries inside, which is
what is ported here, with the same :class:`~xor_ack_dynamodb.dynamodb.retry.RetryPolicy`
(delay formula and bounds) that the benchmark gives the new client, so that the
two differ in algorithm only.  The seed's ``stamp`` on a missing tag crashes; here
it raises ``TagNotFound``.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from botocore.exceptions import ClientError

from xor_ack_dynamodb.errors import StaleLocalData, TagExists, TagNotFound
from xor_ack_dynamodb.retry import RetryPolicy
from xor_ack_dynamodb.stamps import Stamp, as_stamp, xor

CONDITION_FAILED = "ConditionalCheckFailedException"
STAMP_ATTRIBUTE = "stamp"


def _condition_failed(exc: ClientError) -> bool:
    return bool(exc.response.get("Error", {}).get("Code") == CONDITION_FAILED)


class SeedXorAck:
    """The seed's create / stamp / delete over an aiobotocore DynamoDB client."""

    def __init__(
        self,
        client: Any,
        *,
        table: str,
        partition_key: str = "tagID",
        retry: RetryPolicy | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.table = table
        self.partition_key = partition_key
        self.retry = retry or RetryPolicy()
        self.rng = rng or random.Random()
        self.conflicts = 0

    def _key(self, tag: str) -> dict[str, Any]:
        return {self.partition_key: {"S": tag}}

    async def create(self, tag: str, stamp: bytes) -> Stamp:
        """``PutItem`` the first stamp unless the tag exists (``TagExists``)."""
        value = as_stamp(stamp)
        try:
            await self.client.put_item(
                TableName=self.table,
                Item={**self._key(tag), STAMP_ATTRIBUTE: {"B": bytes(value)}},
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": self.partition_key},
            )
        except ClientError as exc:
            if _condition_failed(exc):
                raise TagExists(tag) from exc
            raise
        return value

    async def stamp(self, tag: str, stamp: bytes) -> Stamp:
        """Read, XOR, write conditioned on the value read; retry lost races with backoff."""
        value = as_stamp(stamp)
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            response = await self.client.get_item(
                TableName=self.table, Key=self._key(tag), ConsistentRead=True
            )
            item = response.get("Item")
            if item is None:
                raise TagNotFound(tag)
            old = Stamp(item[STAMP_ATTRIBUTE]["B"])
            new = xor(old, value)
            condition = {
                "ConditionExpression": "#stamp = :old",
                "ExpressionAttributeNames": {"#stamp": STAMP_ATTRIBUTE},
                "ExpressionAttributeValues": {":old": {"B": bytes(old)}},
            }
            try:
                if new.acked:
                    await self.client.delete_item(
                        TableName=self.table, Key=self._key(tag), **condition
                    )
                else:
                    await self.client.put_item(
                        TableName=self.table,
                        Item={**self._key(tag), STAMP_ATTRIBUTE: {"B": bytes(new)}},
                        **condition,
                    )
            except ClientError as exc:
                if not _condition_failed(exc):
                    raise
                self.conflicts += 1
                if not self.retry.allows(attempt, time.monotonic() - started):
                    raise StaleLocalData(tag, attempt) from exc
                await asyncio.sleep(self.retry.delay(attempt, self.rng))
                continue
            return new

    async def delete(self, tag: str) -> None:
        """``DeleteItem`` the chain; ``TagNotFound`` when there is none."""
        try:
            await self.client.delete_item(
                TableName=self.table,
                Key=self._key(tag),
                ConditionExpression="attribute_exists(#pk)",
                ExpressionAttributeNames={"#pk": self.partition_key},
            )
        except ClientError as exc:
            if _condition_failed(exc):
                raise TagNotFound(tag) from exc
            raise
