"""Settings that point nowhere useful: an endpoint that is no DynamoDB, one in the
environment that is no URL, a cache or run folder that cannot be one.  Each is one typed
line (no "unexpected ... a bug"), and nothing is said done that was not."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from xor_ack_dynamodb.cli import NOT_RUNNING, cli
from xor_ack_dynamodb.local import LocalDynamoDB, LocalDynamoDBError


def run(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


def _one_typed_line(result: Result) -> str:
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    # the CLI's own words for an error it did not foresee: "unexpected X ... (a bug ...)"
    assert "unexpected" not in lines[0] and "a bug" not in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "verb",
    [
        ("table", "describe"),
        ("table", "create"),
        ("table", "upgrade", "--timeout", "5"),
        ("table", "delete", "--yes"),
    ],
)
def test_table_commands_on_an_endpoint_that_is_not_dynamodb_say_so_not_a_bug(
    not_dynamodb: str, verb: tuple[str, ...]
) -> None:
    """`--endpoint-url` pointing at a web server that answers 200 with HTML: each `table`
    verb said `error: unexpected KeyError: 'Table' (a bug: please report it ...)`."""
    result = run("--endpoint-url", not_dynamodb, "--table", "review-t", *verb)
    assert result.exit_code == 1, result.output
    line = _one_typed_line(result)
    assert not_dynamodb in line, line  # names the endpoint that does not answer as DynamoDB


def test_chain_create_on_an_endpoint_that_is_not_dynamodb_does_not_say_created(
    not_dynamodb: str,
) -> None:
    """The same web server: `chain create` printed `job-1 created, state 0102` and exited 0,
    though no chain exists anywhere."""
    result = run(
        "--endpoint-url", not_dynamodb, "--table", "review-t", "chain", "create", "job-1", "0102"
    )
    assert result.exit_code != 0, result.output
    assert "created" not in result.stdout
    _one_typed_line(result)


@pytest.mark.parametrize("value", ["nowhere", "http://127.0.0.1:99999"])
def test_an_invalid_endpoint_in_the_environment_is_named_not_called_a_bug(value: str) -> None:
    """`--endpoint-url nowhere` is a usage error naming the option; the same value in
    AWS_ENDPOINT_URL_DYNAMODB got `error: unexpected ValueError: Invalid endpoint: nowhere
    (a bug: please report it ...)` (and, with no region set, a RegionMissing that sends the
    user after the wrong setting)."""
    env = {"AWS_ENDPOINT_URL_DYNAMODB": value, "AWS_REGION": "us-east-1"}
    result = run("--table", "review-t", "table", "describe", env=env)
    assert result.exit_code in (1, 2), result.output
    line = _one_typed_line(result)
    assert "AWS_ENDPOINT_URL_DYNAMODB" in line, line

    no_region = {"AWS_ENDPOINT_URL_DYNAMODB": value, "AWS_REGION": None, "AWS_DEFAULT_REGION": None}
    result = run("--table", "review-t", "table", "describe", env=no_region)
    line = _one_typed_line(result)
    assert "AWS_ENDPOINT_URL_DYNAMODB" in line, line


def test_a_cache_dir_that_cannot_be_made_is_one_typed_line(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`$XOR_ACK_CACHE_DIR` under a file: `local start` said `error: unexpected
    NotADirectoryError: ... (a bug: please report it ...)`, and `LocalDynamoDB` raised the
    bare OSError, where a run dir that cannot be made is a LocalDynamoDBError naming it."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    cache = a_file / "cache"
    monkeypatch.setenv("XOR_ACK_CACHE_DIR", str(cache))

    result = run("local", "start", "--backend", "dynamodb-local")
    assert result.exit_code == 1, result.output
    line = _one_typed_line(result)
    assert str(cache) in line, line
    assert result.stdout == ""  # no export line: nothing started

    with pytest.raises(LocalDynamoDBError, match="XOR_ACK_CACHE_DIR"):
        LocalDynamoDB(backend="dynamodb-local").start()


@pytest.mark.parametrize("verb", ["status", "stop"])
def test_local_status_and_stop_with_a_run_dir_that_is_a_file_are_not_called_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verb: str
) -> None:
    """`$XOR_ACK_RUN_DIR` naming a file (a typo): `local start` refuses it naming the folder,
    but `local status` / `local stop` said `error: unexpected NotADirectoryError: ... (a bug:
    please report it ...)`.  No server can be recorded there, so: none runs (status exit 3,
    stop exit 0), or one typed line naming the folder."""
    a_file = tmp_path / "run-is-a-file"
    a_file.write_text("not a folder")
    monkeypatch.setenv("XOR_ACK_RUN_DIR", str(a_file))
    result = run("local", verb)
    assert "Traceback" not in result.output
    assert "unexpected" not in result.output and "a bug" not in result.output, result.output
    if result.exit_code not in (0, NOT_RUNNING):
        assert str(a_file) in _one_typed_line(result)


async def test_the_library_refuses_an_endpoint_that_is_not_dynamodb(not_dynamodb: str) -> None:
    """botocore read the page as an empty answer: the create counted as landed."""
    from xor_ack_dynamodb import SyncXorAckDynamoDB, XorAckDynamoDB
    from xor_ack_dynamodb.errors import NotDynamoDB

    async with XorAckDynamoDB.connect(table="t", endpoint_url=not_dynamodb) as ack:
        with pytest.raises(NotDynamoDB, match="not DynamoDB") as caught:
            await ack.create("job-1", b"\x01\x02")
    assert caught.value.endpoint.startswith(not_dynamodb) and caught.value.status == 200
    with (
        SyncXorAckDynamoDB.connect(table="t", endpoint_url=not_dynamodb) as sync,
        pytest.raises(NotDynamoDB),
    ):
        sync.get("job-1")
