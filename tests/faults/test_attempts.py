"""Only a send whose outcome is unknown makes a write ambiguous; a refused send did not land.

One write, throttled on its first send while another client pushes more writes
onto the chain than its token window holds; botocore re-sends it and its
condition fails.  The throttled send (a 400) did not land, so this is a plain
lost race, retried on the fresh item, not ``AmbiguousWrite``.  The same story with
a send whose response was lost (it landed, or not: nobody knows) stays ambiguous.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from core.facade import open_client
from core.lossy_proxy import LossyProxy

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.dynamodb._attempts import attempt_unknown
from xor_ack_dynamodb.errors import AmbiguousWrite
from xor_ack_dynamodb.table import TableSpec

from .chains import FAST_BOTOCORE

pytestmark = pytest.mark.ddblocal
WINDOW = 4


def _other(endpoint: str, table: str) -> SyncXorAckDynamoDB:
    raw = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    return SyncXorAckDynamoDB(raw, table=table, token_window=WINDOW)


def _once_with_writes_between(other: SyncXorAckDynamoDB, tag: str) -> tuple[list[str], object]:
    """A rule that fires on the first UpdateItem, after ``other`` wrote six times."""
    fired: list[str] = []

    def rule(target: str, body: bytes) -> bool:
        if target == "UpdateItem" and not fired:
            fired.append(target)
            for _ in range(6):  # more writes than the window: our token could be gone
                other.stamp(tag, new_stamp())
            return True
        return False

    return fired, rule


async def test_a_throttled_send_then_a_lost_race_is_retried_not_ambiguous(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    root, a = new_stamp(), new_stamp()
    other = _other(ddb_local_endpoint, ddb_table.name)
    other.create("file", xor(root, a))
    fired, rule = _once_with_writes_between(other, "file")
    with LossyProxy(ddb_local_endpoint, throttle=rule) as proxy:  # type: ignore[arg-type]
        async with open_client(
            kind, proxy.endpoint_url, ddb_table.name, token_window=WINDOW, config=FAST_BOTOCORE
        ) as ack:
            await ack.get("file")
            state = await ack.stamp("file", root)
            assert proxy.throttled == ["UpdateItem"] and fired
            # Refused on the state read before the call: planned again, not a re-send.
            assert ack.stats.cache_refreshes == 1 and ack.stats.resent_writes_recognised == 0
    current = other.get("file")
    assert current is not None and state == current.stamp  # ours was the last write
    assert current.version == 1 + 6 + 1  # create, the six others, ours once


async def test_a_lost_response_then_a_lost_race_stays_ambiguous(
    kind: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    other = _other(ddb_local_endpoint, ddb_table.name)
    other.create("file", new_stamp())
    fired, rule = _once_with_writes_between(other, "file")
    with LossyProxy(ddb_local_endpoint, drop=rule) as proxy:  # type: ignore[arg-type]
        async with open_client(
            kind, proxy.endpoint_url, ddb_table.name, token_window=WINDOW, config=FAST_BOTOCORE
        ) as ack:
            await ack.get("file")
            with pytest.raises(AmbiguousWrite):
                await ack.stamp("file", new_stamp())
            assert proxy.dropped == ["UpdateItem"] and fired


class _Http:
    def __init__(self, status: int) -> None:
        self.status_code = status


def test_which_attempts_have_an_unknown_outcome() -> None:
    from botocore.exceptions import (
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        ReadTimeoutError,
    )
    from urllib3.exceptions import NewConnectionError

    assert not attempt_unknown((_Http(400), {}), None)  # throttled, invalid, condition
    assert attempt_unknown((_Http(500), {}), None)
    assert attempt_unknown((_Http(200), {}), None)  # a 2xx retried anyway (bad CRC32)
    assert attempt_unknown(None, ConnectionClosedError(endpoint_url="x"))
    assert attempt_unknown(None, ReadTimeoutError(endpoint_url="x"))
    assert not attempt_unknown(None, ConnectTimeoutError(endpoint_url="x"))
    refused = EndpointConnectionError(endpoint_url="x", error=NewConnectionError(None, "refused"))
    assert not attempt_unknown(None, refused)
    # aiobotocore wraps a reset connection as EndpointConnectionError too: unknown.
    assert attempt_unknown(None, EndpointConnectionError(endpoint_url="x", error=OSError()))


def test_only_a_write_whose_connection_was_lost_is_resent_soon() -> None:
    from types import SimpleNamespace

    from botocore.exceptions import ConnectionClosedError, ConnectTimeoutError

    from xor_ack_dynamodb.dynamodb._attempts import RESEND_DELAY, _retry_handler

    asked: list[int] = []

    def botocore(**kwargs: Any) -> float | None:  # its retry handler: back off 0.5 s
        asked.append(kwargs["attempts"])
        return None if kwargs.get("quota_spent") else 0.5

    handler = _retry_handler(3, botocore)
    update, get = SimpleNamespace(name="UpdateItem"), SimpleNamespace(name="GetItem")
    lost = ConnectionClosedError(endpoint_url="x")
    assert handler(attempts=1, operation=update, caught_exception=lost) == RESEND_DELAY
    assert handler(attempts=2, operation=update, caught_exception=lost) == 2 * RESEND_DELAY
    assert handler(attempts=3, operation=update, caught_exception=lost) == 0.5  # spent: its
    assert handler(attempts=1, operation=get, caught_exception=lost) == 0.5  # not a write
    never_sent = ConnectTimeoutError(endpoint_url="x")
    assert handler(attempts=1, operation=update, caught_exception=never_sent) == 0.5
    throttled = (_Http(400), {})
    assert handler(attempts=1, operation=update, response=throttled) == 0.5  # its backoff
    # botocore says no more (its retry quota spent in an outage): no quick re-send either
    assert handler(attempts=1, operation=update, caught_exception=lost, quota_spent=True) is None
    assert asked == [1, 2, 3, 1, 1, 1, 1]  # asked once per attempt, never twice


@pytest.mark.parametrize("mode", ["legacy", "standard"])
@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_write_to_a_port_nobody_listens_on_is_proven_not_landed(
    kind: str, mode: str
) -> None:
    """Every send refused at connect, the last one too: botocore's legacy retry handler
    raises the error once its attempts are spent, before the handlers after it see that
    attempt, so the attempts are recorded ahead of it.  The caller gets botocore's error,
    proven not landed, not ``UnsettledWrite`` (which says the write may have landed)."""
    from botocore.exceptions import EndpointConnectionError

    from xor_ack_dynamodb.dynamodb._attempts import may_have_landed
    from xor_ack_dynamodb.local import free_port
    from xor_ack_dynamodb.retry import botocore_config

    nowhere = f"http://127.0.0.1:{free_port()}"
    for attempts in (1, 2):  # one send (AWS_MAX_ATTEMPTS=1): before, it was left unknown
        config = botocore_config(retries={"mode": mode, "total_max_attempts": attempts})
        async with open_client(kind, nowhere, "chains", config=config) as ack:
            with pytest.raises(EndpointConnectionError) as refused:
                await ack.create("a", new_stamp())
            assert not may_have_landed(refused.value)
