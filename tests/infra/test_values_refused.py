"""Values a user gets wrong, refused in the package's words: an endpoint URL that is no URL
(an IPv6 bracket left open, the scheme forgotten), a table spec whose name or key is no
string, a table wait of no seconds, and an endpoint that answers with a web server's
error page.  Each was a bare ValueError / TypeError / AttributeError, a "bug" line, a
refusal after the table was created, or a page's markup as the error line.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from click.testing import CliRunner, Result

from xor_ack_dynamodb import SyncXorAckDynamoDB, XorAckDynamoDB
from xor_ack_dynamodb.cli import cli
from xor_ack_dynamodb.errors import InvalidArgument, XorAckError
from xor_ack_dynamodb.table import InvalidTableSpec, TableSpec, create_table

from .conftest import serving

#: An endpoint URL with its IPv6 bracket left open: a typo of http://[::1]:8000.
OPEN_BRACKET = "http://[::1"


def run(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


def _one_line(result: Result) -> str:
    assert "Traceback" not in result.output, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    "verb",
    [("chain", "get", "x"), ("table", "describe"), ("events", "follow"), ("sweep",)],
)
def test_an_endpoint_url_with_an_open_ipv6_bracket_is_a_usage_error_not_a_bug(
    verb: tuple[str, ...],
) -> None:
    """The user types `xor-ack --endpoint-url http://[::1 chain get x` (the closing bracket
    and port forgotten).  They see `error: unexpected ValueError: Invalid IPv6 URL (a bug:
    please report it ...)`, exit 1.  They should see the usage error every other malformed
    URL gets: `Invalid value for '--endpoint-url': 'http://[::1' is not an http(s) URL`,
    exit 2 (``check_endpoint`` -> ``aws.is_endpoint_url`` lets urlsplit's ValueError out)."""
    result = run("--endpoint-url", OPEN_BRACKET, *verb)
    line = _one_line(result)
    assert "unexpected" not in line and "a bug" not in line, line
    assert result.exit_code == 2, (result.exit_code, line)
    assert "--endpoint-url" in line, line


def test_an_open_ipv6_bracket_in_the_environment_is_named_not_called_a_bug() -> None:
    """The user exports AWS_ENDPOINT_URL_DYNAMODB=http://[::1 and runs `xor-ack table
    describe`.  They see `error: unexpected ValueError: Invalid IPv6 URL (a bug ...)`.  They
    should see the one line `aws.endpoint_url` gives every other malformed value there
    (InvalidArgument naming AWS_ENDPOINT_URL_DYNAMODB), as for `nowhere`."""
    env = {"AWS_ENDPOINT_URL_DYNAMODB": OPEN_BRACKET, "AWS_REGION": "us-east-1"}
    result = run("--table", "review-t", "table", "describe", env=env)
    line = _one_line(result)
    assert "unexpected" not in line and "a bug" not in line, line
    assert "AWS_ENDPOINT_URL_DYNAMODB" in line, line


def test_dashboard_config_refuses_an_open_ipv6_bracket_with_config_error() -> None:
    """The user builds `DashboardConfig(endpoint_url="http://[::1")`.  They get a bare
    ValueError("Invalid IPv6 URL") from urlsplit.  They should get the ConfigError that
    `endpoint_url 'nowhere'` gets (`... is not an http(s) URL`)."""
    from xor_ack_dynamodb.dashboard import ConfigError, DashboardConfig

    with pytest.raises(ConfigError, match="endpoint_url"):
        DashboardConfig(endpoint_url=OPEN_BRACKET)


@pytest.mark.parametrize("url", ["localhost:8000", "127.0.0.1:8000", OPEN_BRACKET])
def test_connect_refuses_an_endpoint_url_that_is_no_url_with_invalid_argument(url: str) -> None:
    """The user writes `SyncXorAckDynamoDB.connect(table="t", endpoint_url="localhost:8000")`
    (the scheme forgotten).  They get botocore's bare `ValueError: Invalid endpoint:
    localhost:8000` (or urlsplit's `Invalid IPv6 URL`).  They should get InvalidArgument
    naming endpoint_url, as the same value in AWS_ENDPOINT_URL_DYNAMODB gets (docs/api.md:
    the clients' options are refused with InvalidArgument naming the option)."""
    connecting = SyncXorAckDynamoDB.connect(table="t", endpoint_url=url, region_name="us-east-1")
    with pytest.raises(InvalidArgument, match="endpoint_url"), connecting:
        pass


async def test_async_connect_refuses_an_endpoint_url_that_is_no_url_with_invalid_argument() -> None:
    """The same with the async client: `async with XorAckDynamoDB.connect(table="t",
    endpoint_url="localhost:8000")` raises a bare ValueError; it should be InvalidArgument."""
    with pytest.raises(InvalidArgument, match="endpoint_url"):
        async with XorAckDynamoDB.connect(
            table="t", endpoint_url="localhost:8000", region_name="us-east-1"
        ):
            pass


@pytest.mark.parametrize(
    "fields", [{"partition_key": None}, {"partition_key": 5}, {"name": None}, {"name": 42}]
)
def test_table_spec_refuses_a_name_or_key_that_is_no_str_with_invalid_table_spec(
    fields: dict[str, object],
) -> None:
    """The user writes `TableSpec(partition_key=None)` (or `name=None`, e.g. from an unset
    setting).  They get a bare AttributeError ('NoneType' object has no attribute 'encode')
    or TypeError (expected string or bytes-like object).  They should get InvalidTableSpec,
    documented for "a table name, key ... DynamoDB would refuse" (DashboardConfig(table=None)
    leaks the same TypeError)."""
    with pytest.raises(InvalidTableSpec):
        TableSpec(**fields)  # type: ignore[arg-type]


def test_create_table_refuses_a_timeout_that_is_no_number_before_creating(
    moto_endpoint: str,
) -> None:
    """The user calls `create_table(client, TableSpec(name), timeout=None)` (meaning "no
    limit").  The table is created, then a bare TypeError (unsupported operand float + None)
    escapes from wait_active: a refusal after the write, outside the vocabulary.  They should
    get a typed error (InvalidArgument / InvalidTimeout) with nothing created."""
    client = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    name = f"review-{uuid.uuid4().hex[:10]}"
    with pytest.raises(XorAckError):
        create_table(client, TableSpec(name=name), timeout=None)  # type: ignore[arg-type]
    with pytest.raises(ClientError, match=r"ResourceNotFound|not found"):
        client.describe_table(TableName=name)


def test_an_endpoint_that_answers_with_an_error_page_is_named_in_the_one_line(
    moto_endpoint: str, moto_table: TableSpec
) -> None:
    """The user points --endpoint-url at a web server that is not DynamoDB and answers with
    an HTML error page (here a path under the endpoint: 404).  They see `error: 404:
    <!doctype html>; <html lang=en>; <title>404 Not Found</title>; ...`: the page's markup,
    nothing that says what to do.  They should see one line naming the endpoint and that it
    is not DynamoDB (as NotDynamoDB does for a 200 page: check --endpoint-url)."""
    endpoint = f"{moto_endpoint}/not-dynamodb"
    result = run("--endpoint-url", endpoint, "--table", moto_table.name, "chain", "get", "x")
    line = _one_line(result)
    assert result.exit_code == 1, line
    assert "<html" not in line.lower(), line
    assert endpoint in line or "--endpoint-url" in line, line


class _Throttling(BaseHTTPRequestHandler):
    """A rate-limiting proxy (Envoy's local rate limit, nginx ``limit_req``) in front of a
    DynamoDB: the first request is turned away with its plain 429, the next passes through
    to a DynamoDB that has no item."""

    calls = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).calls += 1
        if type(self).calls == 1:
            body = b"local_rate_limited"
            self.send_response(429)
            self.send_header("Content-Type", "text/plain")
        else:
            body = b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "application/x-amz-json-1.0")
            self.send_header("x-amzn-RequestId", "REVIEW0000000000000000000000000000000000000000")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def throttling_proxy() -> Iterator[str]:
    _Throttling.calls = 0
    with serving(_Throttling) as url:
        yield url


def test_a_proxys_429_is_retried_not_refused_as_not_dynamodb(
    throttling_proxy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user reaches DynamoDB through a rate-limiting proxy (a service mesh sidecar)
    and runs with botocore's ``legacy`` retry mode (AWS_RETRY_MODE=legacy, which the
    clients honour; its ``too_many_requests`` policy retries any HTTP 429).  The proxy
    turns one request away with its plain-text 429.  Before the change botocore retried
    it and ``get`` answered (no chain: None).  Now ``refuse_no_dynamodb`` raises
    ``NotDynamoDB`` ("not DynamoDB ... nothing was read or written") from the
    ``before-parse`` hook, which no retry handler sees: the request fails for good and
    the message sends the user to check an endpoint that is right.  A 429 (like the 5xx
    the hook leaves to botocore: "a proxy's 503 passes") should stay botocore's."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    config = Config(retries={"mode": "legacy", "max_attempts": 3})
    with SyncXorAckDynamoDB.connect(
        table="review-t", endpoint_url=throttling_proxy, region_name="us-east-1", config=config
    ) as ack:
        assert ack.get("x") is None
    assert _Throttling.calls == 2
