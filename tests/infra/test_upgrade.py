"""`xor-ack table upgrade` / ``upgrade_table``: a table made before the stream and the
inventory indexes gets them, once; a table it cannot upgrade is refused with nothing changed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result

from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.dynamodb.item import FAILED_INDEX, OPEN_INDEX
from xor_ack_dynamodb.dynamodb.upgrade import Change, plan_upgrade, upgrade_table
from xor_ack_dynamodb.errors import StreamViewConflict, UpgradeTimeout
from xor_ack_dynamodb.local import LocalDynamoDB
from xor_ack_dynamodb.table import (
    INDEXES,
    STREAM_VIEW,
    TTL_ATTRIBUTE,
    TableMismatch,
    TableSpec,
    delete_table,
    describe_table,
)

#: Seconds an upgrade here may wait for an index (DynamoDB Local builds one in about 1 s):
#: a stuck index fails the test with UpgradeTimeout, well before pytest's own timeout.
WAIT = 60.0
#: A chain as every release wrote it: the tag, a binary stamp and a number version.
OLD_CHAIN = {"tagID": {"S": "before"}, "stamp": {"B": b"\x01"}, "version": {"N": "1"}}
OLD_PLAN = [
    Change("ttl", TTL_ATTRIBUTE),
    Change("stream", STREAM_VIEW),
    Change("index", OPEN_INDEX),
    Change("index", FAILED_INDEX),
]


@pytest.fixture(scope="module")
def own_ddb_local() -> Iterator[str]:
    """A DynamoDB Local of this module's own.

    On the session's server, after the other infra tests had made their tables, DynamoDB
    Local 3.3.0 was seen leaving an index added by UpdateTable in CREATING for good (the
    same tests pass on a fresh server, and alone on the session's); a server of its own
    keeps these tests about the upgrade, not about that.
    """
    with LocalDynamoDB(backend="dynamodb-local") as server:
        yield server.endpoint_url


@pytest.fixture(params=["moto", "ddblocal"])
def endpoint(request: pytest.FixtureRequest) -> str:
    name = "moto_endpoint" if request.param == "moto" else "own_ddb_local"
    value: str = request.getfixturevalue(name)
    return value


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _client(endpoint: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")


def old_table(client: Any, *, provisioned: bool = False, **extra: Any) -> TableSpec:
    """A table as the releases before the inventory made it, the key only, holding a chain
    (TTL off: turned off since, or never turned on by a create that was interrupted)."""
    spec = TableSpec(name=f"old-{uuid.uuid4().hex[:10]}")
    capacity: dict[str, Any] = {"BillingMode": "PAY_PER_REQUEST"}
    if provisioned:
        capacity = {
            "BillingMode": "PROVISIONED",
            "ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 2},
        }
    client.create_table(
        TableName=spec.name,
        AttributeDefinitions=[{"AttributeName": spec.partition_key, "AttributeType": "S"}],
        KeySchema=spec.key_schema(),
        **capacity,
        **extra,
    )
    client.get_waiter("table_exists").wait(
        TableName=spec.name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
    )
    client.put_item(TableName=spec.name, Item=OLD_CHAIN)
    return spec


def _described(client: Any, name: str) -> dict[str, Any]:
    return {
        "table": client.describe_table(TableName=name)["Table"],
        "ttl": client.describe_time_to_live(TableName=name)["TimeToLiveDescription"],
    }


def _up_to_date(client: Any, spec: TableSpec) -> None:
    info = describe_table(client, spec.name)
    assert (info.stream_view, info.ttl_status, info.ttl_attribute) == (
        STREAM_VIEW,
        "ENABLED",
        TTL_ATTRIBUTE,
    )
    assert info.stream_arn
    assert info.indexes == dict.fromkeys(INDEXES, "ACTIVE")
    table = client.describe_table(TableName=spec.name)["Table"]
    declared = {i["IndexName"]: i for i in table["GlobalSecondaryIndexes"]}
    for name in INDEXES:
        wanted = spec.index_request(name)
        assert declared[name]["KeySchema"] == wanted["KeySchema"]
        assert declared[name]["Projection"] == wanted["Projection"]


# --- the plan, from DescribeTable / DescribeTimeToLive results (no server) ---------------


def _table(**fields: Any) -> dict[str, Any]:
    spec = TableSpec()
    return {
        "TableName": spec.name,
        "KeySchema": spec.key_schema(),
        "AttributeDefinitions": [{"AttributeName": spec.partition_key, "AttributeType": "S"}],
        **fields,
    }


def test_plan_of_an_old_table_adds_everything_in_order() -> None:
    assert plan_upgrade(TableSpec(), _table(), {"TimeToLiveStatus": "DISABLED"}) == OLD_PLAN
    assert [str(c) for c in OLD_PLAN] == [
        "turn TTL on for expires_at",
        "enable the stream (NEW_AND_OLD_IMAGES)",
        "create index xor_ack_open (open_shard, due_at; keys only)",
        "create index xor_ack_failed (failed_shard, failed_at; keys only)",
    ]


def test_plan_of_a_new_table_is_empty() -> None:
    spec = TableSpec()
    request = spec.create_request()
    table = _table(
        AttributeDefinitions=request["AttributeDefinitions"],
        GlobalSecondaryIndexes=[
            {**index, "IndexStatus": "CREATING"} for index in request["GlobalSecondaryIndexes"]
        ],
        StreamSpecification=request["StreamSpecification"],
    )
    ttl = {"TimeToLiveStatus": "ENABLED", "AttributeName": TTL_ATTRIBUTE}
    assert plan_upgrade(spec, table, ttl) == []  # an index being built is not made again


@pytest.mark.parametrize(
    ("fields", "ttl", "error", "says"),
    [
        (
            {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}},
            {},
            StreamViewConflict,
            "already has a stream with view type KEYS_ONLY",
        ),
        ({}, {"TimeToLiveStatus": "ENABLED", "AttributeName": "ttl"}, TableMismatch, "TTL on"),
        (
            {
                "GlobalSecondaryIndexes": [
                    {
                        "IndexName": OPEN_INDEX,
                        "KeySchema": [{"AttributeName": "due_at", "KeyType": "HASH"}],
                    }
                ]
            },
            {},
            TableMismatch,
            f"has an index {OPEN_INDEX} on ('due_at', None)",
        ),
        (
            {
                "AttributeDefinitions": [
                    {"AttributeName": "tagID", "AttributeType": "S"},
                    {"AttributeName": "due_at", "AttributeType": "S"},
                ]
            },
            {},
            TableMismatch,
            "defines due_at as type S",
        ),
        (
            {"KeySchema": [{"AttributeName": "fileID", "KeyType": "HASH"}]},
            {},
            TableMismatch,
            "has key fileID (HASH)",
        ),
    ],
)
def test_plan_refuses_a_table_it_cannot_upgrade(
    fields: dict[str, Any], ttl: dict[str, Any], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=r".*") as raised:
        plan_upgrade(TableSpec(), _table(**fields), ttl)
    assert says in str(raised.value)


def test_stream_conflict_says_what_to_do() -> None:
    error = StreamViewConflict("jobs", "KEYS_ONLY", STREAM_VIEW)
    assert error.code == "StreamViewConflict"
    assert "Nothing was changed" in str(error)
    assert "--stream-specification StreamEnabled=false" in str(error)
    assert "xor-ack table upgrade" in str(error)


# --- against moto and DynamoDB Local ---------------------------------------------------------


def test_upgrade_an_old_table_then_again(endpoint: str) -> None:
    client = _client(endpoint)
    spec = old_table(client)
    try:
        lines: list[str] = []
        assert upgrade_table(client, spec, progress=lines.append, timeout=WAIT) == OLD_PLAN
        assert [line for line in lines if not line.startswith("waiting")] == [
            str(c) for c in OLD_PLAN
        ]
        _up_to_date(client, spec)
        before = _described(client, spec.name)
        # idempotent: nothing to do, nothing done
        assert upgrade_table(client, spec, timeout=WAIT) == []
        assert (
            _described(client, spec.name)["table"]["GlobalSecondaryIndexes"]
            == (before["table"]["GlobalSecondaryIndexes"])
        )
        item = client.get_item(TableName=spec.name, Key={"tagID": {"S": "before"}})["Item"]
        assert item == OLD_CHAIN  # a chain written before the upgrade survives it
    finally:
        client.delete_table(TableName=spec.name)


def test_an_earlier_fleets_table_with_its_markers_is_upgraded(moto_endpoint: str) -> None:
    """A fleet's table of a release before the inventory holds its markers beside its chains
    (a page with tokens and a version but no stamp, a done record): ``table upgrade`` took
    them for a user's items and refused the table; the dashboard served it."""
    client = _client(moto_endpoint)
    spec = old_table(client)
    chain_id = {"B": bytes(range(8))}
    marker = "before#xor-ack-fleet/"
    page = {"tokens": {"B": bytes(16)}, "version": {"N": "9"}, "expires_at": {"N": "1"}}
    client.put_item(
        TableName=spec.name,
        Item={"tagID": {"S": f"{marker}page/0001020304050607/0"}, "chain_id": chain_id, **page},
    )
    client.put_item(
        TableName=spec.name,
        Item={"tagID": {"S": f"{marker}done/0001020304050607"}, "chain_id": chain_id},
    )
    try:
        assert upgrade_table(client, spec, timeout=WAIT) == OLD_PLAN
        _up_to_date(client, spec)
    finally:
        client.delete_table(TableName=spec.name)


def test_upgrade_resumes_while_an_index_is_being_built(own_ddb_local: str) -> None:
    """DynamoDB Local builds an added index for about a second (CREATING) and refuses a
    second index meanwhile: the upgrade waits for the first, then adds the second."""
    client = _client(own_ddb_local)
    spec = old_table(
        client, StreamSpecification={"StreamEnabled": True, "StreamViewType": STREAM_VIEW}
    )
    try:
        client.update_table(
            TableName=spec.name,
            AttributeDefinitions=spec.attribute_definitions(),
            GlobalSecondaryIndexUpdates=[{"Create": spec.index_request(OPEN_INDEX)}],
        )
        lines: list[str] = []
        made = upgrade_table(client, spec, progress=lines.append, timeout=WAIT)
        assert made == [Change("ttl", TTL_ATTRIBUTE), Change("index", FAILED_INDEX)]
        assert f"waiting for index {OPEN_INDEX} (CREATING) to be ACTIVE" in lines
        _up_to_date(client, spec)
    finally:
        client.delete_table(TableName=spec.name)


def test_upgrade_gives_up_after_its_timeout(own_ddb_local: str) -> None:
    client = _client(own_ddb_local)
    spec = old_table(client)
    try:
        client.update_table(
            TableName=spec.name,
            AttributeDefinitions=spec.attribute_definitions(),
            GlobalSecondaryIndexUpdates=[{"Create": spec.index_request(OPEN_INDEX)}],
        )
        with pytest.raises(UpgradeTimeout, match=f"index {OPEN_INDEX} of table {spec.name} is"):
            upgrade_table(client, spec, timeout=0.01, poll=0.01)
        assert upgrade_table(client, spec, timeout=WAIT)[-1] == Change(
            "index", FAILED_INDEX
        )  # resumes
    finally:
        client.delete_table(TableName=spec.name)


def test_a_provisioned_table_gets_provisioned_indexes(moto_endpoint: str) -> None:
    client = _client(moto_endpoint)
    spec = old_table(client, provisioned=True)
    try:
        assert upgrade_table(client, spec, timeout=WAIT) == OLD_PLAN
        table = client.describe_table(TableName=spec.name)["Table"]
        for index in table["GlobalSecondaryIndexes"]:
            throughput = index["ProvisionedThroughput"]
            assert (throughput["ReadCapacityUnits"], throughput["WriteCapacityUnits"]) == (3, 2)
    finally:
        client.delete_table(TableName=spec.name)


# --- the CLI ---------------------------------------------------------------------------------


def test_cli_upgrade_describe_and_create(endpoint: str) -> None:
    client = _client(endpoint)
    spec = old_table(client)
    base = ("--endpoint-url", endpoint, "--table", spec.name)
    try:
        old = run(*base, "table", "describe")
        assert old.exit_code == 0, old.output
        assert "stream:              off" in old.stdout
        assert "indexes:             none" in old.stdout
        assert old.stderr == (
            f"warning: the table has no TTL on {TTL_ATTRIBUTE} and no stream and no index "
            f"{OPEN_INDEX} and no index {FAILED_INDEX}: run `xor-ack table upgrade` to add it\n"
        )
        checked = run(*base, "table", "create")
        assert checked.exit_code == 0, checked.output
        assert checked.stdout == f"table {spec.name} already exists, checked: key tagID (S)\n"
        assert checked.stderr.splitlines() == [
            f"warning: table {spec.name} needs: {c} (`xor-ack table upgrade` does it)"
            for c in OLD_PLAN  # create changed nothing, TTL included
        ]
        assert _described(client, spec.name)["ttl"]["TimeToLiveStatus"] == "DISABLED"
        upgraded = run(*base, "table", "upgrade", "--timeout", str(WAIT))
        assert upgraded.exit_code == 0, upgraded.output
        assert upgraded.stdout.splitlines() == [
            *(f"table {spec.name}: {c}: done" for c in OLD_PLAN),
            f"table {spec.name} upgraded: 4 change(s)",
        ]
        again = run(*base, "table", "upgrade", "--timeout", str(WAIT))
        assert again.exit_code == 0, again.output
        assert again.stdout == f"table {spec.name} is up to date: nothing changed\n"
        assert again.stderr == ""
        new = run(*base, "table", "describe")
        assert new.stderr == ""
        assert f"stream:              {STREAM_VIEW} (arn:aws:dynamodb:" in new.stdout
        assert f"indexes:             {FAILED_INDEX} (ACTIVE), {OPEN_INDEX} (ACTIVE)" in new.stdout
        assert run(*base, "table", "create").stderr == ""
    finally:
        client.delete_table(TableName=spec.name)


def test_describe_warns_of_a_chains_table_without_ttl(endpoint: str) -> None:
    """A table left without TTL (a create interrupted before it, TTL turned off since)
    keeps every tombstone for good: describe says so, as table create does."""
    client = _client(endpoint)
    spec = TableSpec(name=f"nottl-{uuid.uuid4().hex[:10]}")
    client.create_table(**spec.create_request())  # everything but TTL
    client.get_waiter("table_exists").wait(
        TableName=spec.name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
    )
    base = ("--endpoint-url", endpoint, "--table", spec.name)
    try:
        described = run(*base, "table", "describe")
        assert described.exit_code == 0, described.output
        assert described.stderr == (
            f"warning: the table has no TTL on {TTL_ATTRIBUTE}: run `xor-ack table upgrade` "
            "to add it\n"
        )
        assert run(*base, "table", "create").stderr == (
            f"warning: table {spec.name} needs: turn TTL on for {TTL_ATTRIBUTE} "
            "(`xor-ack table upgrade` does it)\n"
        )
    finally:
        client.delete_table(TableName=spec.name)


def test_create_on_a_chains_table_with_ttl_on_another_attribute_is_refused_not_checked(
    endpoint: str,
) -> None:
    """The refusal is the whole answer: no "checked" line on stdout before it, exit 1."""
    client = _client(endpoint)
    spec = TableSpec(name=f"otherttl-{uuid.uuid4().hex[:10]}")
    client.create_table(**spec.create_request())
    client.get_waiter("table_exists").wait(
        TableName=spec.name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
    )
    client.update_time_to_live(
        TableName=spec.name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
    )
    try:
        refused = run("--endpoint-url", endpoint, "--table", spec.name, "table", "create")
        assert refused.exit_code == 1, refused.output
        assert refused.stdout == ""
        assert refused.stderr.startswith(f"error: TableMismatch: table {spec.name} has TTL on")
        # One check, one message: `table upgrade` refuses the table in the same words.
        upgrade = run("--endpoint-url", endpoint, "--table", spec.name, "table", "upgrade")
        assert upgrade.exit_code == 1 and upgrade.stderr == refused.stderr
        assert "DynamoDB allows one TTL attribute per table; use another table" in upgrade.stderr
    finally:
        client.delete_table(TableName=spec.name)


def test_cli_refuses_a_stream_of_another_view_and_changes_nothing(
    endpoint: str,
) -> None:
    client = _client(endpoint)
    spec = old_table(
        client, StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}
    )
    try:
        before = _described(client, spec.name)
        refused = run("--endpoint-url", endpoint, "--table", spec.name, "table", "upgrade")
        assert refused.exit_code == 1, refused.output
        assert refused.stderr.startswith(
            f"error: StreamViewConflict: table {spec.name} already has a stream with view "
            "type KEYS_ONLY"
        )
        assert len(refused.stderr.splitlines()) == 1
        assert refused.stdout == ""
        after = _described(client, spec.name)
        assert after["ttl"] == before["ttl"]
        assert not after["table"].get("GlobalSecondaryIndexes")
        assert after["table"]["AttributeDefinitions"] == before["table"]["AttributeDefinitions"]
        assert after["table"]["StreamSpecification"] == before["table"]["StreamSpecification"]
    finally:
        client.delete_table(TableName=spec.name)


def test_cli_new_table_reports_stream_and_indexes(moto_endpoint: str) -> None:
    name = f"new-{uuid.uuid4().hex[:10]}"
    base = ("--endpoint-url", moto_endpoint, "--table", name)
    try:
        made = run(*base, "table", "create")
        assert made.exit_code == 0, made.output
        assert made.stdout == (
            f"table {name} created: key tagID (S), TTL on {TTL_ATTRIBUTE}, PAY_PER_REQUEST, "
            f"stream {STREAM_VIEW}, indexes {OPEN_INDEX}, {FAILED_INDEX}\n"
        )
        assert run(*base, "table", "upgrade", "--timeout", str(WAIT)).stdout == (
            f"table {name} is up to date: nothing changed\n"
        )
    finally:
        delete_table(_client(moto_endpoint), name)
