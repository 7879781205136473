"""infra/table.yaml: lint-clean, and the table it declares is TableSpec's table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cfnlint  # type: ignore[import-untyped]
import pytest
from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]
from cfnlint.helpers import REGIONS  # type: ignore[import-untyped]

from xor_ack_dynamodb.dynamodb.item import DEFAULT_PARTITION_KEY, EXPIRES_AT
from xor_ack_dynamodb.table import DEFAULT_TABLE, INDEXES, TTL_ATTRIBUTE, TableSpec

from .cfn import ROOT, TEMPLATE, Resolver, load_template

#: What the clients send (see test_stack for the recorded proof) plus DescribeTable, and
#: DescribeTimeToLive for the word count's check of its --table.
POLICY_ACTIONS = {
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:UpdateItem",
    "dynamodb:PartiQLInsert",
    "dynamodb:PartiQLUpdate",
    "dynamodb:DeleteItem",
    "dynamodb:DescribeTable",
    "dynamodb:DescribeTimeToLive",
}
#: What a sweeper sends: Query on the indexes, the reads and the failing write on the table.
SWEEPER_TABLE_ACTIONS = {"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:UpdateItem"}
#: What a stream reader sends, on the stream's ARN (ListStreams: on "*", see the template).
STREAM_ACTIONS = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}
KMS_KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


def test_cfn_lint_passes_in_every_region() -> None:
    matches = lint(TEMPLATE.read_text(), config=ManualArgs(include_checks=["I"], regions=REGIONS))
    assert [str(m) for m in matches] == []


def test_parameter_defaults_are_the_clients_defaults(template: dict[str, Any]) -> None:
    params = template["Parameters"]
    assert params["TableName"]["Default"] == DEFAULT_TABLE == TableSpec().name
    assert params["PartitionKeyName"]["Default"] == DEFAULT_PARTITION_KEY
    assert params["BillingMode"]["Default"] == TableSpec().billing_mode
    assert params["DeletionProtection"]["Default"] == "true"
    assert params["KmsKeyArn"]["Default"] == ""


@pytest.mark.parametrize(
    ("parameters", "spec"),
    [
        ({}, TableSpec()),
        (
            {"TableName": "jobs.prod", "PartitionKeyName": "fileID"},
            TableSpec(name="jobs.prod", partition_key="fileID"),
        ),
        (
            {"BillingMode": "PROVISIONED", "ReadCapacityUnits": "7", "WriteCapacityUnits": "3"},
            TableSpec(billing_mode="PROVISIONED", read_capacity=7, write_capacity=3),
        ),
    ],
)
def test_table_definition_is_tablespec(
    template: dict[str, Any], parameters: dict[str, str], spec: TableSpec
) -> None:
    props = Resolver(template, **parameters).resource("ChainTable")["Properties"]
    declared = {key: props.get(key) for key in spec.create_request()}

    def numbers(throughput: dict[str, Any]) -> dict[str, int]:
        return {k: int(v) for k, v in throughput.items()}

    if "ProvisionedThroughput" in declared:
        declared["ProvisionedThroughput"] = numbers(declared["ProvisionedThroughput"])
    for index in declared["GlobalSecondaryIndexes"]:
        if "ProvisionedThroughput" in index:
            index["ProvisionedThroughput"] = numbers(index["ProvisionedThroughput"])
    # CloudFormation has no StreamEnabled: a StreamSpecification turns the stream on.
    assert "StreamEnabled" not in declared["StreamSpecification"]
    declared["StreamSpecification"] = {"StreamEnabled": True, **declared["StreamSpecification"]}
    assert declared == spec.create_request()
    assert "ProvisionedThroughput" in props or spec.billing_mode == "PAY_PER_REQUEST"
    assert props["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}
    assert spec.ttl_attribute == TTL_ATTRIBUTE == EXPIRES_AT


def test_table_is_durable_and_encrypted(template: dict[str, Any]) -> None:
    table = Resolver(template).resource("ChainTable")
    props = table["Properties"]
    assert table["Type"] == "AWS::DynamoDB::Table"
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}
    assert props["DeletionProtectionEnabled"] == "true"
    assert {t["Key"] for t in props["Tags"]} >= {"project"}
    with_key = Resolver(template, KmsKeyArn=KMS_KEY, DeletionProtection="false")
    props = with_key.resource("ChainTable")["Properties"]
    assert props["SSESpecification"]["KMSMasterKeyId"] == KMS_KEY
    assert props["DeletionProtectionEnabled"] == "false"


def _statements(
    template: dict[str, Any], policy_name: str = "ClientPolicy", **parameters: str
) -> list[dict[str, Any]]:
    policy = Resolver(template, **parameters).resource(policy_name)
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    document = policy["Properties"]["PolicyDocument"]
    assert document["Version"] == "2012-10-17"
    statements: list[dict[str, Any]] = document["Statement"]
    return statements


def test_policy_grants_the_client_actions_on_this_table_only(template: dict[str, Any]) -> None:
    (items,) = _statements(template)
    assert items["Effect"] == "Allow"
    assert set(items["Action"]) == POLICY_ACTIONS
    assert len(items["Action"]) == len(POLICY_ACTIONS)
    assert items["Resource"] == "ChainTable.Arn"
    assert "Condition" not in items and "NotAction" not in items


def test_policy_with_a_kms_key_adds_decrypt_through_dynamodb_only(
    template: dict[str, Any],
) -> None:
    items, key = _statements(template, KmsKeyArn=KMS_KEY)
    # the item statement is the same in both branches of the If
    assert items == _statements(template)[0]
    assert key == {
        "Sid": "ChainTableKeyViaDynamoDB",
        "Effect": "Allow",
        "Action": "kms:Decrypt",
        "Resource": KMS_KEY,
        "Condition": {"StringEquals": {"kms:ViaService": "dynamodb.us-east-1.amazonaws.com"}},
    }


def test_outputs_name_the_table_its_arn_and_the_policy(template: dict[str, Any]) -> None:
    resolver = Resolver(template)
    outputs = {name: resolver.resolve(o["Value"]) for name, o in template["Outputs"].items()}
    assert outputs == {
        "TableName": "Ref:ChainTable",
        "PartitionKeyName": DEFAULT_PARTITION_KEY,
        "TableArn": "ChainTable.Arn",
        "PolicyArn": "Ref:ClientPolicy",
        "StreamArn": "ChainTable.StreamArn",
        "SweeperPolicyArn": "Ref:SweeperPolicy",
        "StreamReaderPolicyArn": "Ref:StreamReaderPolicy",
    }


def _key_statement(statement: dict[str, Any]) -> None:
    assert statement == {
        "Sid": "ChainTableKeyViaDynamoDB",
        "Effect": "Allow",
        "Action": "kms:Decrypt",
        "Resource": KMS_KEY,
        "Condition": {"StringEquals": {"kms:ViaService": "dynamodb.us-east-1.amazonaws.com"}},
    }


def test_sweeper_policy_queries_the_two_indexes_and_fails_chains_on_the_table(
    template: dict[str, Any],
) -> None:
    items, inventory = _statements(template, "SweeperPolicy")
    assert items["Effect"] == inventory["Effect"] == "Allow"
    assert set(items["Action"]) == SWEEPER_TABLE_ACTIONS
    assert len(items["Action"]) == len(SWEEPER_TABLE_ACTIONS)
    assert items["Resource"] == "ChainTable.Arn"
    assert inventory["Action"] == "dynamodb:Query"
    # the indexes only: a Query on the table itself (or a Scan) is not granted
    assert inventory["Resource"] == [f"ChainTable.Arn/index/{name}" for name in INDEXES]
    assert all("Condition" not in s and "NotAction" not in s for s in (items, inventory))
    *same, key = _statements(template, "SweeperPolicy", KmsKeyArn=KMS_KEY)
    assert same == [items, inventory]
    _key_statement(key)


def test_stream_reader_policy_reads_this_table_s_stream_only(template: dict[str, Any]) -> None:
    stream, listing, find = _statements(template, "StreamReaderPolicy")
    assert set(stream["Action"]) == STREAM_ACTIONS and len(stream["Action"]) == 3
    assert stream["Resource"] == "ChainTable.StreamArn"
    # IAM has no resource-level permission for ListStreams (cfn-lint's policy data agrees)
    assert (listing["Action"], listing["Resource"]) == ("dynamodb:ListStreams", "*")
    # a follower finds the stream ARN in the table's description
    assert (find["Action"], find["Resource"]) == ("dynamodb:DescribeTable", "ChainTable.Arn")
    *same, key = _statements(template, "StreamReaderPolicy", KmsKeyArn=KMS_KEY)
    assert same == [stream, listing, find]
    _key_statement(key)


def test_iam_knows_no_resource_for_list_streams_and_an_index_for_query() -> None:
    """The resource types the template relies on, from cfn-lint's copy of IAM's reference."""
    data = Path(cfnlint.__file__).parent / "data" / "AdditionalSpecs" / "Policies.json"
    actions = json.loads(data.read_text())["dynamodb"]["Actions"]
    assert actions["liststreams"] == {}
    assert "index" in actions["query"]["Resources"]
    for name in ("describestream", "getrecords", "getsharditerator"):
        assert actions[name]["Resources"] == ["stream"]


def _every_statement(node: Any) -> list[dict[str, Any]]:
    """Every IAM policy statement in a decoded template, also inside an Fn::If."""
    if isinstance(node, list):
        return [s for value in node for s in _every_statement(value)]
    if not isinstance(node, dict):
        return []
    own = [node] if "Effect" in node and "Action" in node else []
    return own + [s for value in node.values() for s in _every_statement(value)]


@pytest.mark.parametrize("name", ["table.yaml", "fleet.yaml", "sweeper.yaml", "events.yaml"])
def test_an_action_iam_scopes_to_no_resource_is_granted_on_star(name: str) -> None:
    """IAM matches an action with no resource type (ListStreams) only against "*": granted
    on a stream's ARN it grants nothing, and a stream mapping's role needs it."""
    data = Path(cfnlint.__file__).parent / "data" / "AdditionalSpecs" / "Policies.json"
    actions = json.loads(data.read_text())["dynamodb"]["Actions"]
    unscoped = {f"dynamodb:{a}" for a, spec in actions.items() if not spec.get("Resources")}
    wrong = []
    for statement in _every_statement(load_template(ROOT / "infra" / name)["Resources"]):
        granted = statement["Action"]
        for action in [granted] if isinstance(granted, str) else granted:
            if action.lower() in unscoped and statement["Resource"] != "*":
                wrong.append((statement.get("Sid"), action, statement["Resource"]))
    assert wrong == []


@pytest.mark.parametrize("name", ["table.yaml", "sweeper.yaml", "events.yaml"])
def test_a_partition_key_name_the_clients_refuse_is_refused_by_the_stack(name: str) -> None:
    # The parameter took any [a-zA-Z0-9_.-]{1,255}: "stamp" made a table no client, sweeper
    # or xor-ack command opens, and "due_at" a key declared twice (S and N) in the table.
    import re

    from xor_ack_dynamodb.dynamodb.item import ATTRIBUTES
    from xor_ack_dynamodb.errors import XorAckError

    parameter = load_template(TEMPLATE.parent / name)["Parameters"]["PartitionKeyName"]
    pattern = re.compile(parameter["AllowedPattern"])  # CloudFormation's is Java's: alike here
    for key in sorted(ATTRIBUTES):
        assert pattern.fullmatch(key) is None, key
        with pytest.raises(XorAckError):
            TableSpec(partition_key=key)
    for key in ("tagID", "pk", "stamp_", "my.version", "deadline-2", "x" * 255):
        assert pattern.fullmatch(key) is not None, key
        TableSpec(partition_key=key)


@pytest.mark.ddblocal
def test_the_client_policy_allows_the_statements_the_client_sends(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    """IAM authorises each statement of a BatchExecuteStatement by its verb:
    ``create_many(via="partiql")`` (the Spark rounds' creates) sends INSERTs, and the
    policy, with PartiQLUpdate only, denied every one of them (moto runs none: DynamoDB
    Local here)."""
    import boto3

    from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp

    raw = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    verbs: set[str] = set()

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        if model.name == "BatchExecuteStatement":
            verbs.update(
                s["Statement"].split(None, 1)[0].capitalize() for s in params["Statements"]
            )

    raw.meta.events.register("before-parameter-build.dynamodb", record)
    ack = SyncXorAckDynamoDB(raw, table=ddb_table.name)
    ack.create_many({f"in-{i}": new_stamp() for i in range(3)}, via="partiql")
    assert verbs == {"Insert"}
    for kms in ("", KMS_KEY):
        policy = Resolver(load_template(), KmsKeyArn=kms).resource("ClientPolicy")
        (items, *_) = policy["Properties"]["PolicyDocument"]["Statement"]
        assert {f"dynamodb:PartiQL{verb}" for verb in verbs} <= set(items["Action"])
