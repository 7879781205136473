"""``xor-ack worker`` and ``submit``: options checked before anything starts (usage errors exit
2); a job submitted from the shell is the job ``Fleet.submit`` starts."""

from __future__ import annotations

import subprocess
import sys

import boto3
import pytest
from click.testing import CliRunner

from xor_ack_dynamodb import SyncXorAckDynamoDB
from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.fleet import Envelope
from xor_ack_dynamodb.table import TableSpec

from .sqs_fixtures import make_queues, sqs

QUEUE = "http://127.0.0.1:9/123456789012/work"
HANDLER = "xor_ack_dynamodb.fleet.examples:countdown"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--queue-url", "work", "--handler", HANDLER], "not an http(s) URL"),
        (["--queue-url", QUEUE, "--handler", "countdown"], "not module:function"),
        (["--queue-url", QUEUE, "--handler", "no_such_module_x:f"], "cannot import"),
        (["--queue-url", QUEUE, "--handler", "json:nothing"], "has no function"),
        (
            ["--queue-url", QUEUE, "--handler", "tests.fleet.broken_jobs:handle"],
            "cannot import 'tests.fleet.broken_jobs': KeyError",
        ),
        (["--queue-url", QUEUE, "--handler", HANDLER, "--concurrency", "0"], "--concurrency"),
        (["--queue-url", QUEUE, "--handler", HANDLER, "--wait-time", "21"], "--wait-time"),
        (["--queue-url", QUEUE, "--handler", HANDLER, "--dead-letter-queue-url", QUEUE], "differ"),
        (["--handler", HANDLER], "--queue-url"),
    ],
)
def test_bad_options_are_usage_errors(args: list[str], says: str) -> None:
    result = CliRunner().invoke(cli, ["worker", *args])
    assert result.exit_code == 2, result.output
    assert says in result.output


def test_the_verb_is_listed() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert "worker" in result.output and "fleet worker" in result.output


def test_submit_refuses_a_payload_that_is_no_json() -> None:
    result = CliRunner().invoke(cli, ["submit", "job-1", "{oops", "--queue-url", QUEUE])
    assert result.exit_code == 2 and "PAYLOAD must be JSON" in result.output
    assert "submit" in CliRunner().invoke(cli, ["--help"]).output


@pytest.mark.ddblocal
def test_submit_creates_the_chain_and_sends_its_root(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    work, _ = make_queues(moto_endpoint)
    args = ["--endpoint-url", ddb_local_endpoint, "--region", "us-east-1"]
    args += ["--table", ddb_table.name, "submit", "cli-job", '{"n": 2}', "--timeout", "600"]
    args += ["--queue-url", work, "--sqs-endpoint-url", moto_endpoint, "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    root = Envelope.from_json(result.output)
    (message,) = sqs(moto_endpoint).receive_message(QueueUrl=work)["Messages"]
    assert Envelope.from_json(message["Body"]) == root
    assert root.tag == "cli-job" and root.payload == {"n": 2} and root.window == 64
    chain = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1"),
        table=ddb_table.name,
    ).get("cli-job")
    assert chain is not None and chain.live and chain.deadline is not None
    assert chain.chain_id == root.chain_id and chain.stamp == root.stamp


@pytest.mark.ddblocal
@pytest.mark.parametrize("where", ["no queue", "no SQS"])
def test_submit_to_a_queue_it_cannot_use_creates_no_chain(
    where: str, moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    if where == "no queue":
        queue, endpoint, says = f"{moto_endpoint}/123456789012/absent", moto_endpoint, "exist"
    else:
        queue, endpoint, says = QUEUE, "http://127.0.0.1:9", "cannot be reached"
    args = ["--endpoint-url", ddb_local_endpoint, "--region", "us-east-1"]
    args += ["--table", ddb_table.name, "submit", f"job-{where[3:]}", "--queue-url", queue]
    result = CliRunner().invoke(cli, [*args, "--sqs-endpoint-url", endpoint])
    assert result.exit_code == 1, result.output
    (line,) = result.output.splitlines()
    assert line.startswith("error: QueueUnavailable: ") and says in line, line
    assert "xor-ack local start" not in line  # a hint for DynamoDB, not SQS
    chains = SyncXorAckDynamoDB(
        boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1"),
        table=ddb_table.name,
    )
    assert chains.get(f"job-{where[3:]}") is None  # refused: nothing was created


def _worker(*args: str) -> subprocess.CompletedProcess[str]:
    """``xor-ack worker`` in a process of its own, as a user starts it (60 s at most)."""
    command = [sys.executable, "-c", "from xor_ack_dynamodb.cli import main; main()"]
    command += ["--region", "us-east-1", *args, "--handler", HANDLER, "--wait-time", "0"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@pytest.mark.ddblocal
def test_a_worker_whose_sqs_cannot_be_reached_says_which_queue_not_to_start_dynamodb(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    from xor_ack_dynamodb.local import free_port

    sqs_endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    queue = f"{sqs_endpoint}/123456789012/work"
    args = ["--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name, "worker"]
    ended = _worker(*args, "--queue-url", queue, "--sqs-endpoint-url", sqs_endpoint)
    assert ended.returncode == 1, ended.stderr
    (line,) = ended.stderr.splitlines()
    assert line == (
        f"error: QueueUnavailable: SQS cannot be reached for queue {queue} (Could not connect to "
        f'the endpoint URL: "{sqs_endpoint}/"): check the SQS endpoint; nothing was written (the '
        f"queue of --queue-url, through --sqs-endpoint-url {sqs_endpoint})"
    ), line
    assert "xor-ack local start" not in line  # a hint for DynamoDB, not SQS
    assert ended.stdout == ""


def test_a_worker_whose_dynamodb_cannot_be_reached_says_start_one(moto_endpoint: str) -> None:
    from xor_ack_dynamodb.local import free_port

    work, _ = make_queues(moto_endpoint)
    dynamodb = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    args = ["--endpoint-url", dynamodb, "--table", "chains", "worker", "--queue-url", work]
    ended = _worker(*args, "--sqs-endpoint-url", moto_endpoint)
    assert ended.returncode == 1, ended.stderr
    (line,) = ended.stderr.splitlines()
    assert line == (
        f'error: Could not connect to the endpoint URL: "{dynamodb}/" (is it running? '
        "`xor-ack local start` starts one)"
    ), line
    assert ended.stdout == ""
