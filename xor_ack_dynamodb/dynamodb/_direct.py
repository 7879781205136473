"""The direct path: the async client's chain requests, sent without botocore's pipeline.

Why: botocore spends about 0.75 ms of CPU on every request (event hooks, endpoint
rules, serialization from the model, header objects, signing, parsing into the
model); the requests of this package are built by the core from templates, so a
chain's three requests cost the client more in botocore than in everything else
(``benchmarks/results/short-chains``).  Here a request is the core's parameters as
DynamoDB's JSON (blobs in base64), signed with SigV4 (``_sigv4``) and sent on the
aiohttp session of the botocore client itself (its connection pool, TLS settings,
proxies and timeouts); an answer is decoded back into the shape botocore returns.

What it handles alone, and what it leaves to botocore:

- a 200 whose CRC32 checks: the answer, as botocore would have parsed it;
- a 4xx that botocore would not retry (a failed condition, a cancelled transaction,
  a validation error): the same ``ClientError`` botocore raises, decided without
  a second request;
- anything else (a throttle, a 5xx, a bad CRC32, a lost or refused connection, a
  timeout): the request goes again through the botocore client, with its retry
  mode, and its answer or error is marked as following a send that may have landed
  where the direct send may have (``_attempts``: a 5xx, a lost connection, a
  timeout; not a throttle nor a connection that never opened).

:meth:`XorAckDynamoDB.connect` turns it on (``direct=True``, its default): a client
made there carries no event hooks of its user, and these requests do not pass through
botocore's hooks.  A client passed to the constructor keeps every request on botocore
unless ``direct=True`` is given.  Reads for lists and the inventory (``Query``,
``BatchGetItem``) always go through botocore.
"""

from __future__ import annotations

import base64
import json
import uuid
import zlib
from collections.abc import Awaitable, Callable, Collection
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from ._attempts import (
    connect_failed,
    mark_answer_sent_before,
    mark_never_sent,
    mark_sent_before,
    unmark_never_sent,
)
from ._sigv4 import Signer
from .aws import USER_AGENT

#: The client methods sent directly, by the operation each is.
OPERATIONS = {
    "update_item": "UpdateItem",
    "get_item": "GetItem",
    "delete_item": "DeleteItem",
    "transact_write_items": "TransactWriteItems",
    "batch_execute_statement": "BatchExecuteStatement",
}

#: Error codes of a 4xx that botocore's retry modes retry (its standard mode's throttling
#: and transient codes, and DynamoDB's own policies): such an answer goes to botocore.
RETRIED_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
        "RequestTimeout",
        "RequestTimeoutException",
        "ReplicatedWriteConflictException",
        "IDPCommunicationError",
    }
)

_TARGET = "DynamoDB_20120810."


def _blob(value: object) -> str:
    """JSON for a blob (``{"B": b"..."}``): base64, as the wire protocol has it."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"cannot send {type(value).__name__} in a DynamoDB request")


def encode(params: dict[str, Any]) -> bytes:
    """The request body of the core's parameters (blobs as base64)."""
    return json.dumps(params, separators=(",", ":"), default=_blob).encode()


def _value(value: dict[str, Any]) -> dict[str, Any]:
    """One attribute value from the wire: blobs decoded, maps and lists walked."""
    if "B" in value:
        return {"B": base64.b64decode(value["B"])}
    if "BS" in value:
        return {"BS": [base64.b64decode(b) for b in value["BS"]]}
    if "M" in value:
        return {"M": _item(value["M"])}
    if "L" in value:
        return {"L": [_value(v) for v in value["L"]]}
    return value


def _item(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _value(value) for name, value in item.items()}


def decode(body: dict[str, Any]) -> dict[str, Any]:
    """An answer of the operations above, its items' blobs decoded (as botocore parses them).

    Items are under ``Attributes`` and ``Item`` (an answer, a failed condition),
    ``Responses[].Item`` and ``Responses[].Error.Item`` (a batch of statements) and
    ``CancellationReasons[].Item`` (a cancelled transaction).
    """
    for key in ("Attributes", "Item"):
        if isinstance(body.get(key), dict):
            body[key] = _item(body[key])
    for entries in (body.get("Responses"), body.get("CancellationReasons")):
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            for holder in (entry, entry.get("Error")):
                if isinstance(holder, dict) and isinstance(holder.get("Item"), dict):
                    holder["Item"] = _item(holder["Item"])
    return body


def _metadata(status: int, headers: Any) -> dict[str, Any]:
    return {
        "RequestId": headers.get("x-amzn-requestid", ""),
        "HTTPStatusCode": status,
        "HTTPHeaders": {name.lower(): value for name, value in headers.items()},
        "RetryAttempts": 0,
    }


def error_code(body: dict[str, Any], status: int = 400) -> str:
    """The code of DynamoDB's JSON error, as botocore reads it: ``__type`` without its
    namespace (``...#``) nor a URI after ``:``; without ``__type``, the HTTP status."""
    code = str(body.get("__type", status))
    return code.split(":", 1)[0].rsplit("#", 1)[-1]


def error_response(
    body: dict[str, Any], status: int, headers: Any, members: Collection[str] = ()
) -> dict[str, Any]:
    """A ``ClientError``'s ``response`` as botocore builds it from DynamoDB's JSON error:
    ``Error`` (code, message), and the fields of the error's shape (``members``) on top."""
    code = error_code(body, status)
    message = body.get("message", body.get("Message", ""))
    response = decode({k: v for k, v in body.items() if k in members})
    response["Error"] = {"Message": message, "Code": code}
    response["ResponseMetadata"] = _metadata(status, headers)
    return response


def _user_agent(config: Any) -> str:
    """The ``User-Agent`` of the client's config, with its ``user_agent_extra`` and app id
    (what botocore sends: a caller's marks for CloudTrail or an IAM condition)."""
    parts = [str(getattr(config, "user_agent", None) or USER_AGENT)]
    extra = getattr(config, "user_agent_extra", None)
    if extra:
        parts.append(str(extra))
    appid = getattr(config, "user_agent_appid", None)
    if appid:
        parts.append(f"app/{appid}")
    return " ".join(parts)


def _checked(raw: bytes, headers: Any) -> dict[str, Any] | None:
    """The answer's JSON, or None when its CRC32 does not match or it is not a JSON object."""
    expected = headers.get("x-amz-crc32")
    if expected is not None and str(zlib.crc32(raw)) != expected:
        return None
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


class Direct:
    """Sends the :data:`OPERATIONS` of one aiobotocore client directly (see the module)."""

    def __init__(
        self,
        client: Any,
        *,
        url: str,
        host: str,
        signer: Signer,
        credentials: Any,
        http: Any,
        user_agent: str = USER_AGENT,
    ) -> None:
        self._client = client
        self._user_agent = user_agent
        self._url = url
        self._host = host
        self._signer = signer
        self._credentials = credentials
        self._http = http
        self._error_members: dict[str, frozenset[str]] = {}
        self.sent = 0  # requests sent directly
        self.passed_on = 0  # requests that went again through botocore

    @classmethod
    def of(cls, client: Any) -> Direct | None:
        """The direct path of an aiobotocore DynamoDB client, or None where it cannot be taken.

        It cannot where the client signs otherwise than with SigV4 and credentials,
        resolves its endpoint per request (FIPS, dual-stack), has an endpoint with a
        path, allows one attempt only (no second send to hand a failure to), or is
        not aiobotocore's (its parts below are not there).
        """
        meta: Any = getattr(client, "meta", None)
        config: Any = getattr(meta, "config", None)
        url: Any = getattr(meta, "endpoint_url", None)
        signer: Any = getattr(client, "_request_signer", None)
        credentials: Any = getattr(signer, "_credentials", None)
        http: Any = getattr(getattr(client, "_endpoint", None), "http_session", None)
        model: Any = getattr(meta, "service_model", None)
        if config is None or credentials is None or not isinstance(url, str):
            return None
        if not (hasattr(http, "_get_session") and hasattr(http, "_proxy_config")):
            return None
        if getattr(model, "service_name", "") != "dynamodb":
            return None
        if getattr(signer, "signature_version", "v4") != "v4":
            return None
        if config.use_fips_endpoint or config.use_dualstack_endpoint:
            return None
        retries = config.retries or {}
        if int(retries.get("total_max_attempts", 2) or 2) < 2:
            return None
        if retries.get("mode") == "adaptive":  # its rate limiter waits on botocore's events
            return None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or parts.path not in ("", "/") or parts.query:
            return None
        return cls(
            client,
            url=f"{parts.scheme}://{parts.netloc}/",
            host=parts.netloc,
            # The region botocore signs for, not always the client's: "local" signs for
            # us-east-1 (DynamoDB Local without -sharedDb keeps a database per region).
            signer=Signer(str(getattr(signer, "_region_name", None) or meta.region_name)),
            credentials=credentials,
            http=http,
            user_agent=_user_agent(config),
        )

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """Send ``method`` (one of :data:`OPERATIONS`) with ``params``; as botocore would answer."""
        operation = OPERATIONS[method]
        if method == "transact_write_items" and "ClientRequestToken" not in params:
            # botocore fills it in (an idempotency token): a re-send, by botocore after
            # this one, is then the same transaction, which DynamoDB answers as it did.
            params = {**params, "ClientRequestToken": str(uuid.uuid4())}
        body = encode(params)
        try:
            credentials = await self._credentials.get_frozen_credentials()
        except BotoCoreError as exc:  # no credentials, or a refresh that failed: unsent
            mark_never_sent(exc)
            raise
        try:
            status, headers, raw = await self._send(operation, body, credentials)
        except Exception as exc:  # the transport's: aiohttp, the OS, a timeout
            return await self._pass_on(method, params, landed=_may_have_landed(exc))
        answer = _checked(raw, headers)
        if answer is not None and status == 200:
            answer = decode(answer)
            answer["ResponseMetadata"] = _metadata(status, headers)
            return answer
        if answer is not None and 400 <= status < 500:
            code = error_code(answer, status)
            if code not in RETRIED_CODES:
                response = error_response(answer, status, headers, self._members(code))
                # botocore's class of that code (``ResourceNotFoundException``, ...), as the
                # same refusal through botocore raises it
                raise self._client.exceptions.from_code(code)(response, operation)
        # A retried code, a 5xx, a bad CRC32 or an unreadable answer: botocore's turn.
        # A 4xx was refused before anything was written; anything else may have landed.
        return await self._pass_on(method, params, landed=not 400 <= status < 500)

    def _members(self, code: str) -> Collection[str]:
        """The fields of the error's shape in botocore's model of DynamoDB (none if unknown)."""
        members = self._error_members.get(code)
        if members is None:
            shape = self._client.meta.service_model.shape_for_error_code(code)
            members = self._error_members[code] = frozenset(shape.members if shape else ())
        return members

    async def _send(self, operation: str, body: bytes, frozen: Any) -> tuple[int, Any, bytes]:
        headers = self._signer.headers(
            host=self._host,
            target=_TARGET + operation,
            body=body,
            access_key=frozen.access_key,
            secret_key=frozen.secret_key,
            token=frozen.token,
        )
        headers["user-agent"] = self._user_agent
        headers["accept-encoding"] = "identity"
        proxies = self._http._proxy_config
        proxy = proxies.proxy_url_for(self._url)
        session = await self._http._get_session(proxy)
        self.sent += 1
        async with session.post(
            self._url,
            data=body,
            headers=headers,
            proxy=proxy,
            proxy_headers=proxies.proxy_headers_for(self._url) or None,
        ) as response:
            raw = await response.read()
            return response.status, response.headers, raw

    async def _pass_on(self, method: str, params: dict[str, Any], *, landed: bool) -> Any:
        """The request again, through botocore; its outcome marked if the direct send may
        have landed (so the core proves a re-sent write by its token, as after a retry)."""
        self.passed_on += 1
        send: Callable[..., Awaitable[Any]] = getattr(self._client, method)
        try:
            response = await send(**params)
        except ClientError as exc:
            if landed:
                mark_sent_before(exc)
            raise
        except BotoCoreError as exc:
            if landed:
                unmark_never_sent(exc)
            raise
        if landed and isinstance(response, dict):
            mark_answer_sent_before(response)
        return response


def _may_have_landed(exc: BaseException) -> bool:
    """May a send that failed with this transport error have reached DynamoDB?

    Only a connection that never opened (refused, unreachable, a failed DNS lookup) is
    proven not sent, as on botocore's path (``_attempts.connect_failed``); a lost
    connection, a reset or a timeout may have delivered the request.
    """
    return not connect_failed(exc)
