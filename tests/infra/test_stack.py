"""The template and the client agree: deploy infra/table.yaml in moto's CloudFormation, then
run the client against the table it made, and check that every DynamoDB operation the client
sends is one the stack's managed policy allows on that table, and nothing more is allowed.

moto's CloudFormation does not apply TimeToLiveSpecification, PointInTimeRecovery or SSE;
those are checked on the template itself (test_template) and TTL on a live table by
test_compose / test_cli against DynamoDB Local.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.errors import TagNotFound
from xor_ack_dynamodb.table import TableSpec, delete_table, describe_table

from .cfn import TEMPLATE
from .test_template import KMS_KEY, POLICY_ACTIONS

#: The action IAM checks for each operation a transaction carries.
TRANSACTION_ACTIONS = {"TransactWriteItems": "UpdateItem"}

REGION = "us-east-1"


def _client(service: str, endpoint: str) -> Any:
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION)


class Stack:
    def __init__(self, endpoint: str, **parameters: str) -> None:
        self.endpoint = endpoint
        self.name = f"xor-ack-{uuid.uuid4().hex[:10]}"
        self.table = f"chains-{uuid.uuid4().hex[:10]}"
        cfn = _client("cloudformation", endpoint)
        cfn.create_stack(
            StackName=self.name,
            TemplateBody=TEMPLATE.read_text(),
            Parameters=[
                {"ParameterKey": k, "ParameterValue": v}
                for k, v in {"TableName": self.table, **parameters}.items()
            ],
            Capabilities=["CAPABILITY_IAM"],
        )
        cfn.get_waiter("stack_create_complete").wait(
            StackName=self.name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
        )
        stack = cfn.describe_stacks(StackName=self.name)["Stacks"][0]
        self.outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}

    def policy(self) -> dict[str, Any]:
        iam = _client("iam", self.endpoint)
        arn = self.outputs["PolicyArn"]
        version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
        document: dict[str, Any] = iam.get_policy_version(PolicyArn=arn, VersionId=version)[
            "PolicyVersion"
        ]["Document"]
        return document

    def delete(self) -> None:
        cfn = _client("cloudformation", self.endpoint)
        cfn.delete_stack(StackName=self.name)
        cfn.get_waiter("stack_delete_complete").wait(
            StackName=self.name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
        )


def _drop(stack: Stack) -> None:
    """Delete the stack, then the table it retains."""
    stack.delete()
    ddb = _client("dynamodb", stack.endpoint)
    # moto takes the parameter's "false" (a string) as true: turn protection off explicitly
    ddb.update_table(TableName=stack.table, DeletionProtectionEnabled=False)
    delete_table(ddb, stack.table)


@pytest.fixture
def stack(moto_endpoint: str) -> Iterator[Stack]:
    made = Stack(moto_endpoint)
    yield made
    _drop(made)


def test_stack_outputs_and_table(stack: Stack) -> None:
    assert stack.outputs["TableName"] == stack.table
    assert stack.outputs["PartitionKeyName"] == "tagID"
    ddb = _client("dynamodb", stack.endpoint)
    table = ddb.describe_table(TableName=stack.table)["Table"]
    assert stack.outputs["TableArn"] == table["TableArn"]
    TableSpec(name=stack.table).check(table)  # raises TableMismatch otherwise
    info = describe_table(ddb, stack.table)
    assert info.billing_mode == "PAY_PER_REQUEST"
    assert info.deletion_protection is True
    tags = ddb.list_tags_of_resource(ResourceArn=table["TableArn"])["Tags"]
    assert {"Key": "project", "Value": "xor-ack-dynamodb"} in tags


def test_client_runs_on_the_stack_table_within_the_policy(stack: Stack) -> None:
    ddb = _client("dynamodb", stack.endpoint)
    sent: list[tuple[str, str]] = []

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        sent.append((model.name, params.get("TableName", "")))

    ddb.meta.events.register("before-parameter-build.dynamodb", record)
    ack = SyncXorAckDynamoDB(
        ddb, table=stack.outputs["TableName"], partition_key=stack.outputs["PartitionKeyName"]
    )
    file_stamp, w1, w2 = new_stamp(), new_stamp(), new_stamp()
    assert not ack.create("file-1", file_stamp).acked
    assert not ack.stamp("file-1", xor(file_stamp, w1, w2), token="parent").acked
    assert not ack.stamp("file-1", w1).acked
    assert ack.stamp("file-1", w2).acked
    state = ack.get("file-1")
    assert state is not None and state.acked
    assert ack.wait("file-1", timeout=5).acked
    ack.create("file-2", new_stamp())
    assert ack.fail("file-2", "timeout").failed
    third = new_stamp()
    ack.create("file-3", third)
    assert ack.stamp_many({"file-3": third}, tokens={"file-3": "t"})["file-3"].acked
    ack.create("file-4", new_stamp())
    ack.delete("file-4")
    with pytest.raises(TagNotFound):
        ack.delete("file-4")
    many = {f"many-{i}": new_stamp() for i in range(3)}
    ack.create_many(many)
    assert all(state is not None for state in ack.get_many(many).values())
    assert all(s.acked for s in ack.stamp_many(many, transact=True, concurrency=1).values())

    # every call went to the stack's table, and each is allowed by the policy's statement;
    # IAM authorises a TransactWriteItems by the actions inside it (Update: UpdateItem)
    assert {table for _, table in sent if table} == {stack.table}
    assert ("TransactWriteItems", "") in sent and ("BatchGetItem", "") in sent
    used = {f"dynamodb:{TRANSACTION_ACTIONS.get(op, op)}" for op, _ in sent}
    (statement,) = stack.policy()["Statement"]
    assert statement["Effect"] == "Allow"
    assert statement["Resource"] == stack.outputs["TableArn"]
    allowed = set(statement["Action"])
    assert used <= allowed, f"the client sends {used - allowed}, which the policy does not allow"
    # and the policy allows nothing else than that plus DescribeTable (for `table describe`)
    assert allowed == POLICY_ACTIONS
    assert allowed - used == {"dynamodb:DescribeTable"}


def test_stack_keeps_the_table_when_deleted(moto_endpoint: str) -> None:
    made = Stack(moto_endpoint)
    ddb = _client("dynamodb", moto_endpoint)
    try:
        made.delete()
        assert describe_table(ddb, made.table).name == made.table  # DeletionPolicy: Retain
    finally:
        ddb.update_table(TableName=made.table, DeletionProtectionEnabled=False)
        delete_table(ddb, made.table)


def test_provisioned_stack_with_a_kms_key(moto_endpoint: str) -> None:
    made = Stack(
        moto_endpoint,
        BillingMode="PROVISIONED",
        ReadCapacityUnits="7",
        WriteCapacityUnits="3",
        KmsKeyArn=KMS_KEY,
    )
    ddb = _client("dynamodb", moto_endpoint)
    try:
        info = describe_table(ddb, made.table)
        assert (info.billing_mode, info.read_capacity, info.write_capacity) == (
            "PROVISIONED",
            7,
            3,
        )
        items, key = made.policy()["Statement"]
        assert set(items["Action"]) == POLICY_ACTIONS
        assert key["Action"] == "kms:Decrypt"
        assert key["Resource"] == KMS_KEY
        assert key["Condition"] == {
            "StringEquals": {"kms:ViaService": f"dynamodb.{REGION}.amazonaws.com"}
        }
    finally:
        _drop(made)
