"""infra/events.yaml: lint-clean, least privilege, and filter criteria that let exactly the
records with events through (evaluated against the event fixtures with a pattern matcher)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]
from cfnlint.helpers import REGIONS  # type: ignore[import-untyped]
from streams import samples

from xor_ack_dynamodb import events
from xor_ack_dynamodb.events import transitions

from .cfn import ROOT, load_template
from .event_patterns import matches

TEMPLATE = ROOT / "infra" / "events.yaml"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


def patterns(template: dict[str, Any]) -> list[dict[str, Any]]:
    mapping = template["Resources"]["StreamMapping"]["Properties"]
    return [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]


def test_cfn_lint_passes_in_every_region() -> None:
    matches_ = lint(TEMPLATE.read_text(), config=ManualArgs(include_checks=["I"], regions=REGIONS))
    assert [str(m) for m in matches_] == []


def test_the_mapping_bounds_retries_and_reports_partial_batches(template: dict[str, Any]) -> None:
    mapping = template["Resources"]["StreamMapping"]["Properties"]
    assert mapping["EventSourceArn"] == {"Ref": "StreamArn"}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == {"Ref": "MaximumRetryAttempts"}
    assert template["Parameters"]["MaximumRetryAttempts"]["Default"] < 100
    assert mapping["DestinationConfig"]["OnFailure"]["Destination"] == {
        "Fn::GetAtt": ["FailedRecords", "Arn"]
    }
    assert len(mapping["FilterCriteria"]["Filters"]) <= 5  # Lambda's default quota
    assert all(len(f["Pattern"]) <= 4096 for f in mapping["FilterCriteria"]["Filters"])


def test_the_role_is_least_privilege(template: dict[str, Any]) -> None:
    role = template["Resources"]["FunctionRole"]["Properties"]
    assert "ManagedPolicyArns" not in role
    (policy,) = role["Policies"]
    grants = {
        action: statement["Resource"]
        for statement in policy["PolicyDocument"]["Statement"]
        for action in (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
    }
    assert all(s["Effect"] == "Allow" for s in policy["PolicyDocument"]["Statement"])
    assert grants == {
        "dynamodb:DescribeStream": {"Ref": "StreamArn"},
        "dynamodb:GetRecords": {"Ref": "StreamArn"},
        "dynamodb:GetShardIterator": {"Ref": "StreamArn"},
        "dynamodb:ListStreams": "*",  # no resource-level permission exists for it
        "sqs:SendMessage": {"Fn::GetAtt": ["FailedRecords", "Arn"]},
        "logs:CreateLogStream": {"Fn::GetAtt": ["FunctionLogs", "Arn"]},
        "logs:PutLogEvents": {"Fn::GetAtt": ["FunctionLogs", "Arn"]},
    }
    function = template["Resources"]["Function"]["Properties"]
    assert function["Environment"]["Variables"]["XOR_ACK_PARTITION_KEY"] == {
        "Ref": "PartitionKeyName"
    }


def test_a_table_with_a_customer_managed_key_lets_the_function_decrypt_its_stream_only_then(
    template: dict[str, Any],
) -> None:
    """The stream of a table encrypted with a customer managed key is encrypted with it:
    the function may decrypt with that key, and only when one is given."""
    parameter = template["Parameters"]["KmsKeyArn"]
    assert parameter["Default"] == ""
    assert template["Conditions"]["HasKmsKey"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "KmsKeyArn"}, ""]}]
    }
    policy = template["Resources"]["StreamKeyPolicy"]
    assert policy["Condition"] == "HasKmsKey"
    assert policy["Properties"]["Roles"] == [{"Ref": "FunctionRole"}]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == "kms:Decrypt"
    assert statement["Resource"] == {"Ref": "KmsKeyArn"}
    table = load_template(ROOT / "infra" / "table.yaml")["Parameters"]["KmsKeyArn"]
    assert parameter["AllowedPattern"] == table["AllowedPattern"]  # the table stack's value fits


STATES: dict[str, dict[str, Any]] = {
    "live": samples.chain_image("t", version=3),
    "acked": samples.acked("t", version=4),
    "failed": samples.failed("t", version=4),
    "timed_out": samples.failed("t", "timeout", version=4),
}


def every_row() -> list[dict[str, Any]]:
    """A record for every row of the transition tables, and the documented batch."""
    rows = list(samples.life_of_chains())
    for old, new in transitions.SAME_CHAIN:
        rows.append(samples.record("MODIFY", old=STATES[old], new=STATES[new]))
    for state, removal in transitions.REMOVED:
        rows.append(samples.record("REMOVE", old=STATES[state], ttl=removal == "ttl"))
    for old in transitions.REPLACED:
        for new in transitions.NEW_CHAIN:
            image = dict(STATES[new], chain_id={"B": samples.b64(b"\x0f" * 8)}, version={"N": "1"})
            rows.append(
                samples.record("INSERT", new=image)
                if old == "absent"
                else samples.record("MODIFY", old=STATES[old], new=image)
            )
    return rows


def test_filters_let_through_exactly_the_records_with_events(template: dict[str, Any]) -> None:
    filters = patterns(template)
    rows = every_row()
    assert len(rows) > 40
    for record in rows:
        passed = any(matches(p, record) for p in filters)
        assert passed == bool(events.decode(record)), record


def test_the_matcher_follows_eventbridge_semantics() -> None:
    record = {"eventName": "MODIFY", "dynamodb": {"NewImage": {"v": {"N": "1"}}}}
    assert matches({"eventName": ["INSERT", "MODIFY"]}, record)
    assert not matches({"eventName": ["INSERT"]}, record)
    assert matches({"dynamodb": {"NewImage": {"v": {"N": ["1"]}}}}, record)
    assert not matches({"dynamodb": {"NewImage": {"v": {"N": [1]}}}}, record)  # "1" is a string
    assert matches({"dynamodb": {"OldImage": {"v": {"N": [{"exists": False}]}}}}, record)
    assert not matches({"dynamodb": {"OldImage": {"v": {"N": [{"exists": True}]}}}}, record)
    assert matches({"eventName": [{"prefix": "MOD"}]}, record)
    assert matches({"eventName": [{"anything-but": ["REMOVE"]}]}, record)
    assert matches({"n": [{"numeric": [">", 1, "<=", 3]}]}, {"n": 3})
    assert not matches({"n": [{"numeric": [">", 1, "<=", 3]}]}, {"n": 4})
    with pytest.raises(ValueError):
        matches({"eventName": [{"wildcard": "M*"}]}, record)
