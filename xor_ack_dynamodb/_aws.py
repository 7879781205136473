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
``AWS_ACCESS_KEY_ID`` nor ``AWS_PROFILE`` set signs with dummy ones (``local``): DynamoDB Local
and moto accept any, so ``xor-ack local start`` then ``xor-ack table create`` works on a machine
without an AWS account.

Retries: :func:`botocore_config` (botocore's ``standard`` mode, 10 attempts, unless
``AWS_RETRY_MODE`` / ``AWS_MAX_ATTEMPTS`` say otherwise).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from .errors import RegionMissing

#: The region used for a loopback endpoint when none is configured (any region works there).
LOCAL_REGION = "us-east-1"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_TRUE = ("true", "1", "yes")


def botocore_config(**overrides: object) -> Any:
    """The ``botocore.config.Config`` the clients use when given none.

    Throttling, 5xx and connection errors are retried by botocore's ``standard``
    retry mode (10 attempts), unless ``AWS_RETRY_MODE`` / ``AWS_MAX_ATTEMPTS`` say
    otherwise.  The clients watch each send (``_attempts``): one refused with a 4xx
    (throttling) did not land; after one of unknown outcome (a lost connection, a
    5xx) a re-sent write is recognised by its token (see ``_ops``), and a write
    whose connection was lost is re-sent within milliseconds, not after the mode's
    backoff, so that few other writes can push its token out of the item.
    """
    from botocore.config import Config

    options: dict[str, object] = {"connect_timeout": 5, "read_timeout": 30}
    if not os.environ.get("AWS_RETRY_MODE") and not os.environ.get("AWS_MAX_ATTEMPTS"):
        options["retries"] = {"mode": "standard", "max_attempts": 10}
    options.update(overrides)
    return Config(**options)


def endpoint_url(explicit: str | None = None) -> str | None:
    """The endpoint a client will use (steps 1-3 of the module docstring), or None for AWS's."""
    if explicit:
        return explicit
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() in _TRUE:
        return None
    return os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or os.environ.get("AWS_ENDPOINT_URL") or None


def is_loopback(url: str | None) -> bool:
    """True for an endpoint on this machine's loopback (DynamoDB Local, moto)."""
    if not url:
        return False
    return (urlsplit(url).hostname or "") in _LOOPBACK


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


def client_options(
    *,
    endpoint: str | None = None,
    region_name: str | None = None,
    session: Any = None,
    config: Any = None,
    local_credentials: bool | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``session.client("dynamodb", ...)`` for these settings.

    ``local_credentials``: True signs with dummy credentials, False never does, None
    (the default) does for a loopback endpoint when the environment names none.
    """
    options: dict[str, Any] = {
        "region_name": region(region_name, session=session, endpoint=endpoint),
        "config": config if config is not None else botocore_config(),
    }
    if endpoint:
        options["endpoint_url"] = endpoint
    if local_credentials is None:
        local_credentials = (
            is_loopback(endpoint_url(endpoint))
            and not os.environ.get("AWS_ACCESS_KEY_ID")
            and not os.environ.get("AWS_PROFILE")
        )
    if local_credentials:
        options["aws_access_key_id"] = "local"
        options["aws_secret_access_key"] = "local"
    return options


def _dynamodb(
    session: Any,
    endpoint: str | None,
    region_name: str | None,
    config: Any,
    local_credentials: bool | None,
) -> Any:
    """``session.client("dynamodb", ...)`` with :func:`client_options`, for either kind."""
    return session.client(
        "dynamodb",
        **client_options(
            endpoint=endpoint,
            region_name=region_name,
            session=session,
            config=config,
            local_credentials=local_credentials,
        ),
    )


def sync_client(
    *,
    endpoint: str | None = None,
    region_name: str | None = None,
    session: Any = None,
    config: Any = None,
    local_credentials: bool | None = None,
) -> Any:
    """A boto3 DynamoDB client (the caller closes it)."""
    import boto3

    session = session or boto3.session.Session()
    return _dynamodb(session, endpoint, region_name, config, local_credentials)


def async_client(
    *,
    endpoint: str | None = None,
    region_name: str | None = None,
    session: Any = None,
    config: Any = None,
    local_credentials: bool | None = None,
) -> Any:
    """An aiobotocore DynamoDB client, as the async context manager aioboto3 returns."""
    import aioboto3

    session = session or aioboto3.Session()
    return _dynamodb(session, endpoint, region_name, config, local_credentials)
