"""infra/fleet.yaml: cfn-lint clean, deployed into moto's CloudFormation, its handlers driven.

moto creates the functions but cannot invoke them (that needs Docker), so the handlers the
template names are called here with events of AWS's documented formats, against the queues
and the table the stack made.
"""

from __future__ import annotations

import ast
import asyncio
import copy
import io
import json
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]

from xor_ack_dynamodb.fleet import Fleet, SqsSender, lambda_entry
from xor_ack_dynamodb.fleet.sqs import sqs_client
from xor_ack_dynamodb.table import TableSpec

from .cfn import load_template
from .event_patterns import matches

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "infra" / "fleet.yaml"
FIXTURES = ROOT / "tests" / "fleet" / "fixtures"
REGION = "us-east-1"


def test_the_template_is_cfn_lint_clean() -> None:
    config = ManualArgs(include_checks=["I"], regions=["us-east-1", "eu-west-1"])
    matches = lint(TEMPLATE.read_text(), config=config)
    assert [str(m) for m in matches] == []


def _client(service: str, endpoint: str) -> Any:
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION)


@pytest.fixture
def stack(moto_endpoint: str) -> Iterator[dict[str, str]]:
    s3 = _client("s3", moto_endpoint)
    bucket = f"code-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    package = io.BytesIO()
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("README.txt", "the library and the handler would be here")
    s3.put_object(Bucket=bucket, Key="fleet.zip", Body=package.getvalue())
    cfn = _client("cloudformation", moto_endpoint)
    name = f"fleet-{uuid.uuid4().hex[:8]}"
    cfn.create_stack(
        StackName=name,
        TemplateBody=TEMPLATE.read_text(),
        Parameters=[
            {"ParameterKey": "TableName", "ParameterValue": f"chains-{uuid.uuid4().hex[:8]}"},
            {"ParameterKey": "CodeBucket", "ParameterValue": bucket},
            {"ParameterKey": "CodeKey", "ParameterValue": "fleet.zip"},
        ],
        Capabilities=["CAPABILITY_IAM"],
    )
    cfn.get_waiter("stack_create_complete").wait(
        StackName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
    )
    described = cfn.describe_stacks(StackName=name)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described["Outputs"]}
    yield {"name": name, **outputs}


def test_the_stack_deploys_its_queues_functions_and_mappings(
    stack: dict[str, str], moto_endpoint: str
) -> None:
    sqs = _client("sqs", moto_endpoint)
    attributes = sqs.get_queue_attributes(QueueUrl=stack["WorkQueueUrl"], AttributeNames=["All"])[
        "Attributes"
    ]
    assert int(attributes["VisibilityTimeout"]) >= 6 * 30
    assert json.loads(attributes["RedrivePolicy"])["maxReceiveCount"] in (5, "5")
    lam = _client("lambda", moto_endpoint)
    names = {f["FunctionName"] for f in lam.list_functions()["Functions"]}
    for suffix in ("worker", "dead-letters", "completions", "sweeper"):
        assert f"{stack['name']}-{suffix}" in names
    worker = lam.get_function(FunctionName=f"{stack['name']}-worker")["Configuration"]
    assert worker["Handler"] == "xor_ack_dynamodb.fleet.lambda_entry.work"
    assert worker["Environment"]["Variables"]["XOR_ACK_QUEUE_URL"] == stack["WorkQueueUrl"]
    mappings = lam.list_event_source_mappings(FunctionName=f"{stack['name']}-worker")
    (mapping,) = mappings["EventSourceMappings"]
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    table = _client("dynamodb", moto_endpoint).describe_table(TableName=stack["TableName"])
    assert table["Table"]["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"


def test_every_role_is_scoped_to_the_stacks_resources(
    stack: dict[str, str], moto_endpoint: str
) -> None:
    iam = _client("iam", moto_endpoint)
    roles = [r for r in iam.list_roles()["Roles"] if r["RoleName"].startswith(stack["name"])]
    assert len(roles) == 4
    for role in roles:
        for policy in iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"]:
            document = iam.get_role_policy(RoleName=role["RoleName"], PolicyName=policy)[
                "PolicyDocument"
            ]
            if isinstance(document, str):  # moto keeps the template's dict as its repr
                document = ast.literal_eval(document)
            for statement in document["Statement"]:
                actions = statement["Action"]
                actions = [actions] if isinstance(actions, str) else actions
                assert all("*" not in action for action in actions), statement
                if actions == ["dynamodb:ListStreams"]:  # IAM scopes it to no resource
                    assert statement["Resource"] == "*"
                    continue
                # No wildcard, but for the ":*" of a function's own log streams.
                assert "*" not in str(statement["Resource"]).removesuffix(":*"), statement


def test_the_completion_filter_passes_a_transition_to_acked_only() -> None:
    """An "exists" rule matches a leaf only: a rule on ``acked_at`` itself (an object,
    ``{"N": ...}``) would let through every later change of an acked chain."""
    template = load_template(TEMPLATE)
    mapping = template["Resources"]["StreamMapping"]["Properties"]
    patterns = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    acked = {"stamp": {"B": "AA=="}, "version": {"N": "3"}, "acked_at": {"N": "1700000000"}}
    before = {"stamp": {"B": "AQ=="}, "version": {"N": "2"}}
    later = {**acked, "version": {"N": "4"}}

    def passes(old: dict[str, Any], new: dict[str, Any]) -> bool:
        images = {"Keys": {"tagID": {"S": "job-1"}}, "OldImage": old, "NewImage": new}
        record = {"eventName": "MODIFY", "dynamodb": images}
        return any(matches(p, record) for p in patterns)

    assert passes(before, acked)
    assert not passes(acked, later)
    assert not passes(before, {**before, "version": {"N": "3"}})


def _records(messages: list[dict[str, Any]]) -> dict[str, Any]:
    template = json.loads((FIXTURES / "sqs_event.json").read_text())["Records"][0]
    records = []
    for message in messages:
        record = copy.deepcopy(template)
        record["messageId"] = message["MessageId"]
        record["body"] = message["Body"]
        records.append(record)
    return {"Records": records}


@pytest.mark.ddblocal
def test_the_handlers_run_a_job_to_its_continuation_on_the_stacks_queues(
    stack: dict[str, str],
    moto_endpoint: str,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The stack's queues on moto; the chains on DynamoDB Local: moto feeds its table's stream
    # to the stream's Lambda mapping by JSON-encoding items, and answers 500 for one with a
    # binary attribute (every chain has some).
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb_local_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", moto_endpoint)
    monkeypatch.setenv("XOR_ACK_TABLE", ddb_table.name)
    monkeypatch.setenv("XOR_ACK_QUEUE_URL", stack["WorkQueueUrl"])
    monkeypatch.setenv("XOR_ACK_CONTINUATION_QUEUE_URL", stack["CompletedQueueUrl"])
    monkeypatch.setenv("XOR_ACK_HANDLER", "xor_ack_dynamodb.fleet.examples:countdown")
    # moto would hand the queue's messages and the stream's records to its own mappings,
    # whose invocations need Docker: remove them, and be the mappings here.
    lam = _client("lambda", moto_endpoint)
    for mapping in lam.list_event_source_mappings()["EventSourceMappings"]:
        if stack["name"] in mapping["FunctionArn"]:
            lam.delete_event_source_mapping(UUID=mapping["UUID"])

    async def submit() -> None:
        async with (
            sqs_client(endpoint=moto_endpoint, region_name=REGION) as sqs,
            Fleet.connect(
                table=ddb_table.name,
                endpoint_url=ddb_local_endpoint,
                region_name=REGION,
                handler=lambda message: [],
                send=SqsSender(sqs, stack["WorkQueueUrl"]),
            ) as fleet,
        ):
            await fleet.submit("stack-job", 2)  # 7 messages

    asyncio.run(submit())
    queue = _client("sqs", moto_endpoint)
    handled = 0
    try:
        for _ in range(20):
            messages = queue.receive_message(
                QueueUrl=stack["WorkQueueUrl"], MaxNumberOfMessages=10, WaitTimeSeconds=0
            ).get("Messages", [])
            if not messages:
                break
            assert lambda_entry.work(_records(messages), None) == {"batchItemFailures": []}
            for message in messages:
                queue.delete_message(
                    QueueUrl=stack["WorkQueueUrl"], ReceiptHandle=message["ReceiptHandle"]
                )
            handled += len(messages)
    finally:
        lambda_entry._work().close()
        lambda_entry._work.cache_clear()
    assert handled == 7
    done = queue.receive_message(QueueUrl=stack["CompletedQueueUrl"], WaitTimeSeconds=1)
    (message,) = done["Messages"]
    body = json.loads(message["Body"])
    assert body["tag"] == "stack-job" and len(body["continuation_id"]) == 32


@pytest.mark.ddblocal
def test_the_dead_letter_function_runs_the_continuation_of_an_acked_job(
    stack: dict[str, str],
    moto_endpoint: str,
    ddb_local_endpoint: str,
    ddb_table: TableSpec,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A message that acked its job but whose continuation failed on every receive reaches
    the dead-letter function, which (docs/fleet.md) runs the continuation before the letter
    is deleted: with the environment and the role the stack gives that function."""
    lam = _client("lambda", moto_endpoint)
    config = lam.get_function_configuration(FunctionName=f"{stack['name']}-dead-letters")
    for name, value in config["Environment"]["Variables"].items():
        monkeypatch.setenv(name, value)
    # the chains on DynamoDB Local (as in the test above); the queues are the stack's
    monkeypatch.setenv("XOR_ACK_TABLE", ddb_table.name)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb_local_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", moto_endpoint)
    for mapping in lam.list_event_source_mappings()["EventSourceMappings"]:
        if stack["name"] in mapping["FunctionArn"]:
            lam.delete_event_source_mapping(UUID=mapping["UUID"])
    queue = _client("sqs", moto_endpoint)

    async def ack_the_job_without_its_continuation() -> None:
        async with (
            sqs_client(endpoint=moto_endpoint, region_name=REGION) as sqs,
            Fleet.connect(
                table=ddb_table.name,
                endpoint_url=ddb_local_endpoint,
                region_name=REGION,
                handler=lambda message: [],
                send=SqsSender(sqs, stack["WorkQueueUrl"]),
            ) as fleet,
        ):
            await fleet.submit("dead-acked-job", 0)
            (root,) = queue.receive_message(QueueUrl=stack["WorkQueueUrl"])["Messages"]
            await fleet.handle(root["Body"])  # acks the job; no continuation ran
            state = await fleet.ack.get("dead-acked-job")
            assert state is not None and state.acked
            dead.append(root)

    dead: list[dict[str, Any]] = []
    asyncio.run(ack_the_job_without_its_continuation())
    try:
        assert lambda_entry.dead_letters(_records(dead), None) == {"batchItemFailures": []}
    finally:
        lambda_entry._dead_letters().close()
        lambda_entry._dead_letters.cache_clear()
    done = queue.receive_message(QueueUrl=stack["CompletedQueueUrl"], WaitTimeSeconds=1)
    assert [json.loads(m["Body"])["tag"] for m in done.get("Messages", [])] == ["dead-acked-job"]
    # and the function's role may send there
    iam = _client("iam", moto_endpoint)
    role = config["Role"].rsplit("/", 1)[1]
    (policy,) = iam.list_role_policies(RoleName=role)["PolicyNames"]
    document = iam.get_role_policy(RoleName=role, PolicyName=policy)["PolicyDocument"]
    document = ast.literal_eval(document) if isinstance(document, str) else document
    completed = queue.get_queue_attributes(
        QueueUrl=stack["CompletedQueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    granted = [s["Action"] for s in document["Statement"] if s["Resource"] == completed]
    assert "sqs:SendMessage" in str(granted)
