"""Fixtures of the fleet tests: a fleet on DynamoDB Local whose queue is a list in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import pytest

from xor_ack_dynamodb.fleet import Completed, Envelope, Fleet, Handled, Message
from xor_ack_dynamodb.table import TableSpec


class Harness:
    """A fleet whose sends append to ``queue``; ``drain`` delivers until it is empty."""

    def __init__(self) -> None:
        self.queue: list[Envelope] = []
        self.sent: list[Envelope] = []
        self.completed: list[Completed] = []
        self.fleet: Fleet
        self.fail_continuation = 0

    async def send(self, envelopes: Sequence[Envelope]) -> None:
        self.queue.extend(envelopes)
        self.sent.extend(envelopes)

    async def continuation(self, done: Completed) -> None:
        if self.fail_continuation:
            self.fail_continuation -= 1
            raise RuntimeError("the process died during the continuation")
        self.completed.append(done)

    async def drain(self, pick: Callable[[list[Envelope]], int] = lambda q: 0) -> list[Handled]:
        handled = []
        while self.queue:
            env = self.queue.pop(pick(self.queue))
            handled.append(await self.fleet.handle(env.to_json()))
        return handled


def tree(message: Message) -> list[Any]:
    """A deterministic tree: payload ``{"width": w, "depth": d}``."""
    payload = message.payload
    if payload["depth"] == 0:
        return []
    return [{"width": payload["width"], "depth": payload["depth"] - 1}] * payload["width"]


@pytest.fixture(scope="module")
def sqs_endpoint() -> Iterator[str]:
    """moto's SQS on 127.0.0.1, safe against a send during a delete (``moto_sqs_server``)."""
    from .moto_sqs_server import serve

    with serve() as endpoint:
        yield endpoint


@pytest.fixture
def harness_factory(ddb_local_endpoint: str, ddb_table: TableSpec) -> Callable[..., Any]:
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def make(handler: Any = tree, **options: Any) -> AsyncIterator[Harness]:
        harness = Harness()
        async with Fleet.connect(
            table=ddb_table.name,
            endpoint_url=ddb_local_endpoint,
            region_name="us-east-1",
            handler=handler,
            send=harness.send,
            continuation=harness.continuation,
            **options,
        ) as fleet:
            harness.fleet = fleet
            yield harness

    return make
