"""Fixtures of the core tests: every behaviour runs on the async client and on its sync twin."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

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
