"""Tables the project did not make are left as they are: `xor-ack table ...` and the library's
table functions delete or change only a table that shows it is a chains table (create on an
existing table changes nothing at all)."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest

from tests.conftest import misshapen_table
from xor_ack_dynamodb.dynamodb.upgrade import upgrade_table
from xor_ack_dynamodb.table import NotAChainsTable, TableSpec, create_table, delete_table

from .test_cli import assert_user_error, plain_table, run


@pytest.fixture(params=["moto", "ddblocal"])
def endpoint(request: pytest.FixtureRequest) -> str:
    name = "moto_endpoint" if request.param == "moto" else "ddb_local_endpoint"
    value: str = request.getfixturevalue(name)
    return value


def _client(endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")


def users_table(client: Any, **extra: Any) -> str:
    """A user's table, key `id` (S), with one item: nothing the project made."""
    name = plain_table(client, "id", **extra)
    client.put_item(TableName=name, Item={"id": {"S": "ada"}, "expires_at": {"N": "1"}})
    return name


def _still_there(client: Any, name: str) -> None:
    assert client.describe_table(TableName=name)["Table"]["TableStatus"] == "ACTIVE"
    assert client.get_item(TableName=name, Key={"id": {"S": "ada"}})["Item"]["expires_at"] == {
        "N": "1"
    }


def test_table_delete_refuses_a_users_table_and_deletes_nothing(endpoint: str) -> None:
    client = _client(endpoint)
    name = users_table(client)
    try:
        refused = run("--endpoint-url", endpoint, "--table", name, "table", "delete", "--yes")
        assert_user_error(
            refused,
            f"NotAChainsTable: table {name} is not a chains table as `xor-ack table create` "
            "makes it (it has no index xor_ack_open and no index xor_ack_failed); nothing was "
            "deleted",
        )
        assert f"aws dynamodb delete-table --table-name {name}" in refused.stderr
        assert refused.stdout == ""
        asked = run("--endpoint-url", endpoint, "--table", name, "table", "delete", input="y\n")
        assert_user_error(asked, "NotAChainsTable")
        assert "Delete table" not in asked.output  # refused before asking
        with pytest.raises(NotAChainsTable, match="nothing was deleted"):
            delete_table(client, name)
        _still_there(client, name)
    finally:
        client.delete_table(TableName=name)


def test_delete_table_refuses_a_table_keyed_otherwise_even_with_the_indexes(
    moto_endpoint: str,
) -> None:
    """The inventory's index names on a table with a sort key: not a table the project made."""
    client = _client(moto_endpoint)
    spec = TableSpec(name=f"sorted-{uuid.uuid4().hex[:10]}")
    request = spec.create_request()
    request["AttributeDefinitions"].append({"AttributeName": "at", "AttributeType": "N"})
    request["KeySchema"].append({"AttributeName": "at", "KeyType": "RANGE"})
    client.create_table(**request)
    try:
        with pytest.raises(NotAChainsTable, match=r"its key is tagID \(HASH\), at \(RANGE\)"):
            delete_table(client, spec.name)
        assert client.describe_table(TableName=spec.name)["Table"]["TableName"] == spec.name
    finally:
        client.delete_table(TableName=spec.name)


def test_a_chains_table_from_before_the_inventory_is_deleted_once_upgraded(
    moto_endpoint: str,
) -> None:
    """On moto: DynamoDB Local's upgrades are test_upgrade's (on a server of its own)."""
    endpoint = moto_endpoint
    client = _client(endpoint)
    spec = TableSpec(name=f"old-{uuid.uuid4().hex[:10]}")
    client.create_table(  # as releases before the inventory made it
        TableName=spec.name,
        AttributeDefinitions=[{"AttributeName": spec.partition_key, "AttributeType": "S"}],
        KeySchema=spec.key_schema(),
        BillingMode="PAY_PER_REQUEST",
    )
    client.update_time_to_live(**spec.ttl_request())  # as those releases turned it on
    base = ("--endpoint-url", endpoint, "--table", spec.name)
    try:
        refused = run(*base, "table", "delete", "--yes")
        assert_user_error(refused, f"NotAChainsTable: table {spec.name} is not a chains table")
        assert f"run `xor-ack --table {spec.name} table upgrade` first" in refused.stderr
        assert run(*base, "table", "upgrade", "--timeout", "60").exit_code == 0
        deleted = run(*base, "table", "delete", "--yes")
        assert deleted.exit_code == 0, deleted.output
        assert deleted.stdout == f"table {spec.name} deleted\n"
    finally:
        if spec.name in client.list_tables()["TableNames"]:
            client.delete_table(TableName=spec.name)


def _unchanged(client: Any, name: str) -> None:
    """The users table as users_table made it: no TTL, stream or index was added."""
    table = client.describe_table(TableName=name)["Table"]
    ttl = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "DISABLED"
    assert not (table.get("StreamSpecification") or {}).get("StreamEnabled")
    assert not table.get("GlobalSecondaryIndexes")
    assert table["AttributeDefinitions"] == [{"AttributeName": "id", "AttributeType": "S"}]
    _still_there(client, name)


def test_table_create_on_a_users_table_changes_nothing(endpoint: str) -> None:
    client = _client(endpoint)
    name = users_table(client)
    base = ("--endpoint-url", endpoint, "--table", name)
    try:
        hinted = run(*base, "table", "create")
        assert_user_error(
            hinted,
            f"TableMismatch: table {name} has key id (HASH), expected tagID (HASH) only: name "
            "the chains table (--table)",
        )
        refused = run(*base, "--partition-key", "id", "table", "create")
        assert_user_error(
            refused,
            f"NotAChainsTable: table {name} does not look like a chains table (no inventory "
            "index, and items that are not chains (no binary stamp and number version) nor a "
            "fleet's markers); nothing was changed",
        )
        assert refused.stdout == ""
        with pytest.raises(NotAChainsTable, match="nothing was changed"):
            create_table(client, TableSpec(name=name, partition_key="id"))
        _unchanged(client, name)
    finally:
        client.delete_table(TableName=name)


def test_table_upgrade_refuses_a_users_table_before_any_change(endpoint: str) -> None:
    client = _client(endpoint)
    name = users_table(client)
    base = ("--endpoint-url", endpoint, "--table", name, "--partition-key", "id")
    try:
        refused = run(*base, "table", "upgrade", "--timeout", "60")
        assert_user_error(
            refused, f"NotAChainsTable: table {name} does not look like a chains table"
        )
        assert refused.stdout == ""
        with pytest.raises(NotAChainsTable):
            upgrade_table(client, TableSpec(name=name, partition_key="id"), timeout=60)
        _unchanged(client, name)
    finally:
        client.delete_table(TableName=name)


def test_an_empty_table_without_ttl_is_not_taken_for_a_chains_table(moto_endpoint: str) -> None:
    client = _client(moto_endpoint)
    name = users_table(client)
    client.delete_item(TableName=name, Key={"id": {"S": "ada"}})
    spec = TableSpec(name=name, partition_key="id")
    try:
        with pytest.raises(NotAChainsTable, match="no item and no TTL on expires_at") as raised:
            upgrade_table(client, spec, timeout=60)
        assert "aws dynamodb update-time-to-live" in str(raised.value)  # if it is one
        table = client.describe_table(TableName=name)["Table"]
        assert not table.get("GlobalSecondaryIndexes")
        assert not (table.get("StreamSpecification") or {}).get("StreamEnabled")
        ttl = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        assert ttl["TimeToLiveStatus"] == "DISABLED"
    finally:
        client.delete_table(TableName=name)


@pytest.mark.parametrize("version", [False, True], ids=["plain", "with-a-version-number"])
def test_chain_delete_leaves_another_programs_item_alone(
    ddb_local_endpoint: str, version: bool
) -> None:
    """A user's table keyed `tagID` (the chains' default key) holds an item of theirs.
    `chain show` refuses it, saying it is another program's (it told to remove it with
    `chain delete`, which refuses it); `chain delete` refuses it too (NotAChain) and the
    item stays.  It used to be deleted, and then, with
    a `version` number (optimistic locking, as many ORMs keep), it still was."""
    client = _client(ddb_local_endpoint)
    name = plain_table(client, "tagID")
    theirs = {"tagID": {"S": "ada"}, "name": {"S": "Ada Lovelace"}}
    if version:
        theirs["version"] = {"N": "7"}
    client.put_item(TableName=name, Item=theirs)
    try:
        base = ("--endpoint-url", ddb_local_endpoint, "--table", name)
        shown = run(*base, "chain", "show", "ada")
        # Not "remove it (`xor-ack chain delete ada`)": that command refuses it.
        assert_user_error(shown, 'CorruptItem: "ada": the stored item is not a chain: it holds')
        assert "another program wrote it" in shown.stderr and "--table" in shown.stderr
        assert "chain delete" not in shown.stderr and "delete(tag)" not in shown.stderr
        refused = run(*base, "chain", "delete", "ada")
        assert_user_error(refused, 'NotAChain: "ada": the stored item holds none of a chain')
        assert client.get_item(TableName=name, Key={"tagID": {"S": "ada"}})["Item"] == theirs
    finally:
        client.delete_table(TableName=name)


def test_a_key_named_with_braces_is_named_as_it_is_in_both_words() -> None:
    """The refusal was one text with a ``{}`` slot filled by ``str.replace``: a key
    attribute named ``{}`` (DynamoDB takes any name) took the option in its place."""
    from xor_ack_dynamodb.dynamodb.ownership import check_chains_table

    table = {
        "TableName": "users-braces",
        "KeySchema": [
            {"AttributeName": "{}", "KeyType": "HASH"},
            {"AttributeName": "at", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": "{}", "AttributeType": "S"},
            {"AttributeName": "at", "AttributeType": "S"},
        ],
    }
    with pytest.raises(NotAChainsTable) as raised:
        check_chains_table(None, table, ttl={})
    said, cli = str(raised.value), raised.value.cli_message
    assert cli is not None
    assert "(its key is {} (HASH), at (RANGE))" in said and "(its key is {} (HASH)" in cli
    assert "Name the chains table (table=...)." in said
    assert "Name the chains table (--table)." in cli


@pytest.mark.parametrize(
    ("shape", "key_line"),
    [("key-a-number", "tagID (N)"), ("with-a-sort-key", "tagID (S), sort key at (N)")],
)
def test_table_describe_of_a_table_no_upgrade_can_make_a_chains_table(
    ddb_local_endpoint: str, shape: str, key_line: str
) -> None:
    """The chains' key name, but a number, or with a sort key: `table describe` showed the
    key without its sort key, warned of nothing about it, and advised `xor-ack table
    upgrade`, which then refused the table (TableMismatch)."""
    with misshapen_table(ddb_local_endpoint, shape) as name:
        base = ("--endpoint-url", ddb_local_endpoint, "--table", name)
        described = run(*base, "table", "describe")
        assert described.exit_code == 0, described.output
        assert f"key: {key_line}" in " ".join(described.stdout.split()), described.stdout
        assert "cannot hold chains" in described.stderr, described.stderr
        assert "table upgrade" not in described.stderr, described.stderr
        refused = run(*base, "table", "upgrade")
        assert_user_error(refused, "TableMismatch")  # what the advice led to
