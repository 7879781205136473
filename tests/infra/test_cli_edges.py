"""The `xor-ack` verbs at their edges: an empty `--data-dir` or `XOR_ACK_TABLE` (a shell
variable not set) refused, not taken for the working directory or the default table; a
`submit` payload of NaN refused, a `--ttl` shorter than its `--timeout` a usage error before
the queue is asked; Ctrl-C during a sweep says what it failed, during `table delete`'s wait
that the table is being deleted; a group without its verb prints its help."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp
from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.cli import options as options_module
from xor_ack_dynamodb.table import TableSpec


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def _dynamodb(endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")


def _chains(endpoint: str, spec: TableSpec) -> SyncXorAckDynamoDB:
    return SyncXorAckDynamoDB(
        _dynamodb(endpoint), table=spec.name, partition_key=spec.partition_key
    )


def _hooked(monkeypatch: pytest.MonkeyPatch, hooks: dict[str, Any]) -> None:
    """The CLI's boto3 client with botocore ``before-call`` hooks (operation -> function)."""
    real = options_module.aws.sync_client

    def hooked(*args: Any, **kwargs: Any) -> Any:
        client = real(*args, **kwargs)
        for operation, hook in hooks.items():
            client.meta.events.register(f"before-call.dynamodb.{operation}", hook)
        return client

    monkeypatch.setattr(options_module.aws, "sync_client", hooked)


def test_local_start_with_an_empty_data_dir_is_a_usage_error(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--data-dir "$DATA"` with DATA unset is `--data-dir ""`: click makes it Path("."),
    and DynamoDB Local writes its database into whatever folder the shell is in. An
    empty value is a usage error everywhere else (docs/infra.md)."""
    cwd = tmp_path / "somewhere-of-the-users"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    result = run(
        "local", "start", "--backend", "dynamodb-local", "--data-dir", "", "--create-table"
    )
    written = sorted(p.name for p in cwd.iterdir())
    assert result.exit_code == 2, (result.output, written)
    assert written == []


def test_submit_refuses_a_payload_that_is_not_json_nan(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """PAYLOAD "must be JSON", but json.loads takes NaN / Infinity: the chain is created,
    the root message carries `"payload":NaN` (no JSON parser but Python's reads it) and
    `--json` prints text that is not JSON."""
    from tests.fleet.sqs_fixtures import make_queues

    work, _ = make_queues(moto_endpoint)
    args = ["--endpoint-url", ddb_local_endpoint, "--region", "us-east-1"]
    args += ["--table", ddb_table.name, "submit", "nan-job", "NaN", "--json"]
    args += ["--queue-url", work, "--sqs-endpoint-url", moto_endpoint]
    result = run(*args)

    def strict(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    printed_json = True
    try:
        json.loads(result.stdout, parse_constant=strict)
    except ValueError:
        printed_json = False
    assert result.exit_code == 2, (result.exit_code, printed_json, result.output)
    assert _chains(ddb_local_endpoint, ddb_table).get("nan-job") is None


def test_submit_with_a_ttl_shorter_than_its_timeout_is_a_usage_error(
    moto_endpoint: str, ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """`chain create --ttl 5 --timeout 600` is a usage error (exit 2, in the options'
    words); `submit` with the same options asks SQS first, then exits 1 with the
    library's words (`ttl`, not `--ttl`)."""
    from tests.fleet.sqs_fixtures import make_queues

    work, _ = make_queues(moto_endpoint)
    lifetime = ["--ttl", "5", "--timeout", "600"]
    base = ["--endpoint-url", ddb_local_endpoint, "--region", "us-east-1", "--table"]
    base.append(ddb_table.name)
    chain = run(*base, "chain", "create", "ttl-chain", *lifetime)
    assert chain.exit_code == 2, chain.output  # the reference: chain create
    args = [*base, "submit", "ttl-job", "1", *lifetime]
    args += ["--queue-url", work, "--sqs-endpoint-url", moto_endpoint]
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert "--ttl" in result.stderr, result.stderr


def test_a_sweep_interrupted_by_ctrl_c_says_which_chains_it_had_failed(
    ddb_local_endpoint: str, ddb_table: TableSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`xor-ack sweep` (no --watch) prints the chains it failed only once the whole sweep
    is over: Ctrl-C part way prints "Aborted!" alone, while chains are failed."""
    ack = _chains(ddb_local_endpoint, ddb_table)
    for n in range(3):
        ack.create(f"late-{n}", new_stamp(), timeout=0.2)
    time.sleep(0.6)
    updates = {"n": 0}

    def ctrl_c_at_the_second_write(**_: object) -> None:
        updates["n"] += 1
        if updates["n"] == 2:
            raise KeyboardInterrupt

    _hooked(monkeypatch, {"UpdateItem": ctrl_c_at_the_second_write})
    result = run("--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name, "sweep")
    failed = [state.tag for state in ack.list_chains("failed")]
    assert failed, "the sweep failed no chain before the interruption"
    assert all(tag in result.output for tag in failed), (failed, result.output)


def test_table_delete_interrupted_while_waiting_says_the_table_is_being_deleted(
    ddb_local_endpoint: str, ddb_table: TableSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while `table delete` waits for the table to go prints "Aborted!" (what a "no"
    at its prompt prints), but DeleteTable was sent: the table and its chains are gone."""
    sent = {"delete": False}

    def deleted(**_: object) -> None:
        sent["delete"] = True

    def ctrl_c_while_waiting(**_: object) -> None:
        if sent["delete"]:
            raise KeyboardInterrupt

    _hooked(monkeypatch, {"DeleteTable": deleted, "DescribeTable": ctrl_c_while_waiting})
    result = run(
        "--endpoint-url", ddb_local_endpoint, "--table", ddb_table.name, "table", "delete", "--yes"
    )
    gone = ddb_table.name not in _dynamodb(ddb_local_endpoint).list_tables()["TableNames"]
    assert gone
    assert "delet" in result.output, result.output  # "deleted" / "being deleted"


def test_an_empty_xor_ack_table_is_refused_not_taken_for_the_default_table(
    ddb_local_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`XOR_ACK_TABLE="$T" xor-ack table delete --yes` with T unset deletes the default
    table xor-ack-chains: an empty XOR_ACK_TABLE is taken as unset (click), while
    `--table ""` is a usage error and an invalid XOR_ACK_TABLE is named as the variable
    (and the Lambda sweeper refuses an empty one)."""
    sent: list[str] = []
    monkeypatch.setattr(
        options_module.Settings,
        "client",
        lambda self: sent.append(self.table) or _dynamodb(ddb_local_endpoint),
    )  # the verb asks for its client only once its options are taken
    monkeypatch.setenv("XOR_ACK_TABLE", "")
    result = run("--endpoint-url", ddb_local_endpoint, "table", "delete", "--yes")
    assert result.exit_code == 2, result.output
    assert "XOR_ACK_TABLE is set but empty" in result.output and sent == []


@pytest.mark.parametrize("words", [[], ["table"], ["local"], ["events"]])
def test_a_verb_group_without_its_verb_prints_its_help_not_one_mangled_error_line(
    words: list[str],
) -> None:
    """`xor-ack` alone (or `xor-ack table`): click 8.2+ raises NoArgsIsHelpError, a
    UsageError, and the root group flattens the whole help into one `error: Usage: ...;
    ...; Commands:; ...` line."""
    result = run(*words)
    assert not result.output.startswith("error:"), result.output[:200]
    assert "\nCommands:\n" in result.output, result.output[:200]
