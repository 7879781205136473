"""What a request that failed tells of its sends: never sent (no credentials, a host that
does not resolve, a certificate refused in the TLS handshake) is not "may have landed",
botocore's retry quota still bounds the quick re-sends of lost writes, and a session's own
credentials sign what it sends.

Every server here is a scripted HTTP peer on 127.0.0.1; nothing reaches AWS.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import aioboto3
import boto3
import pytest
import urllib3
from botocore.config import Config
from botocore.credentials import Credentials, RefreshableCredentials
from botocore.exceptions import (
    BotoCoreError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)

from xor_ack_dynamodb import SyncXorAckDynamoDB, XorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.dynamodb import aws
from xor_ack_dynamodb.dynamodb._attempts import may_have_landed, watch
from xor_ack_dynamodb.dynamodb._batches import drain
from xor_ack_dynamodb.errors import NotDynamoDB
from xor_ack_dynamodb.retry import botocore_config
from xor_ack_dynamodb.table import TableSpec

# -- a threaded loopback peer that answers every request with the same JSON body ----------


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        self.server.seen.append((dict(self.headers.items()), body))
        whole = json.dumps(self.server.answer).encode()
        # cut_first: the first answer loses its end (its x-amz-crc32 the whole body's)
        raw = whole[:20] if self.server.cut_first and len(self.server.seen) == 1 else whole
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("x-amzn-RequestId", "r")
        self.send_header("x-amz-crc32", str(zlib.crc32(whole)))
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _peer(
    answer: dict[str, Any] | None = None, *, cut_first: bool = False
) -> Iterator[tuple[str, list[Any]]]:
    """(endpoint, requests seen) of an HTTP peer on 127.0.0.1 answering ``answer``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    server.answer = answer if answer is not None else {}  # type: ignore[attr-defined]
    server.cut_first = cut_first  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def _few_attempts() -> Any:
    return botocore_config(retries={"mode": "standard", "total_max_attempts": 2}, connect_timeout=2)


# -- a request never sent, for want of credentials, is reported "may have landed" ----


def _no_credentials_anywhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


class _Expired:
    """Credentials whose refresh fails, as an expired SSO session's or role's do."""

    method = "sso"

    async def get_frozen_credentials(self) -> Any:
        raise CredentialRetrievalError(provider="sso", error_msg="the SSO session expired")


async def _create_with_expired_credentials(url: str) -> None:
    async with aioboto3.Session().client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        config=_few_attempts(),
        aws_access_key_id="a",
        aws_secret_access_key="b",
    ) as client:
        client._request_signer._credentials = _Expired()  # the SSO session expired
        ack = XorAckDynamoDB(client, table="t", direct=True)  # connect()'s direct path
        await ack.create("job", new_stamp())


@pytest.mark.parametrize("path", ["sync-no-credentials", "async-direct-expired-credentials"])
def test_a_write_never_sent_for_want_of_credentials_is_not_reported_as_maybe_landed(
    path: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """No credentials (or an expired SSO session): the request is never signed, nothing is
    sent.  The user should get botocore's error (``NoCredentialsError``, for which the CLI
    has its own message; ``CredentialRetrievalError``), not ``UnsettledWrite`` telling
    them the write may have landed and to fail the chain and replay its input."""
    with _peer() as (url, seen):
        if path == "sync-no-credentials":
            _no_credentials_anywhere(monkeypatch, tmp_path)
            # A session of its own: boto3's default one keeps what an earlier test found.
            client = boto3.session.Session().client(
                "dynamodb", endpoint_url=url, region_name="us-east-1", config=_few_attempts()
            )
            try:
                with pytest.raises(NoCredentialsError):
                    SyncXorAckDynamoDB(client, table="t").create("job", new_stamp())
            finally:
                client.close()
        else:
            with pytest.raises(CredentialRetrievalError):
                asyncio.run(_create_with_expired_credentials(url))
        assert seen == []  # nothing was ever sent: it cannot have landed


# -- a connection that never opened (DNS) is taken for a lost response ----------


@pytest.fixture
def unresolvable(monkeypatch: pytest.MonkeyPatch) -> str:
    """An endpoint whose host name does not resolve (no lookup leaves this machine)."""
    real = socket.getaddrinfo

    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return "http://dynamodb.us-esat-1.invalid:8000"  # a typo in the region


def test_a_host_that_does_not_resolve_is_not_a_write_that_may_have_landed(
    unresolvable: str,
) -> None:
    """urllib3 2 raises ``NameResolutionError`` (a ``NewConnectionError``) for a failed
    lookup; ``_attempts.connect_failed`` matches class names exactly and misses it, so
    the write counts as maybe landed and the user gets ``UnsettledWrite``."""
    client = boto3.client(
        "dynamodb", endpoint_url=unresolvable, region_name="us-east-1", config=_few_attempts()
    )
    try:
        ack = SyncXorAckDynamoDB(client, table="t")
        with pytest.raises(EndpointConnectionError):
            ack.create("job", new_stamp())
    finally:
        client.close()


# -- a session's own credentials are replaced by dummy ones on a loopback endpoint ----


def test_connect_signs_with_the_credentials_of_the_session_it_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """``connect(session=boto3.Session(aws_access_key_id=...))`` on a loopback endpoint
    signed with ``local``: DynamoDB Local without ``-sharedDb`` (its official image's
    default) and LocalStack keep tables per access key, so the user's tables vanish."""
    _no_credentials_anywhere(monkeypatch, tmp_path)
    session = boto3.Session(
        aws_access_key_id="alice", aws_secret_access_key="secret", region_name="us-east-1"
    )
    with (
        _peer({}) as (url, seen),
        SyncXorAckDynamoDB.connect(table="t", endpoint_url=url, session=session) as ack,
    ):
        assert ack.get("job") is None
    (headers, _), *_ = seen
    authorization = {k.lower(): v for k, v in headers.items()}["authorization"]
    assert "Credential=alice/" in authorization, authorization


# -- the 10 ms re-send overrides botocore's own decision not to retry -----------------


@contextlib.contextmanager
def _hangs_up() -> Iterator[tuple[str, list[int]]]:
    """An HTTP endpoint on 127.0.0.1 that reads each request and closes without answering
    (an outage that loses every response); ``count[0]``: requests read."""
    server = socket.create_server(("127.0.0.1", 0))
    count = [0]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                while len(body) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    body += chunk
                count[0] += 1

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", count
    finally:
        server.close()


def test_a_lost_write_is_not_re_sent_once_botocores_retry_quota_is_spent() -> None:
    """ClientBase's docstring: the handlers ``watch`` adds "never change ... which errors
    botocore retries or how often"; ``_retry_handler``: "only the delay changes".  In an
    outage botocore's standard mode stops retrying once its retry quota is spent (to
    avoid retry storms); ``_retry_handler`` answers ``needs-retry`` first with a delay, so
    botocore re-sends every write ``total_max_attempts`` times anyway."""
    with _hangs_up() as (url, count):
        client = boto3.client(
            "dynamodb",
            endpoint_url=url,
            region_name="us-east-1",
            config=botocore_config(retries={"mode": "standard", "total_max_attempts": 3}),
        )
        params = {
            "TableName": "t",
            "Key": {"tagID": {"S": "a"}},
            "UpdateExpression": "SET n = :n",
            "ExpressionAttributeValues": {":n": {"N": "1"}},
        }
        try:
            # What botocore alone does once its quota (500, 5 per retry) is spent: one send.
            SyncXorAckDynamoDB(client, table="t")  # watches the client, as any tracker does
            for _ in range(60):  # 60 writes, 2 retries each: 120 retries, over the quota
                with contextlib.suppress(Exception):
                    client.update_item(**params)
            before = count[0]
            with contextlib.suppress(Exception):
                client.update_item(**params)
            assert count[0] - before == 1, f"{count[0] - before} sends after the quota was spent"
        finally:
            client.close()


def _drain_threads() -> list[threading.Thread]:
    return [
        t for t in threading.enumerate() if getattr(t, "_target", None) is drain and t.is_alive()
    ]


def _local_client(endpoint: str) -> Any:
    """A boto3 client of DynamoDB Local, as the library configures one."""
    return boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
    )


# -- a batched write whose result is an error leaves a thread blocked forever --


def test_a_batched_write_refused_by_its_condition_leaves_no_thread_behind(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    client = _local_client(ddb_local_endpoint)
    other = boto3.client("dynamodb", endpoint_url=ddb_local_endpoint, region_name="us-east-1")
    ack = SyncXorAckDynamoDB(client, table=ddb_table.name, batch_writes=True, write_slots=1)
    racer = SyncXorAckDynamoDB(other, table=ddb_table.name)
    before = len(_drain_threads())
    for i in range(5):
        tag = f"race-{i}"
        root = new_stamp()
        ack.create(tag, root)  # cached by ack
        s1, s2 = new_stamp(), new_stamp()
        racer.stamp(tag, s1)  # ack's cache is now old
        ack.stamp(tag, s2)  # its batched write's condition fails once, then it replans
        state = ack.get(tag)
        assert state is not None and state.stamp == xor(xor(root, s1), s2)
    time.sleep(0.2)
    leaked = len(_drain_threads()) - before
    assert leaked == 0, f"{leaked} _drain threads blocked forever on an inbox nobody writes to"


# -- a credentials error on a re-send does not hide an earlier send that may have landed --


class _FailsOnSecondUse:
    """Credentials that sign the first send and fail to refresh for the re-send."""

    method = "sso"

    def __init__(self) -> None:
        self.calls = 0

    def get_frozen_credentials(self) -> Any:
        self.calls += 1
        if self.calls == 2:
            raise CredentialRetrievalError(provider="sso", error_msg="the SSO session expired")
        return Credentials("testing", "testing", "testing").get_frozen_credentials()


def test_a_credentials_error_after_a_lost_send_is_not_never_sent(
    ddb_local_endpoint: str, ddb_table: TableSpec
) -> None:
    client = _local_client(ddb_local_endpoint)
    ack = SyncXorAckDynamoDB(client, table=ddb_table.name)
    root = new_stamp()
    ack.create("job", root)  # cached: the stamp below is one UpdateItem, no read
    http = urllib3.PoolManager()
    sends: list[int] = []

    def lose_first_answer(request: Any, **_: Any) -> Any:
        if sends:
            return None
        # The first attempt reaches DynamoDB and lands; its answer is lost.
        answer = http.request("POST", request.url, body=request.body, headers=dict(request.headers))
        sends.append(answer.status)
        raise ReadTimeoutError(endpoint_url=request.url)

    client.meta.events.register("before-send.dynamodb.UpdateItem", lose_first_answer)
    flaky = _FailsOnSecondUse()
    real = client._request_signer._credentials
    client._request_signer._credentials = flaky
    stamp = new_stamp()
    error: BaseException | None = None
    try:
        ack.stamp("job", stamp)
    except CredentialRetrievalError as exc:
        error = exc
    finally:
        client.meta.events.unregister("before-send.dynamodb.UpdateItem", lose_first_answer)
        client._request_signer._credentials = real
    assert sends == [200]  # the first send landed
    landed = ack.get("job")
    assert landed is not None and landed.stamp == xor(root, stamp)
    # Proven landed by the read after it (its token), or told it may have: never "not sent",
    # which a caller would answer by stamping again (applied twice).
    assert error is None or may_have_landed(error), "a write that landed is told never sent"


# -- botocore's retry quota is charged once per quick re-send --------------------


def _quota(client: Any) -> Any:
    emitter = getattr(client.meta.events, "_emitter", client.meta.events)
    handler = emitter._unique_id_handlers["retry-config-dynamodb"]["handler"]
    handler = getattr(handler, "decides", handler)  # botocore's, wrapped by the watcher
    return handler.__self__._retry_quota._quota


def test_a_quick_re_send_charges_botocores_retry_quota_once() -> None:
    params = {
        "TableName": "t",
        "Key": {"tagID": {"S": "a"}},
        "UpdateExpression": "SET n = :n",
        "ExpressionAttributeValues": {":n": {"N": "1"}},
    }
    spent = {}
    with _hangs_up() as (url, _count):
        for watched in (False, True):
            client = boto3.client(
                "dynamodb",
                endpoint_url=url,
                region_name="us-east-1",
                config=botocore_config(retries={"mode": "standard", "total_max_attempts": 2}),
            )
            if watched:
                SyncXorAckDynamoDB(client, table="t")  # registers _retry_handler
            quota = _quota(client)
            start = quota.available_capacity
            with pytest.raises(BotoCoreError):  # the connection closed, twice
                client.update_item(**params)  # one lost send, one re-send (lost too)
            spent[watched] = start - quota.available_capacity
            client.close()
    assert spent[True] == spent[False], f"quota spent per re-send: {spent}"


# -- a session that only resolved the default chain was given no credentials ------------


def test_a_session_that_resolved_its_credentials_is_not_given_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from xor_ack_dynamodb.dynamodb.aws import client_options

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = real\naws_secret_access_key = real\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    endpoint = "http://127.0.0.1:8000"
    fresh = boto3.Session(region_name="us-east-1")
    used = boto3.Session(region_name="us-east-1")
    used.client("sqs", endpoint_url=endpoint).close()  # any client resolves the chain once
    assert client_options(session=fresh, endpoint=endpoint).get("aws_access_key_id") == "local"
    assert client_options(session=used, endpoint=endpoint).get("aws_access_key_id") == "local"


# -- each caller's copy of a never-sent error is still never sent --------


def test_each_callers_copy_of_a_never_sent_error_is_still_never_sent() -> None:
    from botocore.exceptions import EndpointConnectionError

    from xor_ack_dynamodb.dynamodb._attempts import mark_never_sent
    from xor_ack_dynamodb.dynamodb._core.merged import one_each

    error = EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    mark_never_sent(error)  # as _on_call_error does after a refused connection
    assert not may_have_landed(error)
    told = one_each(error, 3)  # Batcher.send: a batch of three writes, connection refused
    landed = [may_have_landed(e) for e in told]
    assert landed == [False, False, False], landed


# -- a damaged DynamoDB answer, a request botocore refused itself, a session's credentials --


_FULL = {"Attributes": {"pk": {"S": "t"}, "x": {"N": "1"}}, "ConsumedCapacity": {"TableName": "t"}}


def _three_attempts() -> Config:
    return aws.botocore_config(retries={"mode": "standard", "total_max_attempts": 3})


def _update(client: Any) -> Any:
    return client.update_item(
        TableName="t",
        Key={"pk": {"S": "t"}},
        UpdateExpression="SET x = :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )


def test_a_200_with_a_bad_crc32_is_retried_not_called_no_dynamodb() -> None:
    """The check for answers no DynamoDB gives runs before botocore's CRC32 retry check:
    DynamoDB's own damaged answer to a write (which landed: the peer got it) was taken for
    NotDynamoDB ("nothing was read or written there"), and never re-sent."""
    with _peer(_FULL, cut_first=True) as (url, seen):
        client = aws.sync_client(endpoint=url, region_name="us-east-1", config=_three_attempts())
        try:
            answer = _update(client)
        except NotDynamoDB as exc:
            pytest.fail(
                f"a DynamoDB answer with a bad CRC32 was refused ({len(seen)} send(s)): {exc}"
            )
        assert answer["ResponseMetadata"]["RetryAttempts"] == 1


def test_a_param_validation_error_is_still_never_sent() -> None:
    """botocore raises ParamValidationError before the call's events (in
    _convert_to_request_dict, before _make_request): a request refused by its own model
    was counted as one that may have landed."""
    client = boto3.client(
        "dynamodb",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="a",
        aws_secret_access_key="b",
    )  # a user's client: botocore's default config validates parameters
    assert watch(client)
    with pytest.raises(ParamValidationError) as caught:
        client.update_item(TableName="t", Key={"pk": {"S": "t"}}, UpdateExpression=7)
    assert not may_have_landed(caught.value)


def test_a_session_given_refreshable_credentials_signs_a_loopback_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Credentials put on a session (a refreshing assume-role, its method not None) are
    its own: a loopback endpoint was signed with 'local'."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    session = boto3.session.Session(region_name="us-east-1")
    session._session._credentials = RefreshableCredentials(
        "AKIAMINE",
        "secret",
        None,
        expiry_time=__import__("datetime").datetime(2999, 1, 1, tzinfo=__import__("datetime").UTC),
        refresh_using=lambda: {},
        method="sts-assume-role",
    )
    options = aws.client_options(session=session, endpoint="http://127.0.0.1:8000")
    assert "aws_access_key_id" not in options


# -- a TLS handshake that fails (a certificate no CA bundle trusts) sent nothing ----------


@contextlib.contextmanager
def _untrusted_tls(tmp_path: Any) -> Iterator[tuple[str, list[bytes]]]:
    """An https endpoint on 127.0.0.1 whose certificate is self-signed (no CA bundle
    trusts it); ``seen``: request bytes read after a handshake (none should be)."""
    from tests.dashboard.tls_proxy import self_signed

    context = self_signed(tmp_path, "localhost")
    server = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with contextlib.suppress(OSError), context.wrap_socket(conn, server_side=True) as tls:
                seen.append(tls.recv(65536))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.getsockname()[1]}", seen
    finally:
        server.close()
        thread.join(timeout=5)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_tls_handshake_that_fails_is_not_a_write_that_may_have_landed(
    kind: str, tmp_path: Any
) -> None:
    """A wrong CA bundle (or a proxy's own certificate) fails every handshake before a
    byte of the request is sent; the sync client (urllib3) took it for a lost response
    and told the caller its write may have landed (UnsettledWrite)."""
    with _untrusted_tls(tmp_path) as (url, seen):
        if kind == "sync":
            client = boto3.client(
                "dynamodb", endpoint_url=url, region_name="us-east-1", config=_few_attempts()
            )
            try:
                with pytest.raises(BotoCoreError) as caught:
                    SyncXorAckDynamoDB(client, table="t").create("job", new_stamp())
            finally:
                client.close()
        else:

            async def create() -> None:
                session = aioboto3.Session()
                async with session.client(
                    "dynamodb", endpoint_url=url, region_name="us-east-1", config=_few_attempts()
                ) as client:
                    await XorAckDynamoDB(client, table="t").create("job", new_stamp())

            with pytest.raises(BotoCoreError) as caught:
                asyncio.run(create())
    assert not may_have_landed(caught.value), repr(caught.value)
    assert seen == []
