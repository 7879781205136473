"""The xor-ack CLI, through click's test runner (and one real process for the import check)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import click
import pytest
from botocore.exceptions import ClientError, NoRegionError
from click.testing import CliRunner, Result
from click.types import FloatParamType

from xor_ack_dynamodb import cli as cli_module
from xor_ack_dynamodb.cli import NOT_RUNNING, cli, explain
from xor_ack_dynamodb.cli import local as local_verbs
from xor_ack_dynamodb.dynamodb import ownership as ownership_module
from xor_ack_dynamodb.dynamodb import table as table_module
from xor_ack_dynamodb.local import state_file
from xor_ack_dynamodb.table import TTL_ATTRIBUTE, TableSpec, describe_table


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def plain_table(client: Any, key: str, prefix: str = "users", **extra: Any) -> str:
    """A table made by hand (not by the tooling), keyed ``key`` (S), on demand and ACTIVE."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
        **extra,
    )
    client.get_waiter("table_exists").wait(
        TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
    )
    return name


def assert_user_error(result: Result, starts: str) -> None:
    """Exit 1, one `error: ...` line on stderr, no traceback."""
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {starts}"), lines[0]
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception


def test_every_verb_has_help() -> None:
    verbs = list(_commands(cli))
    expected = {
        ("table", "create"),
        ("table", "describe"),
        ("table", "delete"),
        ("table", "upgrade"),
        ("local", "start"),
        ("local", "stop"),
        ("local", "status"),
        ("chain", "create"),
        ("chain", "stamp"),
        ("chain", "get"),
        ("chain", "show"),
        ("chain", "touch"),
        ("chain", "list"),
        ("chain", "fail"),
        ("chain", "delete"),
        ("chain", "stats"),
        ("events", "follow"),
        ("sweep",),
    }
    assert expected <= set(verbs)
    for path in [(), *verbs]:
        result = run(*path, "--help")
        assert result.exit_code == 0, (path, result.output)
        assert result.output.startswith(f"Usage: {' '.join(['cli', *path])}"), result.output


def test_python_dash_m_runs_the_command() -> None:
    """``python -m xor_ack_dynamodb.cli`` where the script is not on the PATH (it said the
    package cannot be executed directly)."""
    out = subprocess.run(
        [sys.executable, "-m", "xor_ack_dynamodb.cli", "table", "--help"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Usage: xor-ack table"), out.stdout


def test_help_does_not_import_pyspark() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from xor_ack_dynamodb.cli import cli\n"
        "r = CliRunner().invoke(cli, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_lazy_commands_are_listed_without_import_and_loaded_on_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = f"{__package__}.lazy_command"
    monkeypatch.setitem(
        cli_module._LAZY_COMMANDS, "hello", (module, "hello", "Say hello (lazily loaded).")
    )
    monkeypatch.delitem(sys.modules, module, raising=False)
    listing = run("--help")
    assert re.search(r"^  hello +Say hello \(lazily loaded\)\.$", listing.output, re.MULTILINE)
    assert module not in sys.modules
    result = run("hello", "--name", "chains")
    assert result.exit_code == 0, result.output
    assert result.output == "hello chains\n"
    monkeypatch.setitem(
        cli_module._LAZY_COMMANDS, "absent", (f"{__package__}.no_such_module", "x", "Not there.")
    )
    assert "absent" not in run("--help").output
    assert run("absent").exit_code == 2  # click: no such command


@pytest.fixture
def endpoint(backend: tuple[str, TableSpec]) -> str:
    return backend[0]


def _table() -> str:
    return f"cli-{uuid.uuid4().hex[:10]}"


def test_table_create_describe_delete(endpoint: str) -> None:
    name = _table()
    base = ("--endpoint-url", endpoint, "--table", name)
    assert_user_error(run(*base, "table", "describe"), "ResourceNotFoundException")
    created = run(*base, "table", "create")
    assert created.exit_code == 0, created.output
    assert created.output == (
        f"table {name} created: key tagID (S), TTL on {TTL_ATTRIBUTE}, PAY_PER_REQUEST, "
        "stream NEW_AND_OLD_IMAGES, indexes xor_ack_open, xor_ack_failed\n"
    )
    again = run(*base, "table", "create")
    assert again.exit_code == 0 and "already exists, checked" in again.output
    described = run(*base, "table", "describe", "--json")
    assert described.exit_code == 0, described.output
    info = json.loads(described.output)
    assert (info["name"], info["partition_key"], info["partition_key_type"]) == (name, "tagID", "S")
    assert (info["ttl_status"], info["ttl_attribute"]) == ("ENABLED", TTL_ATTRIBUTE)
    text = run(*base, "table", "describe")
    assert text.exit_code == 0
    assert f"ttl:                 ENABLED ({TTL_ATTRIBUTE})" in text.output
    # another key than the table's: create refuses, describe warns
    other_key = ("--endpoint-url", endpoint, "--table", name, "--partition-key", "fileID")
    assert_user_error(run(*other_key, "table", "create"), "TableMismatch: table")
    assert "warning: the partition key is tagID" in run(*other_key, "table", "describe").stderr
    refused = run(*base, "table", "delete", input="n\n")
    assert refused.exit_code == 1 and "Aborted" in refused.output
    unasked = run(*base, "table", "delete", input="")  # stdin closed: no answer to read
    assert_user_error(unasked, "table delete asks before it deletes")
    assert "pass --yes" in unasked.stderr and "Aborted" not in unasked.output
    assert run(*base, "table", "describe").exit_code == 0  # nothing deleted
    deleted = run(*base, "table", "delete", "--yes")
    assert deleted.exit_code == 0, deleted.output
    assert_user_error(run(*base, "table", "describe"), "ResourceNotFoundException")


def test_table_create_provisioned(moto_endpoint: str) -> None:
    name = _table()
    base = ("--endpoint-url", moto_endpoint, "--table", name)
    result = run(*base, "table", "create", "--billing-mode", "PROVISIONED", "--read-capacity", "4")
    assert result.exit_code == 0, result.output
    client = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    info = describe_table(client, name)
    assert (info.billing_mode, info.read_capacity, info.write_capacity) == ("PROVISIONED", 4, 5)
    assert run(*base, "table", "create", "--read-capacity", "0").exit_code == 2  # usage error
    again = run(*base, "table", "create", "--billing-mode", "PAY_PER_REQUEST")  # exists
    assert again.exit_code == 0, again.output
    assert again.stderr == (
        f"warning: table {name} is left as it is (PROVISIONED): --billing-mode PAY_PER_REQUEST "
        "applies to a new table only; table create changes no existing table\n"
    )
    assert run(*base, "table", "create").stderr == ""  # nothing given: nothing to say
    assert describe_table(client, name).billing_mode == "PROVISIONED"


def test_table_delete_no_wait_does_not_say_the_table_is_gone(moto_endpoint: str) -> None:
    base = ("--endpoint-url", moto_endpoint, "--table", _table())
    assert run(*base, "table", "create").exit_code == 0
    result = run(*base, "table", "delete", "--yes", "--no-wait")
    assert result.exit_code == 0, result.output
    assert "is being deleted (--no-wait: not waited for)" in result.stdout
    assert "deleted\n" not in result.stdout


def test_chain_by_hand(backend: tuple[str, TableSpec]) -> None:
    endpoint, spec = backend
    base = ("--endpoint-url", endpoint, "--table", spec.name)
    made = run(*base, "chain", "create", "file-1")
    assert made.exit_code == 0, made.output
    stamp = made.output.strip().rsplit(" ", 1)[1]
    assert len(bytes.fromhex(stamp)) == 16
    assert_user_error(run(*base, "chain", "create", "file-1", "ab" * 16), 'TagExists: "file-1"')
    half = "0f" * 16
    rest = bytes(
        a ^ b for a, b in zip(bytes.fromhex(stamp), bytes.fromhex(half), strict=True)
    ).hex()
    first = run(*base, "chain", "stamp", "file-1", half, "--token", "w1")
    assert first.exit_code == 0, first.output
    assert first.output == f"file-1 state {rest} (pending)\n"
    replay = run(*base, "chain", "stamp", "file-1", half, "--token", "w1")  # same token: once
    assert replay.output == first.output
    pending = json.loads(run(*base, "chain", "get", "file-1", "--json").output)
    assert (pending["stamp"], pending["state"], pending["version"]) == (rest, "pending", 2)
    done = run(*base, "chain", "stamp", "file-1", f"0x{rest.upper()}")
    assert done.output == f"file-1 state {'00' * 16} (acked)\n"
    shown = run(*base, "chain", "get", "file-1")
    assert shown.exit_code == 0
    assert "state:   acked" in shown.output
    late = run(*base, "chain", "stamp", "file-1", half)  # it said '"file-1" does not exist'
    assert_user_error(late, 'TagNotFound: "file-1" has no live chain: it was never created, or')
    assert "acked" in late.stderr and "does not exist" not in late.stderr

    assert run(*base, "chain", "create", "file-2", "aabbccddeeff0011", "--ttl", "60").exit_code == 0
    failed = run(*base, "chain", "fail", "file-2", "--reason", "worker lost")
    assert failed.output == "file-2 failed (worker lost)\n"
    assert (
        json.loads(run(*base, "chain", "get", "file-2", "--json").output)["reason"] == "worker lost"
    )
    assert run(*base, "chain", "delete", "file-2").output == "file-2 deleted\n"
    assert_user_error(run(*base, "chain", "get", "file-2"), '"file-2" does not exist')
    assert_user_error(run(*base, "chain", "delete", "file-2"), 'TagNotFound: "file-2"')


def test_user_mistakes_are_one_line(moto_table: TableSpec, moto_endpoint: str) -> None:
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    assert_user_error(run(*base, "chain", "create", "t", "00" * 8), "ZeroBufferNoOp")
    # a value the library refuses is a usage error naming the option, before any request
    assert_usage_error(
        run(*base, "chain", "stamp", "t", "ab", "--token", "x" * 17),
        "Invalid value for '--token': must be 1 to 16 bytes of UTF-8, not 17 characters",
    )
    assert_usage_error(
        run(*base, "chain", "create", "t", "--timeout", "600", "--ttl", "10"),
        "InvalidTTL: --ttl must be longer than the chain's first deadline (--timeout, else",
    )
    assert run(*base, "chain", "get", "t").exit_code == 1  # nothing was created
    assert_user_error(
        run("--endpoint-url", moto_endpoint, "--table", "no-such-table", "chain", "get", "x"),
        "ResourceNotFoundException",
    )


def test_unreachable_endpoint_is_one_line() -> None:
    from xor_ack_dynamodb.local import free_port

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = run("--endpoint-url", url, "table", "describe")
    assert_user_error(result, "Could not connect to the endpoint URL")
    assert "xor-ack local start" in result.stderr


def test_explain_botocore_setup_errors() -> None:
    assert explain(NoRegionError()) == (
        "no AWS region: pass --region or set AWS_REGION (or AWS_DEFAULT_REGION)"
    )
    assert explain(ValueError("a bug")) is None


def test_no_region_is_said_with_the_commands_options() -> None:
    """RegionMissing said "pass --region / region_name=" (a Python argument) and nothing of
    DynamoDB Local, which a user whose shell was not pointed at it was after."""
    from xor_ack_dynamodb.errors import RegionMissing

    line = explain(RegionMissing())
    assert line is not None and "region_name" not in line
    assert "--region" in line and 'eval "$(xor-ack local start)"' in line


def test_an_unreachable_aws_endpoint_is_not_told_to_start_a_local_dynamodb() -> None:
    """The hint `xor-ack local start` was given for AWS's own endpoint too."""
    from botocore.exceptions import EndpointConnectionError

    aws = explain(EndpointConnectionError(endpoint_url="https://dynamodb.eu-west-1.amazonaws.com/"))
    assert aws is not None and "local start" not in aws and "--endpoint-url" in aws
    local = explain(EndpointConnectionError(endpoint_url="http://127.0.0.1:1/"))
    assert local is not None and "`xor-ack local start` starts one" in local


def test_local_start_status_stop(run_dir: Path) -> None:
    down = run("local", "status")
    assert down.exit_code == NOT_RUNNING
    assert "no local DynamoDB running" in down.output
    table = _table()
    started = run("--table", table, "local", "start", "--backend", "moto", "--create-table")
    assert started.exit_code == 0, started.output
    assert started.stdout.startswith("export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:")
    assert len(started.stdout.splitlines()) == 1  # eval "$(xor-ack local start)" works
    endpoint = started.stdout.strip().split("=", 1)[1]
    assert "moto server (test double) running at" in started.stderr
    assert f"table {table} ready" in started.stderr
    assert_user_error(run("local", "start", "--backend", "moto"), "LocalDynamoDBError: a local")
    up = run("local", "status")
    assert up.exit_code == 0, up.output
    assert f"endpoint:  {endpoint}" in up.output and "answering: yes" in up.output
    described = run("--endpoint-url", endpoint, "--table", table, "table", "describe", "--json")
    assert json.loads(described.output)["ttl_attribute"] == TTL_ATTRIBUTE
    stopped = run("local", "stop")
    assert stopped.exit_code == 0 and stopped.output.startswith("stopped moto server")
    assert run("local", "status").exit_code == NOT_RUNNING
    assert run("local", "stop").output == "no local DynamoDB running\n"
    both = run("local", "start", "--in-memory", "--data-dir", str(run_dir / "d"))
    assert both.exit_code == 2 and "exclude each other" in both.output


def test_local_start_whose_table_is_refused_leaves_no_server_running(
    run_dir: Path, tmp_path: Path
) -> None:
    """A --data-dir keeps a table of key tagID; asked for key `other`, the start is refused
    and the server it started is stopped: no export line, and nothing left to stop."""
    data = str(tmp_path / "data")
    table = _table()
    start = ("--table", table, "local", "start", "--backend", "dynamodb-local", "--data-dir", data)
    first = run(*start, "--create-table")
    assert first.exit_code == 0, first.output
    pid = re.search(r"pid: +(\d+)", run("local", "status").output)
    assert pid is not None  # a server left running for long: the JVM's full JIT
    cmdline = Path(f"/proc/{pid[1]}/cmdline").read_bytes().split(b"\0")
    assert b"DynamoDBLocal" in b" ".join(cmdline) and b"-XX:TieredStopAtLevel=1" not in cmdline
    assert run("local", "stop").exit_code == 0
    refused = run("--partition-key", "other", *start, "--create-table")
    assert refused.exit_code == 1, refused.output
    assert refused.stdout == ""
    down = run("local", "status")
    assert down.exit_code == NOT_RUNNING, down.output
    assert refused.stderr.splitlines()[-2:] == [
        "stopped the DynamoDB Local: the table step failed",
        f"error: TableMismatch: table {table} has key tagID (HASH), expected other (HASH) only: "
        "name the chains table (--table); only a chains table made with another "
        "partition key is used with that key (--partition-key)",
    ]
    again = run(*start, "--create-table")  # the data dir is free again, the table as it was
    assert again.exit_code == 0, again.output
    assert f"table {table} already exists, checked: key tagID (S)" in again.stderr
    assert "needs:" not in again.stderr  # made by this release: nothing to upgrade


def test_local_start_with_a_kept_table_says_what_it_lacks(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A --data-dir keeps a chains table made by an earlier release (no TTL, stream or
    inventory indexes).  `local start --create-table` says it was there and checked, and
    names each part it lacks, as `table create` does; it used to print "TTL on expires_at"
    for a table whose TTL was off."""
    data = str(tmp_path / "data")
    start = ("local", "start", "--backend", "dynamodb-local", "--data-dir", data)
    first = run(*start)
    assert first.exit_code == 0, first.output
    endpoint = first.stdout.strip().split("=", 1)[1]
    try:
        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
        table = plain_table(client, "tagID", prefix="cli")  # as an earlier release made it
        chain = {"tagID": {"S": "job-1"}, "stamp": {"B": b"\x01\x02"}, "version": {"N": "1"}}
        client.put_item(TableName=table, Item=chain)  # how it shows it is a chains table
    finally:
        assert run("local", "stop").exit_code == 0
    kept = run("--table", table, *start, "--create-table")
    try:
        assert kept.exit_code == 0, kept.output
        assert kept.stdout.startswith("export AWS_ENDPOINT_URL_DYNAMODB=")
        assert len(kept.stdout.splitlines()) == 1  # the lines about the table are on stderr
        assert f"table {table} already exists, checked: key tagID (S)" in kept.stderr
        assert f"warning: table {table} needs: turn TTL on for {TTL_ATTRIBUTE}" in kept.stderr
        assert "TTL on" not in kept.stderr.replace("turn TTL on", "")
    finally:
        run("local", "stop")


def test_local_start_that_cannot_record_its_server_stops_it(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server answers, but where it runs cannot be written (the state file's temporary
    name is taken by a folder): the start stops the server and says what to do in one
    line.  It used to leave a server running that `local stop` could not find, and call it
    a bug."""
    from xor_ack_dynamodb.dynamodb.local import detached

    started: list[subprocess.Popen[bytes]] = []
    popen = detached.subprocess.Popen

    def recorded(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(detached.subprocess, "Popen", recorded)
    run_dir.mkdir(parents=True, exist_ok=True)
    state_file().with_suffix(".tmp").mkdir()
    try:
        refused = run("local", "start", "--backend", "moto")
        assert_user_error(refused, "LocalDynamoDBError: the moto server started, but where it")
        assert "XOR_ACK_RUN_DIR" in refused.stderr and refused.stdout == ""
        assert len(started) == 1 and started[0].poll() is not None  # stopped, not left running
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(10)


def test_console_script_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "from xor_ack_dynamodb.cli import main; main()", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("xor-ack, version ")


def assert_usage_error(result: Result, starts: str) -> None:
    """Exit 2, one `error: ...` line on stderr naming the value, no traceback."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {starts}"), lines[0]
    assert isinstance(result.exception, SystemExit), result.exception


def test_group_options_work_after_the_verb_and_win(moto_endpoint: str) -> None:
    name, other = _table(), _table()
    made = run("table", "create", "--endpoint-url", moto_endpoint, "--table", name)
    assert made.exit_code == 0, made.output
    assert made.output.startswith(f"table {name} created")
    after = ("--endpoint-url", moto_endpoint, "--table", name)
    assert run("chain", "create", "job", "ab" * 8, *after).exit_code == 0
    got = run("--table", other, "chain", "get", "job", "--json", *after)  # after the verb wins
    assert got.exit_code == 0, got.output
    assert json.loads(got.output)["stamp"] == "ab" * 8
    before = run("--endpoint-url", moto_endpoint, "--table", name, "chain", "get", "job", "--json")
    assert before.output == got.output
    mixed = run("--endpoint-url", moto_endpoint, "chain", "get", "job", "--table", name, "--json")
    assert mixed.output == got.output
    wrong_key = run("table", "describe", *after, "--partition-key", "fileID")
    assert "warning: the partition key is tagID, not fileID" in wrong_key.stderr
    assert_user_error(  # the root's --table is overridden, not the other way round
        run(
            "--table",
            name,
            "chain",
            "get",
            "job",
            "--endpoint-url",
            moto_endpoint,
            "--table",
            other,
        ),
        "ResourceNotFoundException",
    )
    assert "the one after the command wins" in run("chain", "get", "--help").output


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (("table", "create", "--table", ""), "Invalid value for '--table': table name ''"),
        (("--table", "", "table", "create"), "Invalid value for '--table': table name ''"),
        (("table", "create", "--table", "a"), "Invalid value for '--table': table name 'a'"),
        (("chain", "get", "x", "--partition-key", ""), "Invalid value for '--partition-key'"),
        (("chain", "get", "x", "--region", ""), "Invalid value for '--region': ''"),
        (("--region", "us east", "chain", "get", "x"), "Invalid value for '--region'"),
        (("chain", "get", "x", "--endpoint-url", ""), "Invalid value for '--endpoint-url': ''"),
        (("chain", "get", "x", "--endpoint-url", "localhost:8000"), "Invalid value for '--endpo"),
        (("chain", "get", "x", "--endpoint-url", "http://h:port"), "Invalid value for '--endpo"),
        (("chain", "create", ""), "Invalid value for 'TAG': a tag cannot be empty"),
        (("chain", "create", "x" * 2049), "Invalid value for 'TAG': a tag must be at most 2048"),
        (("chain", "show", "a\udc80"), "Invalid value for 'TAG': a tag must be encodable"),
        (("submit", "x" * 2049, "{}"), "Invalid value for 'TAG': a tag must be at most 2048"),
        # the fleet's own limit (markers' keys): exit 1 in the library's words
        (("submit", "x" * 1992, "{}"), "Invalid value for 'TAG': a fleet job's tag must be at"),
        (("submit", "x", "[" * 100_000), "Invalid value for '[PAYLOAD]': PAYLOAD is nested too"),
        (("chain", "create", "t", "xyz"), "Invalid value for '[STAMP]': 'xyz' is not hexadecimal"),
        # an OverflowError said as a bug; a stamp too long for the item, as the library says it
        (("chain", "create", "t", "--bytes", "9" * 20), "Invalid value for '--bytes'"),
        (("chain", "create", "t", "--bytes", "500000"), "Invalid value for '--bytes'"),
        (("chain", "stamp", "t", ""), "Invalid value for 'STAMP': a stamp cannot be empty"),
        (("chain", "stamp", "t", "0x"), "Invalid value for 'STAMP': a stamp cannot be empty"),
        (("table", "create", "--read-capacity", "0"), "Invalid value for '--read-capacity'"),
        (("local", "start", "--port", "70000"), "Invalid value for '--port'"),
        (("chain", "nope"), "No such command 'nope'"),
        (("chain", "get"), "Missing argument 'TAG'"),
    ],
)
def test_empty_or_invalid_values_are_one_line_usage_errors(
    moto_endpoint: str, args: tuple[str, ...], starts: str
) -> None:
    client = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    tables = client.list_tables()["TableNames"]
    result = run("--endpoint-url", moto_endpoint, *args)
    assert_usage_error(result, starts)
    assert "Usage:" not in result.output
    assert client.list_tables()["TableNames"] == tables  # nothing created


def test_local_start_on_a_taken_port_fails_naming_it(run_dir: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("local", "start", "--backend", "moto", "--port", str(port))
        assert_user_error(result, f"LocalDynamoDBError: port {port} on 127.0.0.1 is already in use")
    assert run("local", "status").exit_code == NOT_RUNNING  # nothing left running


def test_local_start_where_a_folder_cannot_be_made_fails_saying_which(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    data = afile / "data"
    result = run("local", "start", "--backend", "dynamodb-local", "--data-dir", str(data))
    assert_user_error(
        result, f"LocalDynamoDBError: the data directory {data} cannot be created (Not a direc"
    )
    assert run("local", "status").exit_code == NOT_RUNNING  # nothing left running
    monkeypatch.setenv("XOR_ACK_RUN_DIR", str(afile / "run"))
    result = run("local", "start", "--backend", "moto")
    assert_user_error(
        result, f"LocalDynamoDBError: the run directory {afile / 'run'} cannot be created (Not a"
    )
    assert afile.read_text() == ""


def _leaves() -> list[tuple[str, ...]]:
    ctx = click.Context(cli)
    leaves = []
    for path in _commands(cli):
        command: click.Command | None = cli
        for name in path:
            assert isinstance(command, click.Group)
            command = command.get_command(ctx, name)
        if not isinstance(command, click.Group):
            leaves.append(path)
    return leaves


def _float_options() -> list[tuple[tuple[str, ...], str]]:
    """Every (verb, option) of a float type, the lazily loaded verbs included."""
    ctx = click.Context(cli)
    found = []
    for path in _leaves():
        command: click.Command | None = cli
        for name in path:
            assert isinstance(command, click.Group)
            command = command.get_command(ctx, name)
        assert command is not None
        found += [
            (path, param.opts[0])
            for param in command.params
            if isinstance(param, click.Option) and isinstance(param.type, FloatParamType)
        ]
    return found


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_no_number_option_takes_nan_or_an_infinity(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wait of nan seconds does not wait (a busy loop against DynamoDB), one of inf
    overflows: refused as any bad value, before anything is sent."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9")
    expected = {
        ("sweep", "--watch"),
        ("events", "follow", "--interval"),
        ("wordcount", "--fail-rate"),
        ("wordcount", "--timeout"),
        ("dashboard", "--count-every"),
        ("worker", "--shutdown-grace"),
        ("chain", "create", "--timeout"),
    }
    options = _float_options()
    assert expected <= {(*path, opt) for path, opt in options}
    for path, opt in options:
        result = run(*path, f"{opt}={value}")
        assert_usage_error(result, f"Invalid value for '{opt}'")
        assert "finite" in result.stderr or "range" in result.stderr, result.stderr


def test_a_wait_is_at_most_a_day() -> None:
    assert_usage_error(run("sweep", "--watch", "86401"), "Invalid value for '--watch'")


def test_no_command_prints_a_traceback_on_bad_input(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command (an endpoint with no server: test_unreachable_endpoint_is_one_line).

    A command given no endpoint goes to the environment's: here a loopback port that
    refuses, never AWS's regional endpoint (a test sends nothing off this machine).
    """
    nowhere = "http://127.0.0.1:9"
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", nowhere)
    leaves = _leaves()
    assert ("chain", "get") in leaves and ("wordcount",) in leaves
    for path in leaves:
        bad_inputs = [
            [*path] if path != ("local", "start") else [*path, "--port", "-1"],
            [*path, "--no-such-option"],
            ["--table", "", *path],
            ["--endpoint-url", "nowhere", *path],
            [*path, "x", "y", "z", "w"],
        ]
        if path[0] in ("table", "chain", "sweep"):
            bad_inputs.append([*path, "x", "--endpoint-url", nowhere, "--table", ""])
        for args in bad_inputs:
            result = run(*args)
            assert "Traceback" not in result.output, (args, result.output)
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                args,
                result.exception,
            )
            if result.exit_code not in (0, NOT_RUNNING):
                assert result.stderr.startswith(("error: ", "Aborted!")), (args, result.stderr)
                assert len(result.stderr.splitlines()) == 1, (args, result.stderr)


class _SlowTables:
    """Stands in for a DynamoDB client (no server) whose tables never settle: CreateTable
    and DeleteTable are taken, and the table stays CREATING, or DELETING, for good."""

    def __init__(self, name: str, status: str) -> None:
        self.status = status
        self.table = {**TableSpec(name).create_request(), "TableStatus": status}
        self.calls: list[str] = []

    def create_table(self, **request: object) -> None:
        self.calls.append("CreateTable")

    def delete_table(self, **request: object) -> None:
        self.calls.append("DeleteTable")

    def describe_table(self, **request: object) -> dict[str, object]:
        return {"Table": self.table}

    def update_time_to_live(self, **request: object) -> None:
        self.calls.append("UpdateTimeToLive")
        if self.status == "CREATING":  # as AWS answers it
            error = {"Code": "ResourceInUseException", "Message": "Table is being created"}
            raise ClientError({"Error": error}, "UpdateTimeToLive")  # type: ignore[arg-type]

    def describe_time_to_live(self, **request: object) -> dict[str, object]:
        return {"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}}


class _Clock:
    """``time`` for a module that waits: each reading a minute later, no real sleep."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 60.0
        return self.now

    def sleep(self, seconds: float) -> None:
        pass


@pytest.mark.parametrize(
    ("verb", "status", "says"),
    [
        (
            ("table", "create"),
            "CREATING",
            "TableWaitTimeout: table slow-table is still CREATING after 60 s; TTL is not on yet:"
            " once it is ACTIVE, run `xor-ack --table slow-table table upgrade`",
        ),
        (
            ("table", "delete", "--yes"),
            "DELETING",
            "TableWaitTimeout: table slow-table is still DELETING after 60 s; DynamoDB goes on"
            " deleting it",
        ),
    ],
)
def test_a_table_slow_to_settle_is_one_typed_line_that_says_what_is_left(
    monkeypatch: pytest.MonkeyPatch, verb: tuple[str, ...], status: str, says: str
) -> None:
    """AWS may take longer than the 60 s the commands wait: that is no bug of theirs."""
    slow = _SlowTables("slow-table", status)
    monkeypatch.setattr(cli_module.Settings, "client", lambda self: slow)
    monkeypatch.setattr(table_module, "time", _Clock())
    monkeypatch.setattr(ownership_module, "time", _Clock())
    result = run("--table", "slow-table", *verb)
    assert_user_error(result, says)
    assert "UpdateTimeToLive" not in slow.calls  # never sent to a table that is not ACTIVE


def test_table_create_no_wait_says_ttl_is_left_for_later_instead_of_failing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AWS refuses UpdateTimeToLive while a table is CREATING: `table create --no-wait`
    made the table, then failed on TTL; it now says what is left to do, and exits 0."""
    slow = _SlowTables("new-table", "CREATING")
    monkeypatch.setattr(cli_module.Settings, "client", lambda self: slow)
    result = run("--table", "new-table", "table", "create", "--no-wait")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "table new-table created: key tagID (S), PAY_PER_REQUEST, stream NEW_AND_OLD_IMAGES, "
        "indexes xor_ack_open, xor_ack_failed\n"
    )
    assert result.stderr == (
        f"warning: table new-table is not ACTIVE yet, so TTL on {TTL_ATTRIBUTE} is not on: "
        "once it is, run `xor-ack --table new-table table upgrade`\n"
    )
    assert slow.calls == ["CreateTable"]  # no UpdateTimeToLive for AWS to refuse


def test_table_create_no_wait_turns_ttl_on_a_table_active_at_once(endpoint: str) -> None:
    name = _table()
    base = ("--endpoint-url", endpoint, "--table", name)
    created = run(*base, "table", "create", "--no-wait")
    assert created.exit_code == 0, created.output
    assert f"TTL on {TTL_ATTRIBUTE}, " in created.stdout and created.stderr == ""
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    assert describe_table(client, name).ttl_status in ("ENABLED", "ENABLING")
    assert run(*base, "table", "delete", "--yes").exit_code == 0


def test_an_unexpected_error_is_one_line_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("broken\nin two lines")

    monkeypatch.setattr(local_verbs, "server_status", broken)
    result = run("local", "status")
    assert result.exit_code == 1
    assert result.stderr == (
        "error: unexpected RuntimeError: broken; in two lines (a bug: please report it; "
        "XOR_ACK_DEBUG=1 shows the traceback)\n"
    )
    monkeypatch.setenv("XOR_ACK_DEBUG", "1")
    assert isinstance(run("local", "status").exception, RuntimeError)


def test_every_verb_shows_an_example_and_the_option_rule() -> None:
    verbs = [
        path for path in _leaves() if path[0] in ("table", "local", "chain", "events", "sweep")
    ]
    assert len(verbs) == 18
    for path in verbs:
        text = run(*path, "--help").output
        example = rf"^  Example:\n    .*xor-ack {' '.join(path)}"
        assert re.search(example, text, re.MULTILINE), text
        assert "given in both places, the one after the command wins" in text, text


def test_table_output_shows_an_odd_partition_key_on_one_line(endpoint: str) -> None:
    """A partition key with a newline or an escape printed as it is: two lines, or an
    escape sent to the terminal, and describe's hint named another key."""
    name = _table()
    key = "key\n\x1b[2Jx"
    base = ("--endpoint-url", endpoint, "--table", name)
    created = run(*base, "--partition-key", key, "table", "create")
    assert created.exit_code == 0, created.output
    assert created.stdout.splitlines()[0].startswith(
        f"table {name} created: key 'key\\n\\x1b[2Jx' (S), "
    )
    again = run(*base, "--partition-key", key, "table", "create")
    assert again.stdout == f"table {name} already exists, checked: key 'key\\n\\x1b[2Jx' (S)\n"
    described = run(*base, "table", "describe")
    assert described.exit_code == 0, described.output
    assert "key:                 'key\\n\\x1b[2Jx' (S)\n" in described.stdout
    warning = [line for line in described.stderr.splitlines() if "partition key" in line]
    assert warning == [
        "warning: the partition key is 'key\\n\\x1b[2Jx', not tagID: "
        "pass --partition-key $'key\\n\\x1b[2Jx'"
    ]
    assert "\x1b" not in described.output + created.output + again.output
    assert run(*base, "--partition-key", key, "table", "delete", "--yes").exit_code == 0


def test_local_output_shows_a_data_dir_with_a_newline_on_one_line(
    run_dir: Path, tmp_path: Path
) -> None:
    """`local start` and `local status` printed --data-dir as it is: a newline in it split
    the line (`status` is read by scripts, one `key: value` per line)."""
    data = tmp_path / "da\nta"
    started = run("local", "start", "--backend", "dynamodb-local", "--data-dir", str(data))
    assert started.exit_code == 0, started.output
    try:
        (said,) = [line for line in started.stderr.splitlines() if "running at" in line]
        assert f"data in {str(data)!r}" in said, said
        status = run("local", "status")
        assert status.exit_code == 0, status.output
        lines = status.stdout.splitlines()
        assert len(lines) == 7 and all(": " in line for line in lines), lines
        assert f"data:      {str(data)!r}" in lines
    finally:
        assert run("local", "stop").exit_code == 0


@pytest.mark.parametrize(
    ("variable", "value"), [("XOR_ACK_TABLE", "ab"), ("XOR_ACK_PARTITION_KEY", "stamp")]
)
def test_a_bad_value_in_the_environment_is_named_as_that_variable(
    variable: str, value: str, tmp_path: Path
) -> None:
    """Every command reads XOR_ACK_TABLE and XOR_ACK_PARTITION_KEY; a bad one there was
    told as a bad '--table' the user never passed.  It names the variable and how to mend."""
    env = {variable: value, "XOR_ACK_RUN_DIR": str(tmp_path)}
    result = CliRunner().invoke(cli, ["local", "status"], env=env)
    assert result.exit_code == 2
    assert f"Invalid value for {variable} (from the environment)" in result.output
    assert f"unset {variable} or export a valid one" in result.output
    assert "--table" not in result.output.split("(see")[0]
    given = CliRunner().invoke(cli, ["--table", "ab", "local", "status"], env={})
    assert given.exit_code == 2 and "Invalid value for '--table'" in given.output
