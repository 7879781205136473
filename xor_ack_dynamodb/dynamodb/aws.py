"""DynamoDB clients, made in one place: the async and sync chains clients, the CLI,
the Spark tracker and the local servers' helpers all call :func:`sync_client` or
:func:`async_client`.

Region, first found wins (as the AWS SDKs and the AWS CLI do):

1. the ``region`` argument (``--region``, ``region_name=``, ``TrackerConfig.region``);
2. the region the given session was made with (``Session(region_name=...)``);
3. ``AWS_REGION``;
4. ``AWS_DEFAULT_REGION``;
5. ``region`` of the profile in the AWS config file (``AWS_PROFILE``, ``AWS_CONFIG_FILE``);
6. ``us-east-1`` when the endpoint is on loopback (DynamoDB Local and moto accept any region).

Otherwise :class:`RegionMissing` is raised, before any request.  botocore on its own reads
only 4 and 5: a shell with just ``AWS_REGION`` set would get botocore's ``NoRegionError``.

Endpoint, first found wins:

1. the ``endpoint_url`` argument (``--endpoint-url``, ``endpoint_url=``);
2. ``AWS_ENDPOINT_URL_DYNAMODB``;
3. ``AWS_ENDPOINT_URL``;
4. ``endpoint_url`` of the profile (or of its ``services`` section);
5. AWS's regional endpoint.

botocore (1.31 and later) resolves 2-4 itself, and ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true``
turns them off: only the argument is passed on.  :func:`endpoint_url` reads 1-3 to decide
whether the endpoint is a local one (6 above, and the credentials below).

Credentials are botocore's default chain, except that a loopback endpoint with neither
``AWS_ACCESS_KEY_ID`` nor ``AWS_PROFILE`` set, and no session given credentials or a profile
of its own, signs with dummy ones (``local``): DynamoDB Local and moto accept any, so
``xor-ack local start`` then ``xor-ack table create`` works on a machine without an AWS
account.

Errors: what an AWS error says (its code, message, status, the item a failed condition
returned, a cancelled transaction's reasons) is read by the functions at the end, one per
fact; nothing else in the package looks into ``ClientError.response``.

Retries: :func:`botocore_config` (botocore's ``standard`` mode, 10 retries, unless
``AWS_RETRY_MODE`` / ``AWS_MAX_ATTEMPTS`` say otherwise).

Per-request CPU: the same config turns off two things botocore does on every request
that buy this package nothing: client-side parameter validation (every request is
built by the core from a structured value, the scripted-peer tests check each one
against the botocore model, ``tests/core/peer.py``, and DynamoDB validates again) and
the rebuild of the ``User-Agent`` header from a dozen sanitised components, twice per
request (a fixed header naming this package and botocore instead, :data:`USER_AGENT`).
Before, they took 17 % (the header) and most of another 13 % (serialization and
validation) of a stamp's client CPU (``benchmarks/results/profile-paths.md``, run before
the change; docs/performance.md has the benchmark after it).
"""

from __future__ import annotations

import ipaddress
import os
import platform
import re
from contextlib import AbstractAsyncContextManager
from importlib import metadata
from typing import TYPE_CHECKING, Any, TypedDict, Unpack
from urllib.parse import urlsplit

import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

from ..errors import (
    InvalidArgument,
    InventoryBuilding,
    InventoryMissing,
    RegionMissing,
)
from .answers import checked, checked_async

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef
    from types_aiobotocore_dynamodb import DynamoDBClient as AsyncDynamoDBClient

#: The region used for a loopback endpoint when none is configured (any region works there).
LOCAL_REGION = "us-east-1"
_TRUE = ("true", "1", "yes")


def _version() -> str:
    try:
        return metadata.version("xor-ack-dynamodb")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


#: The ``User-Agent`` of the clients made here, built once (botocore rebuilds its own per request).
USER_AGENT = (
    f"xor-ack-dynamodb/{_version()} Botocore/{botocore.__version__} "
    f"Python/{platform.python_version()} {platform.system()}/{platform.release()}"
)


def botocore_config(**overrides: object) -> Config:
    """The ``botocore.config.Config`` the clients use when given none.

    Throttling, 5xx and connection errors are retried by botocore's ``standard`` retry mode
    (10 retries after the first attempt), unless ``AWS_RETRY_MODE`` / ``AWS_MAX_ATTEMPTS``
    say otherwise. The clients watch each send (``_attempts``): one refused with a 4xx
    (throttling) did not land; after one of unknown outcome (a lost connection, a 5xx) a
    re-sent write is recognised by its token (see ``_core``), and a write whose connection
    was lost is re-sent within milliseconds, not after the mode's backoff, so that few other
    writes can push its token out of the item.
    """
    options: dict[str, object] = {
        "connect_timeout": 5,
        "read_timeout": 30,
        "parameter_validation": False,  # the module docstring says why
        "user_agent": USER_AGENT,
    }
    retries: dict[str, object] = {}  # each part botocore's from the environment, if set there
    if not os.environ.get("AWS_RETRY_MODE"):
        retries["mode"] = "standard"
    if not os.environ.get("AWS_MAX_ATTEMPTS"):
        retries["max_attempts"] = 10
    if retries:
        options["retries"] = retries
    options.update(overrides)
    config: Config = Config(**options)
    return config


#: Attempts per request (the first included) where a person waits for the answer (a CLI
#: command, a dashboard page): with the clients' ten retries botocore's standard backoff
#: took about 50 s per request to give up on an endpoint that refuses connections
#: (DynamoDB Local not started), with three attempts a few seconds.
FAIL_FAST_ATTEMPTS = 3


def fail_fast_config(**overrides: object) -> Config:
    """:func:`botocore_config` with :data:`FAIL_FAST_ATTEMPTS` attempts per request."""
    retries = {"mode": "standard", "total_max_attempts": FAIL_FAST_ATTEMPTS}
    return botocore_config(**({"retries": retries} | overrides))


def endpoint_url(explicit: str | None = None) -> str | None:
    """The endpoint a client will use (steps 1-3 of the module docstring), or None for AWS's."""
    if explicit:
        if not is_endpoint_url(explicit):  # botocore: "Invalid endpoint", a ValueError
            raise InvalidArgument(
                f"endpoint_url={explicit!r} is not an http(s) URL such as"
                " http://127.0.0.1:8000: give the scheme, the host and the port, if any"
            )
        return explicit
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() in _TRUE:
        return None
    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"):
        if value := os.environ.get(name):
            if not is_endpoint_url(value):  # botocore: "Invalid endpoint", a ValueError
                raise InvalidArgument(
                    f"{name}={value!r} (from the environment) is not an http(s) URL such as"
                    f" http://127.0.0.1:8000: export a valid one, or unset {name}"
                )
            return value
    return None


def is_endpoint_url(value: object) -> bool:
    """An endpoint botocore can send to: an http(s) URL, its host, a numeric port if any."""
    if not isinstance(value, str):
        return False
    try:  # each raises ValueError: an open "[" (an IPv6 host), a port that is no number
        parts = urlsplit(value)
        parts.port  # noqa: B018
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


#: What an AWS region's name looks like (us-east-1, eu-central-2, ...; local ones too).
_REGION = re.compile(r"[a-z0-9][a-z0-9-]*")


def is_region(value: object) -> bool:
    """A name botocore can take as a region (it refuses others when making the client)."""
    return isinstance(value, str) and _REGION.fullmatch(value) is not None


def is_loopback_host(host: str) -> bool:
    """True for a host only this machine reaches: ``localhost``, 127.0.0.0/8, ``::1``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_loopback(url: str | None) -> bool:
    """True for an endpoint on this machine's loopback (DynamoDB Local, moto)."""
    if not url:
        return False
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:  # a malformed URL: no host of this machine
        return False
    return is_loopback_host(host)


def region(explicit: str | None = None, *, session: Any = None, endpoint: str | None = None) -> str:
    """The region a client will use (the module docstring's order); ``RegionMissing`` if none.

    ``session`` is a boto3 or aioboto3 session (its own region and profile count);
    ``endpoint`` the explicit endpoint, if any.
    """
    if explicit:
        return explicit
    if session is not None:
        own = session._session.instance_variables().get("region")
        if own:
            return str(own)
    from_env = os.environ.get("AWS_REGION")
    if from_env:
        return from_env
    if session is None:
        import boto3

        session = boto3.session.Session()
    configured = session.region_name  # AWS_DEFAULT_REGION, then the profile's
    if configured:
        return str(configured)
    if is_loopback(endpoint_url(endpoint)):
        return LOCAL_REGION
    raise RegionMissing()


class Settings(TypedDict, total=False):
    """What a client is made for, besides its session (every key may be left out).

    ``local_credentials``: True signs with dummy credentials, False never does, None
    (the default) does for a loopback endpoint when the environment names none.
    """

    endpoint: str | None
    region_name: str | None
    config: Config | None
    local_credentials: bool | None


def client_options(*, session: Any = None, **settings: Unpack[Settings]) -> dict[str, Any]:
    """The keyword arguments of ``session.client("dynamodb", ...)`` for these settings."""
    endpoint = settings.get("endpoint")
    if endpoint:
        endpoint_url(endpoint)  # refused here if no client could send to it
    config = settings.get("config")
    options: dict[str, Any] = {
        "region_name": region(settings.get("region_name"), session=session, endpoint=endpoint),
        "config": config if config is not None else botocore_config(),
    }
    if endpoint:
        options["endpoint_url"] = endpoint
    local_credentials = settings.get("local_credentials")
    if local_credentials is None:
        local_credentials = (
            is_loopback(endpoint_url(endpoint))
            and not os.environ.get("AWS_ACCESS_KEY_ID")
            and not os.environ.get("AWS_PROFILE")
            and not _own_credentials(session)
        )
    if local_credentials:
        options["aws_access_key_id"] = "local"
        options["aws_secret_access_key"] = "local"
    return options


#: What botocore's default chain names the credentials it finds (``Credentials.method``):
#: a session holding such ones found them itself, it was not given them.
_FROM_THE_CHAIN = frozenset(
    {
        "env",
        "shared-credentials-file",
        "config-file",
        "ec2-credentials-file",
        "boto-config",
        "iam-role",
        "container-role",
        "assume-role",
        "assume-role-with-web-identity",
        "sso",
        "custom-process",
        "login",
    }
)


def _own_credentials(session: Any) -> bool:
    """Was ``session`` (boto3's or aioboto3's) given credentials or a profile of its own?
    A local endpoint is then signed with them: DynamoDB Local without ``-sharedDb`` and
    LocalStack keep tables per access key."""
    inner = getattr(session, "_session", None)
    if inner is None:
        return False
    given = getattr(inner, "_credentials", None)  # also what the default chain found, cached
    if given is not None and getattr(given, "method", None) not in _FROM_THE_CHAIN:
        return True
    return bool(inner.instance_variables().get("profile"))


def sync_client(*, session: Any = None, **settings: Unpack[Settings]) -> DynamoDBClient:
    """A boto3 DynamoDB client (the caller closes it)."""
    import boto3

    session = session or boto3.session.Session()
    client: DynamoDBClient = checked(
        session.client("dynamodb", **client_options(session=session, **settings))
    )
    return client


def async_client(
    *, session: Any = None, **settings: Unpack[Settings]
) -> AbstractAsyncContextManager[AsyncDynamoDBClient]:
    """An aiobotocore DynamoDB client, as the async context manager aioboto3 returns."""
    import aioboto3

    session = session or aioboto3.Session()
    opened: AbstractAsyncContextManager[AsyncDynamoDBClient] = session.client(
        "dynamodb", **client_options(session=session, **settings)
    )
    return checked_async(opened)


# -- what an AWS error says: each fact read here, once ------------------------------


class CancellationReason(TypedDict, total=False):
    """One item's reason in a cancelled transaction (``CancellationReasons``)."""

    Code: str  # "None" for an item that was fine
    Message: str
    Item: dict[str, AttributeValueTypeDef]  # ALL_OLD, on a failed condition


def error_code(exc: BaseException) -> str:
    """The AWS error code of a ``ClientError``; ``""`` for any other error (or none given)."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def error_message(exc: ClientError) -> str:
    """The message AWS gave with the error (``""`` if none)."""
    return str(exc.response.get("Error", {}).get("Message", ""))


#: How a Query of an index the table lacks is refused: (code, the message's start).
_NO_SUCH_INDEX = (
    ("ValidationException", "The table does not have the specified index"),  # AWS, Local
    ("ResourceNotFoundException", "Invalid index:"),  # moto's server
)


def is_missing_index(exc: ClientError) -> bool:
    """Does ``exc`` say the table has no such index (a table an earlier release made)?"""
    code, message = error_code(exc), error_message(exc)
    return any(code == c and message.startswith(m) for c, m in _NO_SUCH_INDEX)


#: How a Query of an index DynamoDB is still building (backfilling) is refused.
_BACKFILLING = ("ValidationException", "Cannot read from backfilling global secondary index")


def inventory_refusal(exc: ClientError, table: str, index: str) -> InventoryMissing | None:
    """What a Query of inventory ``index`` refused with ``exc`` means: the index missing
    (``InventoryMissing``), or still being built (``InventoryBuilding``); None: neither."""
    if is_missing_index(exc):
        return InventoryMissing(table, index)
    code, message = _BACKFILLING
    if error_code(exc) == code and error_message(exc).startswith(message):
        return InventoryBuilding(table, index)
    return None


def http_status(exc: ClientError) -> int | None:
    """The HTTP status of the response the error was built from, if known."""
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def condition_item(exc: ClientError) -> dict[str, AttributeValueTypeDef] | None:
    """The item a failed condition returned (``ReturnValuesOnConditionCheckFailure``)."""
    raw = exc.response.get("Item")
    return dict(raw) if raw else None


def cancellation_reasons(exc: ClientError) -> list[CancellationReason]:
    """A cancelled transaction's reasons, one per item in the order sent (may be empty)."""
    return list(exc.response.get("CancellationReasons") or [])


def cancellation_code(reason: CancellationReason) -> str:
    """An item's cancellation code; ``"None"`` where AWS gave none (the item was fine)."""
    return reason.get("Code") or "None"
