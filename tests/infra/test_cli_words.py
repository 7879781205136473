"""What the chain verbs say when they refuse: in the command's words, at the right exit code."""

from __future__ import annotations

import json
import uuid

import boto3

from xor_ack_dynamodb.cli.options import MAX_DEADLINE
from xor_ack_dynamodb.dynamodb._core.validate import MAX_TIMEOUT
from xor_ack_dynamodb.table import TableSpec

from .test_cli import assert_usage_error, assert_user_error, run


def test_touch_of_a_chain_without_idle_timeout_names_the_option_to_pass(
    moto_table: TableSpec, moto_endpoint: str
) -> None:
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    created = run(*base, "chain", "create", "no-idle", "0102", "--timeout", "600")
    assert created.exit_code == 0
    result = run(*base, "chain", "touch", "no-idle")
    assert_user_error(result, "InvalidTimeout:")
    assert "--timeout SECONDS" in result.stderr
    assert "touch(" not in result.stderr and "timeout=" not in result.stderr


def test_a_deadline_over_a_year_is_a_usage_error_and_help_shows_the_year(
    moto_table: TableSpec, moto_endpoint: str
) -> None:
    """The library takes a timeout of at most a year; --help said 100 years (the --ttl's
    limit), and a value between the two was refused only after the command ran (exit 1)."""
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    assert run(*base, "chain", "create", "kept", "0102").exit_code == 0
    year_and_a_day = str(367 * 86_400)
    for args in [
        ("chain", "create", "late", "0102", "--timeout", year_and_a_day),
        ("chain", "create", "late", "0102", "--idle-timeout", year_and_a_day),
        ("chain", "touch", "kept", "--timeout", year_and_a_day),
        ("submit", "late", "--queue-url", "http://127.0.0.1:9/0/q", "--timeout", year_and_a_day),
        ("submit", "late", "--queue-url", "http://127.0.0.1:9/0/q", "--idle-timeout", "4e7"),
    ]:
        result = run(*base, *args)
        assert_usage_error(result, f"Invalid value for '{args[-2]}'")
        assert "31622400" in result.stderr, result.stderr
    assert run(*base, "chain", "get", "late").exit_code == 1  # nothing created
    for verb, options in [
        (("chain", "create"), ("--timeout", "--idle-timeout")),
        (("chain", "touch"), ("--timeout",)),
        (("submit",), ("--timeout", "--idle-timeout")),
    ]:
        shown = " ".join(run(*verb, "--help").output.split())
        for option in options:
            its_help = shown.split(f"{option} FLOAT RANGE")[-1].split(" --")[0]
            assert "[0.001<=x<=31622400.0]" in its_help, (verb, option, its_help)
    assert run(*base, "chain", "create", "long", "0102", "--timeout", "31622400").exit_code == 0
    assert MAX_DEADLINE == MAX_TIMEOUT  # the options' limit is the library's


def test_a_table_keyed_otherwise_says_to_pass_its_key(backend: tuple[str, TableSpec]) -> None:
    """DynamoDB's answer ("One of the required keys was not given a value", or "The provided
    key element does not match the schema") did not say the table has another key; the
    client now tells it as ``TableMismatch``, in the options' words."""
    endpoint, _ = backend
    name = f"keyed-{uuid.uuid4().hex[:10]}"
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    base = ("--endpoint-url", endpoint, "--table", name)
    for verb in [("get", "x"), ("create", "x", "0102"), ("stamp", "x", "0102"), ("delete", "x")]:
        result = run(*base, "chain", *verb)
        assert_user_error(result, f"TableMismatch: table {name}'s key is not tagID (type S) alone")
        assert "--partition-key" in result.stderr, result.stderr
        assert "xor-ack table describe" in result.stderr, result.stderr
    assert client.scan(TableName=name)["Count"] == 0


def test_a_stamp_refused_says_what_to_do(moto_table: TableSpec, moto_endpoint: str) -> None:
    """The library's bare words ("Buffer is all zeros", "Buffer lengths are not equal",
    "does not exist" of a chain `chain show` shows acked) said neither why nor what next."""
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    assert run(*base, "chain", "create", "two", "0102").exit_code == 0
    zeros = run(*base, "chain", "stamp", "two", "0000")
    assert_user_error(zeros, "ZeroBufferNoOp: ")
    assert "non-zero" in zeros.stderr
    assert_user_error(run(*base, "chain", "create", "zero", "0000"), "ZeroBufferNoOp: ")
    longer = run(*base, "chain", "stamp", "two", "010203")
    assert_user_error(longer, "BufferLengthsUnequal: ")
    assert "2 bytes" in longer.stderr and "3" in longer.stderr, longer.stderr
    assert run(*base, "chain", "stamp", "two", "0102").output == "two state 0000 (acked)\n"
    assert "state:   acked" in run(*base, "chain", "show", "two").output
    for verb in [("stamp", "two", "0102"), ("touch", "two", "--timeout", "5")]:
        again = run(*base, "chain", *verb)
        assert_user_error(again, 'TagNotFound: "two"')
        assert "was acked" in again.stderr and "xor-ack chain show" in again.stderr


def test_touch_of_a_chain_without_a_deadline_says_nothing_moved(
    moto_table: TableSpec, moto_endpoint: str
) -> None:
    """It printed "TAG deadline -", as if --timeout had been applied; without --timeout it
    failed (exit 1) telling to pass --timeout, which then moved nothing."""
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    assert run(*base, "chain", "create", "open-ended", "0102").exit_code == 0
    for given in (("--timeout", "100"), ()):
        result = run(*base, "chain", "touch", "open-ended", *given)
        assert result.exit_code == 0, result.output
        assert result.output == (
            "open-ended has no deadline (created without --timeout or --idle-timeout): "
            "nothing moved\n"
        )
    shown = json.loads(run(*base, "chain", "show", "open-ended", "--json").output)
    assert shown["deadline"] is None


def test_an_empty_reason_or_token_is_a_usage_error_in_the_options_words(
    moto_table: TableSpec, moto_endpoint: str
) -> None:
    """They were exit 1 in Python's words ("a non-empty str, not ''", "not b''"), though an
    empty option is a usage error (exit 2) as an empty tag or stamp is."""
    base = ("--endpoint-url", moto_endpoint, "--table", moto_table.name)
    assert run(*base, "chain", "create", "kept-open", "0102").exit_code == 0
    for args, option in [
        (("fail", "kept-open", "--reason", ""), "--reason"),
        (("fail", "kept-open", "--reason", "timeout"), "--reason"),  # the deadline's reason
        (("stamp", "kept-open", "0101", "--token", ""), "--token"),
    ]:
        result = run(*base, "chain", *args)
        assert_usage_error(result, f"Invalid value for '{option}'")
        assert "str" not in result.stderr and "b''" not in result.stderr, result.stderr
    shown = json.loads(run(*base, "chain", "show", "kept-open", "--json").output)
    assert (shown["state"], shown["stamp"]) == ("pending", "0102")
