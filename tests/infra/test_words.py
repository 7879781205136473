"""Each surface's words: an error says what to do in the words of the API its caller used
(the command's options for ``xor-ack``, keyword arguments for Python), and a bad argument
is an ``XorAckError``, never a bare ``AttributeError``, ``TypeError`` or botocore error.

Each message here named the other surface's words (``partition_key=`` in a command's
line, ``--partition-key`` in a Python error), or the argument escaped untyped.
"""

from __future__ import annotations

import re
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result

from xor_ack_dynamodb import SyncXorAckDynamoDB
from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.errors import InvalidArgument, XorAckError
from xor_ack_dynamodb.table import TableSpec, create_table

from .test_cli import assert_user_error, plain_table

# A Python keyword argument as a message would name it: `partition_key=`, `table=...`,
# `endpoint_url=`, or a Python function/method such as `upgrade_table` or `get()`.
PYTHON_WORDS = re.compile(
    r"\b(partition_key=|table=|endpoint_url=|region_name=|upgrade_table\b|get\(\))"
)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def raw_client(endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")


def assert_cli_words(result: Result, code: str) -> None:
    assert_user_error(result, code)  # one `error:` line, exit 1, no traceback
    line = result.stderr.strip()
    assert not PYTHON_WORDS.search(line), f"a CLI message names Python words: {line}"


def _one_chain(endpoint: str, table: TableSpec) -> None:
    """An open chain, so that a listing meets an entry (an empty table tells no key)."""
    made = run("chain", "create", "one", "--endpoint-url", endpoint, "--table", table.name)
    assert made.exit_code == 0, made.output


# -- CLI messages that name Python keyword arguments / functions ------------------------


def test_cli_table_mismatch_names_no_python_keyword(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    # Seen: "pass partition_key='tagID' (--partition-key tagID, ...)"
    _one_chain(ddb_local_endpoint, ddb_table)
    result = run(
        "chain",
        "list",
        "--status",
        "open",
        "--endpoint-url",
        ddb_local_endpoint,
        "--table",
        ddb_table.name,
        "--partition-key",
        "pk",
    )
    assert_cli_words(result, "TableMismatch")


def test_cli_not_a_chains_table_names_no_python_keyword(ddb_local_endpoint: str) -> None:
    # Seen: "Name the chains table (--table / table=...)"
    name = plain_table(raw_client(ddb_local_endpoint), "tagID", "plain")
    result = run("table", "create", "--endpoint-url", ddb_local_endpoint, "--table", name)
    assert_cli_words(result, "NotAChainsTable")


def test_cli_inventory_missing_names_no_python_function(ddb_local_endpoint: str) -> None:
    # Seen: "Add the indexes with `xor-ack --table T table upgrade` (upgrade_table)"
    name = plain_table(raw_client(ddb_local_endpoint), "tagID", "plain")
    result = run("chain", "list", "--endpoint-url", ddb_local_endpoint, "--table", name)
    assert_cli_words(result, "InventoryMissing")


def test_cli_not_dynamodb_names_no_python_keyword(not_dynamodb: str) -> None:
    # Seen: "check the endpoint URL (--endpoint-url, endpoint_url=, AWS_ENDPOINT_URL_DYNAMODB)"
    result = run("chain", "show", "x", "--endpoint-url", not_dynamodb)
    assert_cli_words(result, "NotDynamoDB")


# -- Python messages that name CLI flags ---------------------------------------------------


def test_python_table_mismatch_names_no_cli_flag(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    _one_chain(ddb_local_endpoint, ddb_table)
    with (
        SyncXorAckDynamoDB.connect(
            table=ddb_table.name,
            partition_key="pk",
            endpoint_url=ddb_local_endpoint,
            region_name="us-east-1",
        ) as ack,
        pytest.raises(XorAckError) as caught,
    ):
        list(ack.list_chains("open"))
    assert type(caught.value).__name__ == "TableMismatch"
    assert "--partition-key" not in str(caught.value), str(caught.value)


def test_python_not_dynamodb_names_no_cli_flag(not_dynamodb: str) -> None:
    with (
        SyncXorAckDynamoDB.connect(
            table="t-x", endpoint_url=not_dynamodb, region_name="us-east-1"
        ) as ack,
        pytest.raises(XorAckError) as caught,
    ):
        ack.get("x")
    assert type(caught.value).__name__ == "NotDynamoDB"
    assert "--endpoint-url" not in str(caught.value), str(caught.value)


def test_an_unsettled_write_tells_the_command_what_the_command_can_do() -> None:
    """It said "send a stamp again with the same token ... or get() the chain" to `chain
    create`, which has no token, in Python's words."""
    from xor_ack_dynamodb.cli.errors import explain
    from xor_ack_dynamodb.errors import UnsettledWrite

    unsettled = UnsettledWrite("job-1", 16)
    said = explain(unsettled)
    assert said is not None and not PYTHON_WORDS.search(said), said
    assert "`xor-ack chain show`" in said and "--token" in said
    assert "get() the chain" in str(unsettled)  # Python's words stay Python's


# -- Bad Python arguments that escape as raw, untyped errors ---------------------------------


@pytest.mark.parametrize("region", ["bad region", 5])
def test_connect_refuses_a_bad_region_name_with_a_typed_error(
    ddb_local_endpoint: str, region: Any
) -> None:
    # Seen: botocore InvalidRegionError ("bad region"), builtins TypeError (5); endpoint_url
    # of the same kind is refused with InvalidArgument, and the CLI refuses --region.
    with (
        pytest.raises(InvalidArgument, match="region_name"),
        SyncXorAckDynamoDB.connect(table="t", endpoint_url=ddb_local_endpoint, region_name=region),
    ):
        pass


@pytest.mark.parametrize("client", [None, "dynamodb"])
def test_a_client_that_is_no_boto3_client_is_refused_when_the_tracker_is_made(client: Any) -> None:
    # Seen: accepted; every later call raises AttributeError ('NoneType' has no 'get_item').
    with pytest.raises(InvalidArgument, match="client must be a boto3 DynamoDB client"):
        SyncXorAckDynamoDB(client, table="t")


def test_create_table_of_a_name_instead_of_a_spec_is_a_typed_error(ddb_local_endpoint: str) -> None:
    # Seen: AttributeError: 'str' object has no attribute 'create_request'
    with pytest.raises(InvalidArgument, match=r"TableSpec\(name='xor-ack-chains'\)"):
        create_table(raw_client(ddb_local_endpoint), "xor-ack-chains")  # type: ignore[arg-type]
