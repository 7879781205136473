"""What the docs promise, checked against the code: every error of docs/api.md's table is
importable from the package the table names (``xor_ack_dynamodb.fleet``,
``xor_ack_dynamodb.spark``), and ``Fleet.submit`` takes the lifetime keywords docs/fleet.md
names and refuses any other (a misspelt ``tll=`` made the job's chain without a TTL)."""

from __future__ import annotations

from typing import Any

import pytest

from xor_ack_dynamodb.table import TableSpec


@pytest.mark.parametrize(
    ("package", "name"),
    [
        ("xor_ack_dynamodb.fleet", "ReplayRefused"),
        ("xor_ack_dynamodb.fleet", "MarkerMissing"),
        ("xor_ack_dynamodb.fleet", "InvalidEnvelope"),
        ("xor_ack_dynamodb.fleet", "WindowMismatch"),
        ("xor_ack_dynamodb.fleet", "UnsuitableClient"),
        ("xor_ack_dynamodb.fleet", "TombstoneTooShort"),
        ("xor_ack_dynamodb.fleet", "SendFailed"),
        ("xor_ack_dynamodb.fleet", "HandlerNotFound"),
        ("xor_ack_dynamodb.spark", "TornBatch"),
    ],
)
def test_the_tables_errors_are_importable_from_their_package(package: str, name: str) -> None:
    """docs/api.md: the table of every error "also names those of ... fleets
    (`xor_ack_dynamodb.fleet`), Spark (`xor_ack_dynamodb.spark`) ..., importable from those"
    (these were only in the packages' submodules)."""
    import importlib

    assert hasattr(importlib.import_module(package), name), f"from {package} import {name} fails"


async def test_fleet_submit_refuses_a_keyword_it_does_not_take(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """docs/fleet.md (``await fleet.submit(tag, payload, ttl=None)``, ``submit(...,
    timeout=)``): the job's lifetime keywords, as ``create``'s, which refuses any other
    (``TypeError``); a misspelt ``tll=3600`` was dropped, the chain made without a TTL."""
    from xor_ack_dynamodb import XorAckDynamoDB
    from xor_ack_dynamodb.fleet import Fleet

    async def send(envelopes: Any) -> None:
        return None

    async with XorAckDynamoDB.connect(
        table=ddb_table.name,
        endpoint_url=ddb_local_endpoint,
        region_name="us-east-1",
        token_window=64,
    ) as client:
        fleet = Fleet(client, handler=lambda message: [], send=send)
        try:
            await fleet.submit("typo-job", {"n": 1}, tll=3600)  # type: ignore[call-arg]
        except TypeError:
            return
        state = await client.get("typo-job")
        pytest.fail(
            f"submit took tll=3600 and ignored it: the chain was made, expires_at="
            f"{state and state.expires_at}"
        )
