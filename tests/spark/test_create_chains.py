"""``create_chains`` one request per chain (a server with neither PartiQL nor transactions,
as moto): every tag's error kept, none lost to another's (no Spark job runs here)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from botocore.exceptions import ClientError

from xor_ack_dynamodb import ChainState
from xor_ack_dynamodb.errors import TagExists, TagNotFound
from xor_ack_dynamodb.spark import TrackerConfig
from xor_ack_dynamodb.spark.chain_batches import RoundChains, Unanswered
from xor_ack_dynamodb.spark.keyed import Keyed


class _Chains:
    """A chains client for a server with neither PartiQL nor transactions (as moto): the
    tag ``theirs`` holds another run's live chain, ``throttled`` gets DynamoDB's error."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.lock = threading.Lock()

    def create(self, tag: str, stamp: bytes, **life: Any) -> None:
        if tag == "theirs":
            raise TagExists(tag)
        if tag == "throttled":
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "try again"}}, "PutItem"
            )

    def known_many(self, tags: Any) -> dict[str, ChainState | None]:  # pragma: no cover
        return dict.fromkeys(tags)

    def fail(self, tag: str, reason: str = "failed", **kw: Any) -> ChainState:
        with self.lock:
            self.failed.append(tag)
        raise TagNotFound(tag)  # as if closed already: abandon goes on


def test_one_request_creates_keep_the_tags_another_run_holds_when_dynamodb_fails_another() -> None:
    """One create meets a live chain of another run (``TagExists``), another gets
    DynamoDB's error: the thread pool's first DynamoDB error was raised alone, the
    ``TagExists`` dropped, so the tag was not ``held`` and the stopped run's ``abandon``
    failed the other run's live chain."""
    tracker = TrackerConfig(table="chains", partiql=False, transactions=False, concurrency=1)
    fake = _Chains()
    chains = RoundChains(tracker, fake, Keyed("run"))  # type: ignore[arg-type]
    tags = ["theirs", "throttled"]
    with pytest.raises(Unanswered):  # the run stops (DynamoDBFailed) and abandons its chains
        chains.created((0, 1), tags)
    assert chains.held == {"theirs"}, chains.held
    chains.abandon("the run stopped")
    assert "theirs" not in fake.failed, "another run's live chain was failed"
