"""Events from REAL stream records: chains written through the client on DynamoDB Local, read
back with the ``dynamodbstreams`` API on the same endpoint (the GetRecords format), and the
same records in the Lambda format through the handler."""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import time
from typing import Any

import boto3
import pytest
from infra.cfn import ROOT, load_template
from infra.event_patterns import matches

from xor_ack_dynamodb import SyncXorAckDynamoDB, events
from xor_ack_dynamodb.errors import ChainTimedOut, StreamNotEnabled
from xor_ack_dynamodb.events.follow import read, stream_arn, streams_client
from xor_ack_dynamodb.local import LocalDynamoDB
from xor_ack_dynamodb.table import TableSpec

pytestmark = pytest.mark.ddblocal


def client(endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")


def records_of(endpoint: str, table: str) -> list[dict[str, Any]]:
    streams = streams_client(endpoint, "us-east-1")
    found = []
    for record, decoded in read(streams, stream_arn(client(endpoint), table)):
        assert not isinstance(decoded, Exception), decoded
        found.append(record)
    return found


def as_lambda(record: dict[str, Any]) -> dict[str, Any]:
    """A GetRecords record as Lambda delivers it: JSON, base64 binaries, epoch seconds."""

    def plain(value: Any) -> Any:
        if isinstance(value, bytes):
            return base64.b64encode(value).decode()
        if isinstance(value, dt.datetime):
            return value.timestamp()
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return plain(record)


def test_a_chains_life_from_dynamodb_local(ddb_local_endpoint: str, ddb_table: TableSpec) -> None:
    chains = SyncXorAckDynamoDB(client(ddb_local_endpoint), table=ddb_table.name)
    a, b, c = b"\x01" * 8, b"\x02" * 8, b"\x04" * 8
    chains.create("acked", a)
    chains.stamp("acked", bytes(x ^ y for x, y in zip(a, b, strict=True)))  # a done, b started
    chains.stamp("acked", b)  # zero: acked
    chains.create("failed", a)
    chains.fail("failed", "worker lost")
    chains.create("timed-out", a, timeout=0.1)
    time.sleep(0.2)
    with contextlib.suppress(ChainTimedOut):  # past its deadline: failed "timeout"
        chains.fail("timed-out", "too late")
    chains.create("deleted", c)
    chains.stamp("deleted", b)
    chains.delete("deleted")
    chains.create("acked", c)  # the tag again, over its tombstone: another chain
    records = records_of(ddb_local_endpoint, ddb_table.name)
    found = [e for r in records for e in events.decode(r)]
    assert [(e.kind, e.tag) for e in found] == [
        ("created", "acked"),
        ("acked", "acked"),
        ("created", "failed"),
        ("failed", "failed"),
        ("created", "timed-out"),
        ("timed_out", "timed-out"),
        ("created", "deleted"),
        ("deleted", "deleted"),
        ("created", "acked"),
    ]
    # 3 writes of "acked" (the middle stamp is no event), 2 per failed chain, 3 of "deleted"
    # (its stamp is no event), 1 re-create: every write one record, decoded one by one
    assert len(records) == 11
    acked = found[1]
    assert isinstance(acked, events.Acked)
    state_before = found[0]
    assert acked.chain_id == state_before.chain_id and len(acked.chain_id) > 0
    assert acked.latency is not None and 0 <= acked.latency < 30
    assert acked.latency == pytest.approx(acked.time - state_before.time, abs=1e-6)
    failed = found[3]
    assert isinstance(failed, events.Failed) and failed.reason == "worker lost"
    timed_out = found[5]
    assert isinstance(timed_out, events.TimedOut)
    deleted = found[7]
    assert isinstance(deleted, events.Deleted) and deleted.state == "live"
    assert found[8].chain_id != found[0].chain_id

    # The same records in the Lambda format, through the handler: the same events.
    heard: list[events.ChainEvent] = []
    handler = events.StreamHandler(on_event=heard.append)
    lambda_event = {"Records": [as_lambda(r) for r in records]}
    assert handler(lambda_event, None) == {"batchItemFailures": []}
    assert heard == found

    # The template's filter criteria let through exactly the records that have events.
    filters = filter_patterns()
    for record in lambda_event["Records"]:
        assert any(matches(p, record) for p in filters) == bool(events.decode(record)), record


def filter_patterns() -> list[dict[str, Any]]:
    template = load_template(ROOT / "infra" / "events.yaml")
    mapping = template["Resources"]["StreamMapping"]["Properties"]
    return [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]


def table_without_indexes(db: Any) -> TableSpec:
    """The chains table's key, stream and TTL, without the inventory indexes.

    DynamoDB Local 3.3.0's TTL job deletes an expired item within seconds from such a
    table, but was not seen deleting from one with the two global secondary indexes (an
    expired item still there after 6 minutes), so the TTL test uses this one.
    """
    spec = TableSpec(name=f"ttl-{time.time_ns()}")
    request = spec.create_request()
    del request["GlobalSecondaryIndexes"]
    request["AttributeDefinitions"] = spec.attribute_definitions()[:1]
    db.create_table(**request)
    db.get_waiter("table_exists").wait(TableName=spec.name)
    db.update_time_to_live(**spec.ttl_request())
    return spec


@pytest.mark.slow_ttl
def test_real_ttl_deletions_on_dynamodb_local() -> None:
    """THE slow test: waits (up to 90 s) for DynamoDB Local's TTL job to delete two items.

    On a DynamoDB Local of its own: the session's server holds hundreds of tables by
    now, and its TTL job takes minutes to reach one of them.
    """
    with LocalDynamoDB(backend="dynamodb-local") as server:
        _expire_two_chains(server.endpoint_url)


def _expire_two_chains(ddb_local_endpoint: str) -> None:
    db = client(ddb_local_endpoint)
    spec = table_without_indexes(db)
    chains = SyncXorAckDynamoDB(db, table=spec.name, tombstone_ttl=1)
    chains.create("lost", b"\x01" * 8, ttl=1)  # a live chain that never finishes
    chains.create("done", b"\x01" * 8)
    chains.stamp("done", b"\x01" * 8)  # acked: a tombstone that expires in a second
    streams = streams_client(ddb_local_endpoint, "us-east-1")
    arn = stream_arn(db, spec.name)
    removals: list[dict[str, Any]] = []
    deadline = time.monotonic() + 90
    while len(removals) < 2 and time.monotonic() < deadline:
        time.sleep(2)
        removals = [
            record
            for record, _ in read(streams, arn)
            if record["eventName"] not in ("INSERT", "MODIFY")
        ]
    assert len(removals) == 2, "DynamoDB Local did not delete the expired items within 90 s"
    # DynamoDB Local 3.3.0 names a TTL deletion so, and gives no userIdentity.
    assert {r["eventName"] for r in removals} == {"UNKNOWN_TO_SDK_VERSION"}
    assert all("userIdentity" not in r for r in removals)
    found = {e.tag: e for r in removals for e in events.decode(r)}
    lost, done = found["lost"], found["done"]
    assert isinstance(lost, events.Expired) and lost.lost and lost.state == "live"
    assert isinstance(done, events.Expired) and not done.lost and done.state == "acked"
    # The same deletions as AWS records them (REMOVE, the service's userIdentity), in the
    # Lambda format: the same events, and they pass the template's filters.
    for record in removals:
        on_aws = as_lambda(record) | {
            "eventName": "REMOVE",
            "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        }
        assert events.decode(on_aws) == events.decode(record)
        assert any(matches(p, on_aws) for p in filter_patterns())


def test_a_table_without_a_stream_is_a_typed_error(ddb_local_endpoint: str) -> None:
    db = client(ddb_local_endpoint)
    spec = TableSpec(name="no-stream-" + dt.datetime.now().strftime("%H%M%S%f"))
    request = spec.create_request()
    del request["StreamSpecification"]
    db.create_table(**request)
    with pytest.raises(StreamNotEnabled, match="has no stream"):
        stream_arn(db, spec.name)
