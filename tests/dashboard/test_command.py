"""``xor-ack dashboard`` refuses what cannot work before it serves: usage errors (exit 2),
a missing table or a taken port (exit 1, one ``error:`` line), no traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.table import TableSpec


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_help_names_the_options_without_importing_the_web_server() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from xor_ack_dynamodb.cli import cli\n"
        "r = CliRunner().invoke(cli, ['dashboard', '--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(r.output)\n"
        "web = {'starlette', 'uvicorn', 'jinja2'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & web))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "--read-only" in out.stdout and "--token" in out.stdout
    assert out.stdout.strip().endswith("[]")
    assert "Serve a web dashboard of the chains." in run("--help").output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0"], "reachable from other machines"),
        (["--host", "192.0.2.1", "--token", "short"], "at least 16 characters"),
        (["--port", "70000"], "70000"),
        (["--count-every", "0"], "count-every"),
        (["--endpoint-url", "foo", "--table", "t", "--port", "0"], "'--endpoint-url': 'foo'"),
        (["--sqs-endpoint-url", "foo", "--replay-queue-url", "notaurl"], "--sqs-endpoint-url"),
        (["--replay-queue-url", "notaurl"], "'--replay-queue-url': 'notaurl' is not"),
        (["--region", "us east"], "--region"),
        (["--table", ""], "--table"),
    ],
)
def test_usage_errors_exit_2_before_anything_starts(args: list[str], message: str) -> None:
    result = run("dashboard", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


@pytest.mark.ddblocal
def test_a_missing_table_is_one_error_line(ddb_local_endpoint: str) -> None:
    result = run("--endpoint-url", ddb_local_endpoint, "dashboard", "--table", "no-such-table")
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == (
        f"error: table no-such-table does not exist at {ddb_local_endpoint}: name the chains "
        "table (--table), or create it (xor-ack --table no-such-table table create)"
    )


@pytest.mark.ddblocal
def test_a_table_with_another_partition_key_is_one_error_line(
    ddb_local_endpoint: str, table_spec: TableSpec
) -> None:
    command = [
        sys.executable, "-c", "from xor_ack_dynamodb.cli import main; main()",
        "--endpoint-url", ddb_local_endpoint, "--table", table_spec.name,
        "--partition-key", "job_id", "dashboard", "--port", "0",
    ]  # fmt: skip
    # in a process of its own: a dashboard that does not refuse serves until stopped
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith(f"error: table {table_spec.name} has key "), result.stderr
    assert "expected job_id (HASH)" in result.stderr and len(result.stderr.splitlines()) == 1


def test_dynamodb_not_running_is_one_error_line_within_seconds() -> None:
    endpoint = "http://127.0.0.1:9"  # nothing listens: refused at once
    started = time.monotonic()
    result = run("--endpoint-url", endpoint, "dashboard", "--table", "any-table")
    waited = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: DynamoDB at {endpoint} is unreachable: "), result
    assert len(result.stderr.splitlines()) == 1
    assert waited < 30, waited  # with the clients' ten retries: about 60-80 s


def test_no_aws_credentials_is_said_as_such(tmp_path: Path) -> None:
    """Without credentials the check said "DynamoDB at AWS is unreachable": the network
    was never tried.  It is said as the other commands say it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "credentials"),
        AWS_EC2_METADATA_DISABLED="true",  # no instance to ask
    )
    command = [
        sys.executable, "-c", "from xor_ack_dynamodb.cli import main; main()",
        "--region", "us-east-1", "dashboard", "--table", "any-table", "--port", "0",
    ]  # fmt: skip
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=False, env=env
    )
    assert result.returncode == 1, result.stdout
    assert result.stderr.strip() == (
        "error: no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID"
    ), result.stderr


@pytest.mark.ddblocal
def test_a_port_in_use_is_one_error_line(ddb_local_endpoint: str, table_spec: TableSpec) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = run(
            "--endpoint-url", ddb_local_endpoint, "--table", table_spec.name, "dashboard",
            "--port", port,
        )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: cannot serve on 127.0.0.1:{port}")


@pytest.mark.ddblocal
@pytest.mark.parametrize("where", ["no queue", "no SQS"])
def test_a_replay_queue_it_cannot_use_is_one_line_before_the_link(
    where: str, ddb_local_endpoint: str, table_spec: TableSpec, moto_endpoint: str
) -> None:
    if where == "no queue":
        sqs, says = moto_endpoint, "does not exist"
    else:
        sqs, says = "http://127.0.0.1:9", "cannot be reached"
    result = run(
        "--endpoint-url", ddb_local_endpoint, "--table", table_spec.name, "dashboard",
        "--port", "0", "--sqs-endpoint-url", sqs,
        "--replay-queue-url", f"{sqs}/123456789012/absent",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert result.stdout == ""  # no link: the dashboard did not start
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: --replay-queue-url: queue ") or line.startswith(
        "error: --replay-queue-url: SQS "
    ), line
    assert says in line, line
