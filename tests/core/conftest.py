"""Fixtures of the core tests: every behaviour runs on the async client and on its sync twin."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb.table import TableSpec

from .facade import open_client


@pytest.fixture(params=["async", "sync"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def ack(kind: str, backend: tuple[str, TableSpec]) -> AsyncIterator[Any]:
    """A client of ``kind`` on a fresh table of each backend (moto, DynamoDB Local)."""
    endpoint, spec = backend
    async with open_client(kind, endpoint, spec.name) as client:
        yield client


@pytest.fixture
def raw(backend: tuple[str, TableSpec]) -> Any:
    """A plain boto3 client on the backend, to look at or change items behind the client."""
    return boto3.client("dynamodb", endpoint_url=backend[0], region_name="us-east-1")


@pytest.fixture
def local(ddb_local_endpoint: str, ddb_table: TableSpec) -> tuple[str, TableSpec]:
    """(endpoint, fresh table) on DynamoDB Local only: races, batches, hundreds of chains."""
    return ddb_local_endpoint, ddb_table
