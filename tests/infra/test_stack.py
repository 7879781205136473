"""The template and the client agree: deploy infra/table.yaml in moto's CloudFormation, then
run the client against the table it made, and check that every DynamoDB operation the client
sends is one the stack's managed policy allows on that table, and nothing more is allowed.

moto's CloudFormation does not apply TimeToLiveSpecification, PointInTimeRecovery or SSE;
those are checked on the template itself (test_template) and TTL on a live table by
test_compose / test_cli against DynamoDB Local.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.errors import TagNotFound
from xor_ack_dynamodb.table import INDEXES, STREAM_VIEW, TableSpec, delete_table, describe_table

from .cfn import TEMPLATE
from .test_template import KMS_KEY, POLICY_ACTIONS, STREAM_ACTIONS, SWEEPER_TABLE_ACTIONS

#: The action IAM checks for the operations inside a transaction or a PartiQL batch.
INNER_ACTIONS = {"TransactWriteItems": "UpdateItem", "BatchExecuteStatement": "PartiQLUpdate"}

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

    def policy(self, output: str = "PolicyArn") -> dict[str, Any]:
        iam = _client("iam", self.endpoint)
        arn = self.outputs[output]
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


def test_stack_stream_and_the_sweeper_and_stream_reader_policies(stack: Stack) -> None:
    ddb = _client("dynamodb", stack.endpoint)
    table = ddb.describe_table(TableName=stack.table)["Table"]
    assert stack.outputs["StreamArn"] == table["LatestStreamArn"]
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": STREAM_VIEW}
    assert {i["IndexName"] for i in table["GlobalSecondaryIndexes"]} == set(INDEXES)
    items, inventory = stack.policy("SweeperPolicyArn")["Statement"]
    assert set(items["Action"]) == SWEEPER_TABLE_ACTIONS
    assert items["Resource"] == table["TableArn"]
    assert inventory["Resource"] == [f"{table['TableArn']}/index/{name}" for name in INDEXES]
    stream, listing, find = stack.policy("StreamReaderPolicyArn")["Statement"]
    assert set(stream["Action"]) == STREAM_ACTIONS
    assert stream["Resource"] == table["LatestStreamArn"]
    assert listing["Resource"] == "*"
    assert find["Resource"] == table["TableArn"]


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
    assert ack.fail("file-2", "worker lost").failed
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
    assert batch_stamps(ddb, stack.outputs["TableName"], stack.outputs["PartitionKeyName"])

    # every call went to the stack's table, and each is allowed by the policy's statement;
    # IAM authorises a TransactWriteItems by the actions inside it (Update: UpdateItem), and
    # a BatchExecuteStatement of UPDATE statements as PartiQLUpdate
    assert {table for _, table in sent if table} == {stack.table}
    assert {("TransactWriteItems", ""), ("BatchGetItem", "")} <= set(sent)
    assert ("BatchExecuteStatement", "") in sent
    used = {f"dynamodb:{INNER_ACTIONS.get(op, op)}" for op, _ in sent}
    (statement,) = stack.policy()["Statement"]
    assert statement["Effect"] == "Allow"
    assert statement["Resource"] == stack.outputs["TableArn"]
    allowed = set(statement["Action"])
    assert used <= allowed, f"the client sends {used - allowed}, which the policy does not allow"
    # and the policy allows nothing else than that plus DescribeTable (for `table describe`)
    # and DescribeTimeToLive (for the word count's check of its --table: the test below)
    assert allowed == POLICY_ACTIONS
    # PartiQLInsert: create_many(via="partiql"), which moto cannot run (test_template proves
    # on DynamoDB Local that it sends INSERT statements)
    assert allowed - used == {
        "dynamodb:DescribeTable",
        "dynamodb:DescribeTimeToLive",
        "dynamodb:PartiQLInsert",
    }


def test_the_word_counts_check_of_its_table_needs_no_more_than_the_policy(stack: Stack) -> None:
    """Before its first write the word count proves --table holds chains; on the stack's table
    (inventory indexes) that is two reads of its description, no Scan."""
    from xor_ack_dynamodb.pipeline.chains_table import check_holds_chains

    ddb = _client("dynamodb", stack.endpoint)
    sent: list[str] = []
    ddb.meta.events.register(
        "before-parameter-build.dynamodb", lambda model, **_: sent.append(model.name)
    )
    check_holds_chains(ddb, ddb.describe_table(TableName=stack.table)["Table"])
    (statement,) = stack.policy()["Statement"]
    assert statement["Resource"] == stack.outputs["TableArn"]
    assert sent == ["DescribeTable", "DescribeTimeToLive"]
    assert {f"dynamodb:{op}" for op in sent} <= set(statement["Action"])


def batch_stamps(ddb: Any, table: str, partition_key: str) -> bool:
    """Stamp chains from 4 threads with ``batch_writes``: the first write is held a moment
    (a hook before it is sent), so the other three wait and go as one PartiQL batch.

    moto cannot run these statements (it does not parse repeated SET clauses, nor check a
    batched statement's condition), so a hook answers the batch as DynamoDB answers one
    under throttling, every statement ``ThrottlingError``, and the client sends each write
    alone: the batch is sent (and recorded) and every stamp lands.
    """
    ack = SyncXorAckDynamoDB(
        ddb, table=table, partition_key=partition_key, batch_writes=True, write_slots=1
    )
    stamps = {f"batch-{i}": new_stamp() for i in range(4)}
    ack.create_many(stamps)
    held = threading.Event()

    def hold_first(**_: Any) -> None:
        if not held.is_set():
            held.set()
            time.sleep(0.3)

    def throttled(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        count = len(json.loads(params["body"])["Statements"])
        error = {"Error": {"Code": "ThrottlingError", "Message": "slow down"}}
        answer = {"Responses": [error] * count, "ResponseMetadata": {"RetryAttempts": 0}}
        return SimpleNamespace(status_code=200), answer

    hooks = {"UpdateItem": hold_first, "BatchExecuteStatement": throttled}
    for op, hook in hooks.items():
        ddb.meta.events.register(f"before-call.dynamodb.{op}", hook)
    try:
        with ThreadPoolExecutor(4) as pool:
            done = list(pool.map(lambda tag: ack.stamp(tag, stamps[tag]), stamps))
    finally:
        for op, hook in hooks.items():
            ddb.meta.events.unregister(f"before-call.dynamodb.{op}", hook)
    return all(s.acked for s in done) and ack.stats.requests["BatchExecuteStatement"] == 1


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


def test_sweeper_runs_on_the_stack_table_within_its_policy(stack: Stack) -> None:
    """sweep() and list_chains() send only what SweeperPolicy allows, on the ARNs it names."""
    ddb = _client("dynamodb", stack.endpoint)
    table_arn = stack.outputs["TableArn"]
    setup = SyncXorAckDynamoDB(ddb, table=stack.table)
    setup.create("late", new_stamp(), timeout=0.3)
    setup.create("open", new_stamp(), timeout=600)
    setup.create("lost", new_stamp())
    setup.fail("lost", "worker lost")
    time.sleep(0.5)

    sweeper_ddb = _client("dynamodb", stack.endpoint)
    sent: list[tuple[str, str]] = []

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        index = params.get("IndexName")
        arn = f"{table_arn}/index/{index}" if index else table_arn
        sent.append((f"dynamodb:{model.name}", arn))

    sweeper_ddb.meta.events.register("before-parameter-build.dynamodb", record)
    ack = SyncXorAckDynamoDB(sweeper_ddb, table=stack.table)
    assert [s.tag for s in ack.list_chains(status="overdue")] == ["late"]
    assert [s.tag for s in ack.sweep()] == ["late"]
    assert {s.tag for s in ack.list_chains(status="failed")} == {"late", "lost"}
    assert [s.tag for s in ack.list_chains(status="open")] == ["open"]

    allowed = {
        (action, arn)
        for statement in stack.policy("SweeperPolicyArn")["Statement"]
        for action in _listed(statement["Action"])
        for arn in _listed(statement["Resource"])
    }
    used = set(sent)
    assert used <= allowed, f"the sweeper sends {used - allowed}, which its policy does not allow"
    # GetItem is granted for the re-read after a lost write response, which this run has none of
    assert {action for action, _ in allowed - used} <= {"dynamodb:GetItem"}


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def test_a_follower_needs_no_more_than_the_stream_reader_policy(stack: Stack) -> None:
    """`xor-ack events follow` and `chain stats` find the stream from the table's description,
    then read it: every call they send is one the StreamReaderPolicyArn output allows."""
    from xor_ack_dynamodb import events

    ddb = _client("dynamodb", stack.endpoint)
    SyncXorAckDynamoDB(ddb, table=stack.table).create("file-1", new_stamp())
    streams = _client("dynamodbstreams", stack.endpoint)
    sent: list[str] = []
    for client in (ddb, streams):
        client.meta.events.register(
            "before-parameter-build", lambda model, **_: sent.append(f"dynamodb:{model.name}")
        )
    arn = events.stream_arn(ddb, stack.table)
    # moto's stream gives an UpdateItem that makes an item as two records, the first with the
    # key only (no chain yet: a CorruptRecord); the second is the chain's creation
    got = [decoded for _, decoded in events.read(streams, arn)]
    assert [e.kind for d in got if isinstance(d, list) for e in d] == ["created"]
    allowed = {
        action: statement["Resource"]
        for statement in stack.policy("StreamReaderPolicyArn")["Statement"]
        for action in (
            [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        )
    }
    assert set(sent) <= set(allowed), f"a follower sends {set(sent) - set(allowed)}, not allowed"
    assert allowed["dynamodb:DescribeTable"] == stack.outputs["TableArn"]
