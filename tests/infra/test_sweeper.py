"""The scheduled-Lambda sweeper: ``xor_ack_dynamodb.sweeper.handler`` called as Lambda calls
it, with an EventBridge scheduled event (``events/scheduled-event.json``, the shape of AWS's
documented sample), against DynamoDB Local and moto."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp
from xor_ack_dynamodb.chain import ChainState
from xor_ack_dynamodb.dynamodb import sweeper  # the module: the tests set its constants
from xor_ack_dynamodb.table import TableSpec

EVENT = json.loads((Path(__file__).parent / "events" / "scheduled-event.json").read_text())
SHORT = 0.3
OVERDUE_AFTER = 0.5


def _client(endpoint: str, spec: TableSpec) -> SyncXorAckDynamoDB:
    ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    return SyncXorAckDynamoDB(ddb, table=spec.name, partition_key=spec.partition_key)


@pytest.fixture
def lambda_env(
    backend: tuple[str, TableSpec], monkeypatch: pytest.MonkeyPatch
) -> tuple[str, TableSpec]:
    """The function's environment: the table and, for a local table, its endpoint."""
    endpoint, spec = backend
    monkeypatch.setenv(sweeper.ENV_TABLE, spec.name)
    monkeypatch.delenv(sweeper.ENV_PARTITION_KEY, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    return endpoint, spec


def test_handler_fails_the_overdue_chains_once(
    lambda_env: tuple[str, TableSpec], capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint, spec = lambda_env
    ack = _client(endpoint, spec)
    for tag in ("late-1", "late-2"):
        ack.create(tag, new_stamp(), timeout=SHORT)
    ack.create("in-time", new_stamp(), timeout=600)
    ack.create("no-deadline", new_stamp())
    time.sleep(OVERDUE_AFTER)
    context = SimpleNamespace(aws_request_id="req-1", function_name="sweeper")

    summary = sweeper.handler(EVENT, context)

    assert sorted(summary.pop("tags")) == ["late-1", "late-2"]
    assert summary.pop("seconds") >= 0
    assert summary == {
        "table": spec.name,
        "failed": 2,
        "more": 0,
        "errors": {},
        "event_id": EVENT["id"],
        "scheduled_at": EVENT["time"],
    }
    (line,) = capsys.readouterr().out.splitlines()
    logged = json.loads(line)
    assert (logged["message"], logged["level"], logged["aws_request_id"]) == (
        "xor-ack sweep",
        "INFO",
        "req-1",
    )
    assert (logged["failed"], sorted(logged["tags"])) == (2, ["late-1", "late-2"])
    for tag in ("late-1", "late-2"):
        state = ack.get(tag)
        assert state is not None and (state.failed, state.reason) == (True, "timeout")
    assert all(s is not None and s.live for s in ack.get_many(["in-time", "no-deadline"]).values())

    again = sweeper.handler(EVENT, context)  # nothing left to fail
    assert (again["failed"], again["tags"]) == (0, [])


def test_the_line_docs_inventory_shows_has_the_keys_the_handler_logs(
    lambda_env: tuple[str, TableSpec], capsys: pytest.CaptureFixture[str]
) -> None:
    """An operator writes CloudWatch Logs queries from the documented line: it must not
    leave out a key (``errors``: the chains a sweep could not fail) nor add one."""
    docs = Path(__file__).parents[2] / "docs" / "inventory.md"
    (shown,) = [
        line for line in docs.read_text().splitlines() if line.startswith('{"message":"xor-ack')
    ]
    sweeper.handler(EVENT, SimpleNamespace(aws_request_id="req-1"))
    logged = json.loads(capsys.readouterr().out)
    assert list(json.loads(shown)) == list(logged)


def test_handler_takes_any_event_and_no_context(lambda_env: tuple[str, TableSpec]) -> None:
    """EventBridge Scheduler passes what the schedule says (often ``{}``)."""
    _, spec = lambda_env
    summary = sweeper.handler({}, None)
    assert (summary["table"], summary["failed"], summary["event_id"]) == (spec.name, 0, None)


def test_concurrent_sweepers_fail_each_chain_exactly_once(
    ddb_local_endpoint: str, ddb_table: TableSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four functions at once, each with its own client (as four Lambda instances)."""
    monkeypatch.setenv(sweeper.ENV_TABLE, ddb_table.name)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb_local_endpoint)
    monkeypatch.setattr(sweeper, "_client", lambda spec: _client(ddb_local_endpoint, spec))
    ack = _client(ddb_local_endpoint, ddb_table)
    tags = [f"chain-{i}" for i in range(24)]
    ack.create_many({tag: new_stamp() for tag in tags}, timeout=SHORT)
    time.sleep(OVERDUE_AFTER)
    with ThreadPoolExecutor(4) as pool:
        summaries = list(pool.map(lambda _: sweeper.handler(EVENT, None), range(4)))
    failed = [tag for summary in summaries for tag in summary["tags"]]
    assert sorted(failed) == sorted(tags)  # every chain once, by exactly one sweeper
    assert sum(summary["failed"] for summary in summaries) == len(tags)
    states: dict[str, ChainState | None] = ack.get_many(tags)
    assert all(s is not None and s.reason == "timeout" for s in states.values())


def test_summary_lists_at_most_max_tags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweeper, "MAX_TAGS", 2)
    states = [SimpleNamespace(tag=f"t{i}") for i in range(5)]
    summary = sweeper.SweepSummary.of("chains", states, 0.5)  # type: ignore[arg-type]
    assert (summary.failed, summary.tags, summary.more) == (5, ("t0", "t1"), 3)


@pytest.mark.parametrize(
    ("environ", "says"),
    [
        ({}, "XOR_ACK_TABLE is not set"),
        ({"XOR_ACK_TABLE": "ab"}, "table name 'ab' is not valid"),
        ({"XOR_ACK_TABLE": "chains", "XOR_ACK_PARTITION_KEY": "stamp"}, "cannot be 'stamp'"),
    ],
)
def test_a_misconfigured_sweeper_says_what_to_set(environ: dict[str, str], says: str) -> None:
    with pytest.raises(sweeper.SweeperMisconfigured) as raised:
        sweeper.settings(environ)
    assert says in str(raised.value)
    assert raised.value.code == "SweeperMisconfigured"


def test_settings_read_table_and_key() -> None:
    spec = sweeper.settings({"XOR_ACK_TABLE": "jobs", "XOR_ACK_PARTITION_KEY": "fileID"})
    assert (spec.name, spec.partition_key) == ("jobs", "fileID")
    assert sweeper.settings({"XOR_ACK_TABLE": "jobs"}).partition_key == "tagID"


def test_a_sweep_stopped_part_way_logs_the_chains_it_failed_then_fails(
    moto_endpoint: str,
    moto_table: TableSpec,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The log line is the record of which chains timed out (infra/sweeper.yaml keeps the
    log group for it).  A Query of the last index shard refused after the earlier shards'
    chains were failed raised out of the handler before anything was printed: those
    tombstones were in no line.  Now the line names them, says why it stopped (level
    ERROR), and the invocation fails with ``SweepStopped``."""
    from botocore.exceptions import ClientError

    from xor_ack_dynamodb.dynamodb.item import INVENTORY_SHARDS, shard_of
    from xor_ack_dynamodb.errors import SweepStopped

    last = INVENTORY_SHARDS - 1
    tags = [t for t in (f"late-{i}" for i in range(40)) if shard_of(t) < last][:3]
    ack = _client(moto_endpoint, moto_table)
    for tag in tags:
        ack.create(tag, new_stamp(), timeout=SHORT)
    time.sleep(OVERDUE_AFTER)
    monkeypatch.setenv(sweeper.ENV_TABLE, moto_table.name)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setattr(sweeper, "_clients", {})
    real_sync_client = sweeper.aws.sync_client

    def throttled_last_shard(**options: object) -> object:
        client = real_sync_client(**options)

        def refuse(params: dict[str, object], **_: object) -> None:
            values = params.get("ExpressionAttributeValues") or {}
            if values.get(":shard") == {"N": str(last)}:  # type: ignore[union-attr]
                error = {"Code": "ProvisionedThroughputExceededException", "Message": "slow"}
                raise ClientError({"Error": error}, "Query")

        client.meta.events.register("provide-client-params.dynamodb.Query", refuse)
        return client

    monkeypatch.setattr(sweeper.aws, "sync_client", throttled_last_shard)
    with pytest.raises(SweepStopped) as stopped:
        sweeper.handler(EVENT, SimpleNamespace(aws_request_id="req-9"))
    assert sorted(s.tag for s in stopped.value.failed) == sorted(tags)
    assert isinstance(stopped.value.__cause__, ClientError)
    (line,) = capsys.readouterr().out.splitlines()
    logged = json.loads(line)
    assert logged["level"] == "ERROR" and logged["failed"] == len(tags)
    assert sorted(logged["tags"]) == sorted(tags)
    assert logged["stopped"].startswith(f"the sweep stopped at index shard {last}: ")
    assert all(ack.get(tag).failed for tag in tags)  # type: ignore[union-attr]
