"""xor_ack_dynamodb.dynamodb.aws: where a client's region, endpoint and credentials come from."""

from __future__ import annotations

from pathlib import Path

import aioboto3
import boto3
import pytest

from xor_ack_dynamodb import SyncXorAckDynamoDB, XorAckDynamoDB
from xor_ack_dynamodb.dynamodb import aws
from xor_ack_dynamodb.dynamodb.aws import async_client, sync_client
from xor_ack_dynamodb.errors import RegionMissing, XorAckError
from xor_ack_dynamodb.retry import botocore_config
from xor_ack_dynamodb.spark.tracker import TrackerConfig

_VARIABLES = (
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No AWS variable set, and an AWS config file with a `regional` profile."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    config.write_text("[profile regional]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    return monkeypatch


async def test_a_misspelled_connect_option_is_named_before_the_region_is_looked_for(
    env: pytest.MonkeyPatch,
) -> None:
    """``connect(endpoint=...)`` (for ``endpoint_url``): with no region set, ``RegionMissing``
    (the typo ignored, the user sent to AWS's settings); with one, botocore's TypeError
    naming ``ClientBase.__init__``."""
    from xor_ack_dynamodb.errors import InvalidArgument

    said = r"no option 'endpoint': .*endpoint_url"
    url = "http://127.0.0.1:1"
    with (
        pytest.raises(InvalidArgument, match=said),
        SyncXorAckDynamoDB.connect(table="t", endpoint=url),  # type: ignore[call-arg]
    ):
        pass
    with pytest.raises(InvalidArgument, match=said):
        async with XorAckDynamoDB.connect(table="t", endpoint=url):  # type: ignore[call-arg]
            pass


@pytest.mark.parametrize(
    ("variables", "argument", "expected"),
    [
        ({"AWS_REGION": "eu-west-2"}, None, "eu-west-2"),  # botocore alone ignores it
        ({"AWS_DEFAULT_REGION": "eu-west-1"}, None, "eu-west-1"),
        ({"AWS_REGION": "eu-west-2", "AWS_DEFAULT_REGION": "eu-west-1"}, None, "eu-west-2"),
        ({"AWS_PROFILE": "regional"}, None, "ap-south-1"),
        ({"AWS_PROFILE": "regional", "AWS_DEFAULT_REGION": "eu-west-1"}, None, "eu-west-1"),
        ({"AWS_PROFILE": "regional", "AWS_REGION": "eu-west-2"}, None, "eu-west-2"),
        ({"AWS_REGION": "eu-west-2", "AWS_DEFAULT_REGION": "eu-west-1"}, "sa-east-1", "sa-east-1"),
        ({"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}, None, "us-east-1"),
        ({"AWS_ENDPOINT_URL": "http://localhost:8000"}, None, "us-east-1"),
        # all of 127.0.0.0/8 is loopback: 127.0.0.2 was RegionMissing
        ({"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.2:8000"}, None, "us-east-1"),
        (
            {"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_REGION": "eu-west-2"},
            None,
            "eu-west-2",
        ),
    ],
)
def test_region_precedence(
    env: pytest.MonkeyPatch, variables: dict[str, str], argument: str | None, expected: str
) -> None:
    for name, value in variables.items():
        env.setenv(name, value)
    client = sync_client(region_name=argument)
    assert client.meta.region_name == expected


def test_a_sessions_own_region_beats_the_environment(env: pytest.MonkeyPatch) -> None:
    env.setenv("AWS_REGION", "eu-west-2")
    session = boto3.session.Session(region_name="ca-central-1")
    assert sync_client(session=session).meta.region_name == "ca-central-1"
    assert aws.region(session=boto3.session.Session()) == "eu-west-2"


@pytest.mark.parametrize(
    "variables",
    [{}, {"AWS_ENDPOINT_URL_DYNAMODB": "https://dynamodb.example.com"}],
)
def test_no_region_anywhere_is_a_typed_error_naming_both_variables(
    env: pytest.MonkeyPatch, variables: dict[str, str]
) -> None:
    for name, value in variables.items():
        env.setenv(name, value)
    with pytest.raises(RegionMissing) as caught:
        sync_client()
    assert isinstance(caught.value, XorAckError)
    assert caught.value.code == "RegionMissing"
    assert "AWS_REGION" in str(caught.value)
    assert "AWS_DEFAULT_REGION" in str(caught.value)
    with pytest.raises(RegionMissing):
        async_client()


@pytest.mark.parametrize(
    ("variables", "argument", "expected"),
    [
        ({}, None, "https://dynamodb.eu-west-1.amazonaws.com"),
        ({"AWS_ENDPOINT_URL": "http://127.0.0.1:9001"}, None, "http://127.0.0.1:9001"),
        ({"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9002"}, None, "http://127.0.0.1:9002"),
        (
            {
                "AWS_ENDPOINT_URL": "http://127.0.0.1:9001",
                "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9002",
            },
            None,
            "http://127.0.0.1:9002",
        ),
        (
            {"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9002"},
            "http://127.0.0.1:9003",
            "http://127.0.0.1:9003",
        ),
        (
            {
                "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9002",
                "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true",
            },
            None,
            "https://dynamodb.eu-west-1.amazonaws.com",
        ),
    ],
)
def test_endpoint_precedence(
    env: pytest.MonkeyPatch, variables: dict[str, str], argument: str | None, expected: str
) -> None:
    env.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    for name, value in variables.items():
        env.setenv(name, value)
    assert sync_client(endpoint=argument).meta.endpoint_url == expected
    assert (aws.endpoint_url(argument) or "https://dynamodb.eu-west-1.amazonaws.com") == expected


def test_only_an_explicit_endpoint_is_passed_to_botocore(env: pytest.MonkeyPatch) -> None:
    """botocore resolves the environment's endpoints itself: passing them too would double it."""
    env.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9002")
    assert "endpoint_url" not in aws.client_options()
    assert aws.client_options(endpoint="http://127.0.0.1:1")["endpoint_url"] == "http://127.0.0.1:1"


def test_loopback_without_credentials_signs_with_dummy_ones(env: pytest.MonkeyPatch) -> None:
    env.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000")
    credentials = sync_client()._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == ("local", "local")
    env.setenv("AWS_ACCESS_KEY_ID", "mine")
    env.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    assert sync_client()._request_signer._credentials.access_key == "mine"


def test_a_remote_endpoint_never_gets_dummy_credentials(env: pytest.MonkeyPatch) -> None:
    options = aws.client_options(endpoint="https://dynamodb.example.com", region_name="eu-west-1")
    assert "aws_access_key_id" not in options
    forced = aws.client_options(region_name="eu-west-1", local_credentials=True)
    assert forced["aws_access_key_id"] == "local"


def test_the_default_config_retries_in_standard_mode(env: pytest.MonkeyPatch) -> None:
    client = sync_client(region_name="eu-west-1")
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 11}
    assert client.meta.config.connect_timeout == 5
    assert botocore_config(retries={"max_attempts": 3}).retries == {"max_attempts": 3}
    # Each variable replaces its own part only: AWS_MAX_ATTEMPTS alone switched the clients
    # to botocore's legacy mode, AWS_RETRY_MODE=standard alone cut 11 sends to 3.
    env.setenv("AWS_MAX_ATTEMPTS", "2")
    retries = sync_client(region_name="eu-west-1").meta.config.retries
    assert retries == {"mode": "standard", "total_max_attempts": 2}
    env.delenv("AWS_MAX_ATTEMPTS")
    env.setenv("AWS_RETRY_MODE", "adaptive")
    retries = sync_client(region_name="eu-west-1").meta.config.retries
    assert retries == {"mode": "adaptive", "total_max_attempts": 11}


async def test_the_async_connect_reads_aws_region(env: pytest.MonkeyPatch) -> None:
    env.setenv("AWS_REGION", "eu-west-2")
    env.setenv("AWS_ENDPOINT_URL_DYNAMODB", "https://dynamodb.example.com")
    async with XorAckDynamoDB.connect(table="t") as ack:
        assert ack._client.meta.region_name == "eu-west-2"
        assert ack._client.meta.endpoint_url == "https://dynamodb.example.com"
    async with async_client(session=aioboto3.Session(region_name="us-west-1")) as client:
        assert client.meta.region_name == "us-west-1"


def test_the_sync_connect_and_the_tracker_read_aws_region(env: pytest.MonkeyPatch) -> None:
    env.setenv("AWS_REGION", "eu-west-2")
    with SyncXorAckDynamoDB.connect(table="t") as ack:
        assert ack._client.meta.region_name == "eu-west-2"
    assert TrackerConfig(table="t").client().meta.region_name == "eu-west-2"
    env.delenv("AWS_REGION")
    with pytest.raises(RegionMissing):
        TrackerConfig(table="t").client()
    local = TrackerConfig(table="t", endpoint_url="http://127.0.0.1:8000", local_credentials=True)
    assert local.client().meta.region_name == "us-east-1"


def test_what_an_aws_error_says_is_read_in_one_place() -> None:
    from botocore.exceptions import ClientError, EndpointConnectionError

    raw = {"tagID": {"S": "t"}}
    reasons = [{"Code": "ConditionalCheckFailed", "Item": raw}, {}]
    cancelled = ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
            "CancellationReasons": reasons,
            "Item": raw,
        },
        "TransactWriteItems",
    )
    assert aws.error_code(cancelled) == "TransactionCanceledException"
    assert aws.error_message(cancelled) == "cancelled"
    assert aws.http_status(cancelled) == 400
    assert aws.condition_item(cancelled) == raw
    found = aws.cancellation_reasons(cancelled)
    assert [aws.cancellation_code(reason) for reason in found] == [
        "ConditionalCheckFailed",
        "None",  # an item AWS gave no code for was fine
    ]
    bare = ClientError({}, "UpdateItem")  # an error built by hand, without a body
    assert (aws.error_code(bare), aws.error_message(bare), aws.http_status(bare)) == (
        "",
        "",
        None,
    )
    assert aws.condition_item(bare) is None and aws.cancellation_reasons(bare) == []
    assert aws.error_code(EndpointConnectionError(endpoint_url="http://127.0.0.1:1")) == ""
