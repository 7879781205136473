"""Many independent clients race on one chain: conditional writes lose nothing.

Separate clients do not merge their stamps, so their writes really race and
lose conditions.  DynamoDB Local only: moto's server does not make a
conditional write atomic under concurrent requests (seen: two racing writes
on one item both passed), which would be moto's race, not ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.retry import RetryPolicy
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client

pytestmark = pytest.mark.ddblocal
PATIENT = RetryPolicy(max_attempts=200, base_delay=0.002, max_delay=0.05, max_elapsed=60)


async def test_eight_async_clients_race_and_lose_nothing(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    root = new_stamp()
    children = [new_stamp() for _ in range(64)]
    async with contextlib.AsyncExitStack() as stack:
        clients: list[Any] = [
            await stack.enter_async_context(
                open_client("async", ddb_local_endpoint, ddb_table.name, retry=PATIENT)
            )
            for _ in range(8)
        ]
        await clients[0].create("hot", xor(root, *children))
        await clients[1].stamp("hot", root)
        results = await asyncio.gather(
            *(clients[i % 8].stamp("hot", c) for i, c in enumerate(children))
        )
        assert sum(r.acked for r in results) == 1
        assert sum(c.stats.conflicts for c in clients) > 0  # they really raced
        state = await clients[0].get("hot")
        # Every write either landed (one version each) or lost its condition: a race, or
        # a write planned on a remembered state that had grown old (planned again).
        landed = sum(c.stats.writes - c.stats.conflicts - c.stats.cache_refreshes for c in clients)
        assert state.acked and state.version == landed


def test_threads_with_their_own_sync_clients_race_and_lose_nothing(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    root = new_stamp()
    children = [new_stamp() for _ in range(48)]

    def client() -> SyncXorAckDynamoDB:
        raw = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
        return SyncXorAckDynamoDB(raw, table=ddb_table.name, retry=PATIENT)

    setup = client()
    setup.create("hot", xor(root, *children))
    setup.stamp("hot", root)
    results: list[Stamp] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker(mine: list[Stamp]) -> None:
        ack = client()
        start.wait()
        for child in mine:
            result = ack.stamp("hot", child)
            with lock:
                results.append(result)

    threads = [threading.Thread(target=worker, args=(children[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 48 and sum(r.acked for r in results) == 1
    final = setup.get("hot")
    assert final is not None and final.acked
