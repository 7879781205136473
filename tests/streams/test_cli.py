"""``xor-ack events follow`` and ``xor-ack chain stats`` against DynamoDB Local."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result

from xor_ack_dynamodb import SyncXorAckDynamoDB
from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.errors import ChainTimedOut
from xor_ack_dynamodb.table import TableSpec

pytestmark = pytest.mark.ddblocal


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def chains(endpoint: str, table: TableSpec) -> SyncXorAckDynamoDB:
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    return SyncXorAckDynamoDB(client, table=table.name)


def write_chains(client: SyncXorAckDynamoDB, prefix: str = "") -> None:
    for i in range(3):
        client.create(f"{prefix}ok-{i}", b"\x01" * 8)
        client.stamp(f"{prefix}ok-{i}", b"\x01" * 8)
    client.create(f"{prefix}bad", b"\x01" * 8)
    client.fail(f"{prefix}bad", "worker lost")
    client.create(f"{prefix}late", b"\x01" * 8, timeout=0.1)
    time.sleep(0.2)
    with contextlib.suppress(ChainTimedOut):  # past its deadline: failed "timeout"
        client.fail(f"{prefix}late", "too late")
    client.create(f"{prefix}open", b"\x01" * 8)
    client.stamp(f"{prefix}open", b"\x03" * 8)  # intermediate: no event
    client.delete(f"{prefix}open")


def test_chain_stats(ddb_local_endpoint: str, ddb_table: TableSpec) -> None:
    write_chains(chains(ddb_local_endpoint, ddb_table))
    args = ["chain", "stats", "--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    latency = summary.pop("complete_latency")
    assert summary == {
        "created": 6,
        "acked": 3,
        "failed": 1,
        "timed_out": 1,
        "expired": 0,
        "tombstones_expired": 0,
        "deleted": 1,
        "corrupt_records": 0,
    }
    assert set(latency) == {"p50", "p90", "p99"}
    assert 0 <= latency["p50"] <= latency["p90"] <= latency["p99"] < 30
    text = run(*args)
    assert text.exit_code == 0, text.output
    assert "acked:" in text.stdout and "latency p99:" in text.stdout


def test_follow_from_start_prints_one_line_per_event(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    write_chains(chains(ddb_local_endpoint, ddb_table))
    base = ["events", "follow", "--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    result = run(*base, "--from-start", "--count", "12", "--json", "--interval", "0.1")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(e["kind"], e["tag"]) for e in lines] == [
        *[(k, f"ok-{i}") for i in range(3) for k in ("created", "acked")],
        ("created", "bad"),
        ("failed", "bad"),
        ("created", "late"),
        ("timed_out", "late"),
        ("created", "open"),
        ("deleted", "open"),
    ]
    assert lines[7]["reason"] == "worker lost"
    assert all(len(e["id"]) == 32 for e in lines)
    text = run(*base, "--from-start", "--count", "2")
    assert text.exit_code == 0, text.output
    first, second = text.stdout.splitlines()
    assert first.split()[1:3] == ["created", "ok-0"] and " chain=" in first
    assert second.split()[1:3] == ["acked", "ok-0"] and "latency=" in second


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_follow_tails_and_stops_cleanly_on_a_signal(
    ddb_local_endpoint: str, ddb_table: TableSpec, stop: signal.Signals
) -> None:
    client = chains(ddb_local_endpoint, ddb_table)
    client.create("before", b"\x01" * 8)  # before the follower: not printed (LATEST)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    command = [sys.executable, "-c", "from xor_ack_dynamodb.cli import main; main()"]
    options = ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name, "--interval", "0.1"]
    proc = subprocess.Popen(
        [*command, "events", "follow", "--json", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None and proc.stdout is not None
        ready = proc.stderr.readline()
        assert ready.startswith("following arn:"), ready
        client.create("after", b"\x02" * 8)
        client.stamp("after", b"\x02" * 8)
        got: list[dict[str, Any]] = [json.loads(proc.stdout.readline()) for _ in range(2)]
        assert [(e["kind"], e["tag"]) for e in got] == [("created", "after"), ("acked", "after")]
        proc.send_signal(stop)
        assert proc.wait(timeout=10) == 0
        assert proc.stdout.read() == ""
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_follow_and_stats_refuse_bad_input_in_one_line(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    for args in (["events", "follow", "--interval", "0"], ["events", "follow", "--count", "0"]):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: Invalid value for"), result.stderr
    for verb in (["events", "follow"], ["chain", "stats"]):
        missing = run(*verb, "--endpoint-url", ddb_local_endpoint, "--table", "no-such-table")
        assert missing.exit_code == 1, missing.output
        assert missing.stderr.startswith("error: ResourceNotFoundException"), missing.stderr
        assert len(missing.stderr.splitlines()) == 1


def test_follow_and_stats_refuse_a_table_with_another_key_in_one_line(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    write_chains(chains(ddb_local_endpoint, ddb_table))
    base = ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name]
    for verb in (["events", "follow", "--from-start", "--count", "1"], ["chain", "stats"]):
        result = run(*verb, *base, "--partition-key", "job_id")
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(f"error: TableMismatch: table {ddb_table.name} has key ")
        assert len(result.stderr.splitlines()) == 1


def test_no_stream_is_one_line(ddb_local_endpoint: str) -> None:
    db = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    spec = TableSpec(name=f"plain-{time.time_ns()}")
    request = spec.create_request()
    del request["StreamSpecification"]
    db.create_table(**request)
    result = run("chain", "stats", "--endpoint-url", ddb_local_endpoint, "--table", spec.name)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: StreamNotEnabled: table {spec.name} has no stream")


def test_follow_and_stats_refuse_a_stream_without_both_images(ddb_local_endpoint: str) -> None:
    """A stream of another view type (here NEW_IMAGE, enabled for another consumer) lacks
    the image that tells an ack, a failure or a timeout: ``chain stats`` used to print acked
    0 and every such record as corrupt, with exit 0.  Both verbs refuse it in one line."""
    db = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    spec = TableSpec(name=f"newimage-{time.time_ns()}")
    request = spec.create_request()
    request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    db.create_table(**request)
    write_chains(chains(ddb_local_endpoint, spec))
    base = ["--endpoint-url", ddb_local_endpoint, "--table", spec.name]
    for verb in (["chain", "stats"], ["events", "follow", "--from-start", "--count", "1"]):
        result = run(*verb, *base)
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(
            f"error: StreamViewConflict: table {spec.name} already has a stream with view type "
            "NEW_IMAGE; the chain events need NEW_AND_OLD_IMAGES."
        ), result.stderr
        assert len(result.stderr.splitlines()) == 1
