"""The direct path (``dynamodb/_direct.py``): the same requests and answers as botocore's.

- Signatures: each one equal to botocore's ``SigV4Auth`` on the same request.
- Answers and errors: the same request sent directly and through botocore, against
  DynamoDB Local, gives the same parsed answer, or a ``ClientError`` with the same
  code, message and fields (items with blobs, sets, maps, lists).
- Failures it leaves to botocore (a scripted HTTP peer): a throttle, a 5xx, a bad
  CRC32, a dropped connection go again through botocore; the answer is marked as
  following a send that may have landed exactly where the direct send may have.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any
from unittest import mock

import aioboto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, EndpointConnectionError

from xor_ack_dynamodb import XorAckDynamoDB, new_stamp
from xor_ack_dynamodb.dynamodb._attempts import may_have_landed, watch
from xor_ack_dynamodb.dynamodb._direct import Direct, decode, encode
from xor_ack_dynamodb.dynamodb._sigv4 import Signer
from xor_ack_dynamodb.dynamodb.aws import botocore_config
from xor_ack_dynamodb.table import TableSpec

# -- signatures ------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "FwoGZXIvYXdzEJr//////////token="])
@pytest.mark.parametrize("host", ["127.0.0.1:8000", "dynamodb.eu-west-1.amazonaws.com"])
def test_each_signature_is_botocores(token: str | None, host: str) -> None:
    body = encode({"TableName": "t", "Key": {"tagID": {"S": "a b/ü"}}})
    now = 1_795_000_000.5
    ours = Signer("eu-west-1").headers(
        host=host,
        target="DynamoDB_20120810.GetItem",
        body=body,
        access_key="AKIDEXAMPLE",
        secret_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        token=token,
        now=now,
    )
    request = AWSRequest(
        method="POST",
        url=f"https://{host}/",
        data=body,
        headers={
            "Content-Type": ours["content-type"],
            "X-Amz-Target": ours["x-amz-target"],
            "Host": host,
        },
    )
    auth = SigV4Auth(
        Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token),
        "dynamodb",
        "eu-west-1",
    )
    moment = datetime.datetime.fromtimestamp(now, datetime.UTC).replace(tzinfo=None)
    with mock.patch("botocore.auth.get_current_datetime", return_value=moment):
        auth.add_auth(request)
    assert ours["authorization"] == request.headers["Authorization"]
    assert ours["x-amz-date"] == request.headers["X-Amz-Date"]


def test_the_days_key_is_derived_once_per_day() -> None:
    signer = Signer("us-east-1")
    sign: Callable[[float], dict[str, str]] = lambda now: signer.headers(  # noqa: E731
        host="h", target="T", body=b"{}", access_key="a", secret_key="s", now=now
    )
    sign(0.0), sign(3600.0), sign(86_400.0)
    assert len(signer._keys) == 2


# -- the same answers as botocore's, from DynamoDB Local ----------------------------


def _item(tag: str) -> dict[str, Any]:
    return {
        "tagID": {"S": tag},
        "stamp": {"B": b"\x00\xff" * 8},
        "tokens": {"BS": [b"\x01", b"\x02\x03"]},
        "n": {"N": "3"},
        "nested": {"M": {"B": {"L": [{"B": b"\x7f"}, {"S": "x"}, {"NULL": True}]}}},
    }


@contextlib.asynccontextmanager
async def _client(endpoint: str) -> AsyncIterator[Any]:
    session = aioboto3.Session()
    async with session.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
    ) as client:
        watch(client)  # as the chains client does with the client it is given
        yield client


def _comparable(outcome: Any) -> Any:
    """An answer or error without what differs between two sends (ids, dates, lengths)."""
    if isinstance(outcome, ClientError):
        outcome = {"error": True, **outcome.response}
    outcome = dict(outcome)
    meta = outcome.pop("ResponseMetadata")
    return outcome, meta["HTTPStatusCode"]


async def _both(client: Any, direct: Direct, method: str, params: dict[str, Any]) -> list[Any]:
    outcomes = []
    for send in (
        lambda: getattr(client, method)(**params),
        lambda: direct.call(method, params),
    ):
        try:
            outcomes.append(_comparable(await send()))
        except ClientError as exc:
            outcomes.append(_comparable(exc))
    return outcomes


async def test_answers_and_errors_equal_botocores(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    table = ddb_table.name
    async with _client(ddb_local_endpoint) as client:
        direct = Direct.of(client)
        assert direct is not None
        await client.put_item(TableName=table, Item=_item("a"))
        cases: list[tuple[str, dict[str, Any]]] = [
            (
                "get_item",
                {"TableName": table, "Key": {"tagID": {"S": "a"}}, "ConsistentRead": True},
            ),
            ("get_item", {"TableName": table, "Key": {"tagID": {"S": "none"}}}),
            (
                "update_item",
                {
                    "TableName": table,
                    "Key": {"tagID": {"S": "a"}},
                    "UpdateExpression": "SET n = :n",
                    "ExpressionAttributeValues": {":n": {"N": "3"}},
                    "ReturnValues": "ALL_NEW",
                },
            ),
            (
                "update_item",  # a failed condition returning the item as it is
                {
                    "TableName": table,
                    "Key": {"tagID": {"S": "a"}},
                    "UpdateExpression": "SET n = :n",
                    "ConditionExpression": "attribute_not_exists(tagID)",
                    "ExpressionAttributeValues": {":n": {"N": "7"}},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                },
            ),
            (
                "transact_write_items",  # cancelled, with the item of the failed condition
                {
                    "TransactItems": [
                        {
                            "Update": {
                                "TableName": table,
                                "Key": {"tagID": {"S": "a"}},
                                "UpdateExpression": "SET n = :n",
                                "ConditionExpression": "n = :zero",
                                "ExpressionAttributeValues": {
                                    ":n": {"N": "4"},
                                    ":zero": {"N": "0"},
                                },
                                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                            }
                        },
                        {
                            "ConditionCheck": {
                                "TableName": table,
                                "Key": {"tagID": {"S": "b"}},
                                "ConditionExpression": "attribute_not_exists(tagID)",
                            }
                        },
                    ]
                },
            ),
            (
                "batch_execute_statement",  # one statement lands, one fails its condition
                {
                    "Statements": [
                        {
                            "Statement": f'UPDATE "{table}" SET n = ? WHERE tagID = ? AND n = ?',
                            "Parameters": [{"N": "3"}, {"S": "a"}, {"N": "3"}],
                        },
                        {
                            "Statement": f'UPDATE "{table}" SET n = ? WHERE tagID = ? AND n = ?',
                            "Parameters": [{"N": "5"}, {"S": "a"}, {"N": "9"}],
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        },
                    ]
                },
            ),
            (
                "delete_item",
                {"TableName": table, "Key": {"tagID": {"S": "gone"}}, "ReturnValues": "ALL_OLD"},
            ),
            ("get_item", {"TableName": "no-such-table", "Key": {"tagID": {"S": "a"}}}),
            (
                "update_item",
                {"TableName": table, "Key": {"tagID": {"S": "a"}}, "UpdateExpression": "SET"},
            ),
        ]
        for method, params in cases:
            botocores, directs = await _both(client, direct, method, params)
            assert directs == botocores, method
        assert direct.sent == len(cases) and direct.passed_on == 0


def test_encode_and_decode_are_inverse_on_items() -> None:
    body = json.loads(encode({"Item": _item("a")}))
    assert body["Item"]["stamp"] == {"B": "AP8A/wD/AP8A/wD/AP8A/w=="}
    assert decode(body) == {"Item": _item("a")}


def test_a_value_json_cannot_carry_is_refused_before_sending() -> None:
    with pytest.raises(TypeError, match="cannot send set"):
        encode({"Item": {"x": {"B": {1}}}})


# -- what it leaves to botocore: a scripted HTTP peer -------------------------------

Reply = Callable[[bytes], bytes | None]  # the request body -> raw response, None: hang up


def _http(status: int, body: dict[str, Any], *, crc: int | None = None) -> bytes:
    raw = json.dumps(body).encode()
    reason = {200: "OK", 400: "Bad Request", 500: "Internal Server Error"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/x-amz-json-1.0\r\n"
        f"x-amzn-RequestId: r\r\nx-amz-crc32: {zlib.crc32(raw) if crc is None else crc}\r\n"
        f"Content-Length: {len(raw)}\r\n\r\n"
    )
    return head.encode() + raw


OK = _http(200, {"Attributes": {"tagID": {"S": "a"}, "stamp": {"B": "AQI="}}})
THROTTLED = _http(400, {"__type": "x#ProvisionedThroughputExceededException", "message": "slow"})
FAILED = _http(500, {"__type": "x#InternalServerError", "message": "oops"})
BAD_CRC = _http(200, {"Attributes": {}}, crc=1)
REFUSED = _http(400, {"__type": "x#ConditionalCheckFailedException", "message": "no"})


class Peer:
    """An HTTP/1.1 server on 127.0.0.1 answering each request with the next scripted reply."""

    def __init__(self, script: list[bytes | None]) -> None:
        self.script = list(script)
        self.requests: list[bytes] = []
        self.heads: list[str] = []  # each request's line and headers

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head.decode("latin-1"))
                length = 0
                for line in head.decode("latin-1").split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                self.requests.append(await reader.readexactly(length))
                reply = self.script.pop(0)
                if reply is None:  # read the request, then hang up: it may have landed
                    writer.close()
                    return
                writer.write(reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            yield f"http://127.0.0.1:{port}"


PARAMS = {
    "TableName": "t",
    "Key": {"tagID": {"S": "a"}},
    "UpdateExpression": "SET n = :n",
    "ExpressionAttributeValues": {":n": {"N": "1"}},
}


async def _update(script: list[bytes | None]) -> tuple[Any, Direct, Peer]:
    peer = Peer(script)
    async with peer.running() as url, _client(url) as client:
        direct = Direct.of(client)
        assert direct is not None
        try:
            outcome: Any = await direct.call("update_item", PARAMS)
        except ClientError as exc:
            outcome = exc
        assert not peer.script, "every scripted reply was asked for"
        return outcome, direct, peer


async def test_an_answer_is_decoded_and_sent_once() -> None:
    outcome, direct, peer = await _update([OK])
    assert outcome["Attributes"]["stamp"] == {"B": b"\x01\x02"}
    assert (direct.sent, direct.passed_on, len(peer.requests)) == (1, 0, 1)
    assert not may_have_landed(
        ClientError({"ResponseMetadata": outcome["ResponseMetadata"]}, "UpdateItem")
    )


async def test_a_refusal_is_raised_at_once_not_landed() -> None:
    outcome, direct, _ = await _update([REFUSED])
    assert isinstance(outcome, ClientError)
    # botocore's class of the code, as through botocore (it raised a bare ClientError, so an
    # `except client.exceptions.ConditionalCheckFailedException` missed it)
    assert type(outcome).__name__ == "ConditionalCheckFailedException"
    assert outcome.response["Error"] == {"Code": "ConditionalCheckFailedException", "Message": "no"}
    assert (direct.sent, direct.passed_on) == (1, 0) and not may_have_landed(outcome)


@pytest.mark.parametrize(
    ("first", "landed"),
    [(THROTTLED, False), (FAILED, True), (BAD_CRC, True), (None, True)],
    ids=["throttled", "5xx", "bad-crc32", "connection-dropped"],
)
async def test_what_botocore_would_retry_goes_to_botocore(
    first: bytes | None, landed: bool
) -> None:
    outcome, direct, peer = await _update([first, OK])
    assert outcome["Attributes"]["tagID"] == {"S": "a"}
    assert (direct.sent, direct.passed_on, len(peer.requests)) == (1, 1, 2)
    assert json.loads(peer.requests[0]) == json.loads(peer.requests[1])  # the same, again
    refused_after = ClientError({"ResponseMetadata": outcome["ResponseMetadata"]}, "UpdateItem")
    assert may_have_landed(refused_after) is landed


@pytest.mark.parametrize(("first", "landed"), [(THROTTLED, False), (None, True)])
async def test_an_error_after_the_hand_over_keeps_whether_a_send_may_have_landed(
    first: bytes | None, landed: bool
) -> None:
    outcome, _, _ = await _update([first, REFUSED])
    assert isinstance(outcome, ClientError)
    assert may_have_landed(outcome) is landed


async def test_a_connection_never_opened_is_not_landed() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()  # nothing listens on the port now
    config = botocore_config(
        retries={"mode": "standard", "total_max_attempts": 2}, connect_timeout=1
    )
    async with aioboto3.Session().client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        config=config,
    ) as client:
        watch(client)
        direct = Direct.of(client)
        assert direct is not None
        with pytest.raises(EndpointConnectionError) as caught:
            await direct.call("update_item", PARAMS)
    assert not may_have_landed(caught.value) and direct.passed_on == 1


# -- when it is taken -----------------------------------------------------------------


async def test_connect_takes_it_and_the_constructor_only_when_asked(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    async with XorAckDynamoDB.connect(table=ddb_table.name, endpoint_url=ddb_local_endpoint) as ack:
        assert ack._direct is not None
        root, child = new_stamp(), new_stamp()
        await ack.create("job", root)
        await ack.stamp("job", ack.xor(root, child))
        assert (await ack.stamp("job", child)).acked
        assert ack._direct.sent == sum(ack.stats.requests.values()) == 3
    async with XorAckDynamoDB.connect(
        table=ddb_table.name, endpoint_url=ddb_local_endpoint, direct=False
    ) as ack:
        assert ack._direct is None
    async with _client(ddb_local_endpoint) as client:
        assert XorAckDynamoDB(client, table=ddb_table.name)._direct is None
        assert XorAckDynamoDB(client, table=ddb_table.name, direct=True)._direct is not None


@pytest.mark.parametrize(
    "config",
    [
        {"use_fips_endpoint": True},
        {"retries": {"mode": "standard", "total_max_attempts": 1}},
    ],
    ids=["fips", "one-attempt"],
)
async def test_clients_it_cannot_serve_keep_botocore(config: dict[str, Any]) -> None:
    async with aioboto3.Session().client(
        "dynamodb", region_name="us-east-1", config=botocore_config(**config)
    ) as client:
        assert Direct.of(client) is None


# -- what botocore does that the direct path must do alike ------------------------------


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (
            {"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"},
            400,
            "ConditionalCheckFailedException",
        ),
        # the JSON protocol allows a URI after the code: a throttle read as another code
        # was raised at once instead of retried
        (
            {"__type": "x#ProvisionedThroughputExceededException:http://internal/x/"},
            400,
            "ProvisionedThroughputExceededException",
        ),
        ({"message": "from a proxy"}, 403, "403"),  # no __type: the status, as botocore
    ],
    ids=["namespaced", "with-a-uri", "no-type"],
)
def test_error_codes_are_read_as_botocore_reads_them(
    body: dict[str, Any], status: int, code: str
) -> None:
    from xor_ack_dynamodb.dynamodb._direct import error_code

    assert error_code(body, status) == code


async def test_the_direct_path_signs_for_botocores_region_and_sends_the_users_agent() -> None:
    """``region_name="local"`` signs for us-east-1 (DynamoDB Local without -sharedDb keeps a
    database per signing region: the direct writes went to another one than botocore's, and
    the table was not found); a config's ``user_agent_extra`` and app id were dropped."""
    from botocore.config import Config

    async with aioboto3.Session().client(
        "dynamodb", region_name="local", aws_access_key_id="a", aws_secret_access_key="b"
    ) as local:
        direct = Direct.of(local)
        assert direct is not None and direct._signer.region == "us-east-1"
    peer = Peer([OK])
    config = Config(user_agent_extra="my-app/1.0", user_agent_appid="billing")
    async with (
        peer.running() as url,
        aioboto3.Session().client(
            "dynamodb", endpoint_url=url, region_name="us-east-1", config=config
        ) as client,
    ):
        direct = Direct.of(client)
        assert direct is not None
        await direct.call("get_item", {"TableName": "t", "Key": {"tagID": {"S": "a"}}})
    agent = [line for line in peer.heads[0].split("\r\n") if line.lower().startswith("user-agent")]
    assert agent and "my-app/1.0" in agent[0] and "app/billing" in agent[0]


async def test_adaptive_retries_keep_botocores_path() -> None:
    """Adaptive mode's rate limiter waits on botocore's send events, which the direct path
    does not fire: every first send went out at full rate under throttling."""
    config = botocore_config(retries={"mode": "adaptive", "total_max_attempts": 3})
    async with aioboto3.Session().client(
        "dynamodb", endpoint_url="http://127.0.0.1:9", region_name="us-east-1", config=config
    ) as client:
        assert Direct.of(client) is None
