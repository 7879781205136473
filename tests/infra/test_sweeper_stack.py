"""infra/sweeper.yaml: lint-clean, and deployed in moto's CloudFormation next to the table
stack it sweeps: a function whose handler, environment and role are the sweeper's, invoked
by an EventBridge schedule.  moto cannot run the function (no container here), so the test
calls the handler in-process with the environment the stack gave the function; it also drops
a role's ManagedPolicyArns, which are checked on the template instead."""

from __future__ import annotations

import io
import json
import time
import uuid
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]
from cfnlint.helpers import REGIONS  # type: ignore[import-untyped]

from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp, sweeper

from .cfn import ROOT, Resolver, load_template
from .test_stack import Stack, _client, _drop

TEMPLATE = ROOT / "infra" / "sweeper.yaml"


def test_cfn_lint_passes_in_every_region() -> None:
    matches = lint(TEMPLATE.read_text(), config=ManualArgs(include_checks=["I"], regions=REGIONS))
    assert [str(m) for m in matches] == []


def test_the_function_runs_the_sweeper_handler_with_the_table_s_settings() -> None:
    template = load_template(TEMPLATE)
    resolver = Resolver(
        template,
        TableName="jobs",
        PartitionKeyName="fileID",
        SweeperPolicyArn="arn:aws:iam::123456789012:policy/sweep",
        CodeS3Bucket="b",
        CodeS3Key="k",
    )
    function = resolver.resource("SweeperFunction")["Properties"]
    assert function["Handler"] == f"{sweeper.__name__}.{sweeper.handler.__name__}"
    assert function["Timeout"] == 60  # FunctionTimeout's default
    assert function["Environment"]["Variables"] == {
        sweeper.ENV_TABLE: "jobs",
        sweeper.ENV_PARTITION_KEY: "fileID",
    }
    role = resolver.resource("SweeperRole")["Properties"]
    assert role["ManagedPolicyArns"] == [
        "arn:aws:iam::123456789012:policy/sweep",
        "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    ]
    rule = resolver.resource("SweeperSchedule")["Properties"]
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert rule["Targets"][0]["Arn"] == "SweeperFunction.Arn"


@pytest.mark.parametrize(
    ("template_name", "function"),
    [("sweeper.yaml", "SweeperFunction"), ("fleet.yaml", "SweeperFunction")],
)
def test_a_failed_sweep_is_not_run_again_by_lambda(template_name: str, function: str) -> None:
    """The rule's RetryPolicy covers EventBridge handing the event over; Lambda then runs an
    asynchronous invocation that failed or timed out twice more by default.  A sweep on a
    backlog that timed out ran three times, beside the next minute's."""
    template = load_template(ROOT / "infra" / template_name)
    configs = [
        resource["Properties"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::EventInvokeConfig"
    ]
    assert configs == [
        {"FunctionName": {"Ref": function}, "Qualifier": "$LATEST", "MaximumRetryAttempts": 0}
    ]


@pytest.fixture
def table_stack(moto_endpoint: str) -> Iterator[Stack]:
    made = Stack(moto_endpoint)
    yield made
    _drop(made)


def _deploy(endpoint: str, parameters: dict[str, str]) -> dict[str, str]:
    cfn = _client("cloudformation", endpoint)
    name = f"sweeper-{uuid.uuid4().hex[:10]}"
    cfn.create_stack(
        StackName=name,
        TemplateBody=TEMPLATE.read_text(),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
        Capabilities=["CAPABILITY_IAM"],
    )
    cfn.get_waiter("stack_create_complete").wait(
        StackName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}


def _code_zip() -> bytes:
    """A stand-in for the function's package (moto stores it, never runs it)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("xor_ack_dynamodb/__init__.py", "")
    return buffer.getvalue()


def test_sweeper_stack_in_moto(
    table_stack: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint = table_stack.endpoint
    s3 = _client("s3", endpoint)
    bucket = f"code-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="sweeper.zip", Body=_code_zip())
    outputs = _deploy(
        endpoint,
        {
            "TableName": table_stack.outputs["TableName"],
            "PartitionKeyName": table_stack.outputs["PartitionKeyName"],
            "SweeperPolicyArn": table_stack.outputs["SweeperPolicyArn"],
            "CodeS3Bucket": bucket,
            "CodeS3Key": "sweeper.zip",
        },
    )
    lam = _client("lambda", endpoint)
    config = lam.get_function_configuration(FunctionName=outputs["FunctionName"])
    assert config["Handler"] == "xor_ack_dynamodb.sweeper.handler"
    environment: dict[str, str] = config["Environment"]["Variables"]
    assert environment == {
        "XOR_ACK_TABLE": table_stack.table,
        "XOR_ACK_PARTITION_KEY": "tagID",
    }
    # moto's CloudFormation drops a role's ManagedPolicyArns: the template test checks them
    role = _client("iam", endpoint).get_role(RoleName=config["Role"].rsplit("/", 1)[1])["Role"]
    trust = role["AssumeRolePolicyDocument"]
    trust = json.loads(trust) if isinstance(trust, str) else trust
    assert trust["Statement"][0]["Principal"] == {"Service": "lambda.amazonaws.com"}
    events = _client("events", endpoint)
    rule_name = outputs["ScheduleRuleArn"].rsplit("/", 1)[1]
    assert events.describe_rule(Name=rule_name)["ScheduleExpression"] == "rate(1 minute)"
    (target,) = events.list_targets_by_rule(Rule=rule_name)["Targets"]
    assert target["Arn"] == outputs["FunctionArn"]
    invoke = json.loads(lam.get_policy(FunctionName=outputs["FunctionName"])["Policy"])
    (grant,) = invoke["Statement"]
    assert grant["Principal"] == {"Service": "events.amazonaws.com"}

    # The handler, with the function's environment, sweeps the stack's table.
    ack = SyncXorAckDynamoDB(_client("dynamodb", endpoint), table=table_stack.table)
    ack.create("late", new_stamp(), timeout=0.3)
    time.sleep(0.5)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
    summary: dict[str, Any] = sweeper.handler({}, None)
    assert (summary["table"], summary["tags"]) == (table_stack.table, ["late"])
    assert json.loads(capsys.readouterr().out)["failed"] == 1
