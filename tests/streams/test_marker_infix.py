"""A chain whose tag holds the fleet markers' infix (``#xor-ack-fleet/``) has its events told:
the decoder dropped every record of such a key, though the plain client accepts the tag,
lists, sweeps and fails the chain like any other.  A marker is such a key without a stamp."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import SyncXorAckDynamoDB
from xor_ack_dynamodb.errors import ChainTimedOut
from xor_ack_dynamodb.events.follow import read, stream_arn, streams_client
from xor_ack_dynamodb.table import TableSpec

pytestmark = pytest.mark.ddblocal

TAG = "invoices#xor-ack-fleet/2026-11"  # a tag check_tag accepts; no fleet involved


def _client(endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")


def test_a_chain_whose_tag_holds_the_marker_infix_has_its_events_told(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """One chain acked, one timed out by a sweep: ``events.decode`` (and so
    ``StreamHandler``, ``xor-ack events follow``, ``xor-ack chain stats``) told nothing of
    either, and ``on_acked`` / ``on_failed`` were never called."""
    db = _client(ddb_local_endpoint)
    chains = SyncXorAckDynamoDB(db, table=ddb_table.name)
    chains.create(TAG, b"\x01" * 8)
    chains.stamp(TAG, b"\x01" * 8)  # acked
    late = TAG + "-late"
    chains.create(late, b"\x01" * 8, timeout=0.1)
    time.sleep(0.3)
    assert [s.tag for s in chains.list_chains("overdue")] == [late]  # a chain to the inventory
    with contextlib.suppress(ChainTimedOut):
        swept = chains.sweep()
        assert [s.tag for s in swept] == [late]  # ... and to the sweeper
    assert chains.get(TAG).acked and chains.get(late).reason == "timeout"

    streams = streams_client(ddb_local_endpoint, "us-east-1")
    found = []
    for _record, decoded in read(streams, stream_arn(db, ddb_table.name)):
        assert not isinstance(decoded, Exception), decoded
        found.extend((e.kind, e.tag) for e in decoded)
    assert found == [
        ("created", TAG),
        ("acked", TAG),
        ("created", late),
        ("timed_out", late),
    ]
