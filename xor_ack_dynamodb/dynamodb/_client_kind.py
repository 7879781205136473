"""Is the injected boto client one the tracker can drive?  Checked when the tracker is made.

A client of another service (S3, SQS, DynamoDB Streams) or of the other flavour (a
boto3 client given to the async tracker, an aiobotocore one to the sync twin) would
fail at the first call with a bare ``AttributeError`` or ``TypeError``; it is refused
at once with ``InvalidArgument`` saying which client to pass, as is an object with
none of a DynamoDB client's methods (None, a service's name).  Other objects that are
not botocore clients (test doubles, wrappers) are taken as they are.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from botocore.client import BaseClient

from ..errors import InvalidArgument
from ..errors._refusals import shown

#: The requests a tracker sends: an object with none of them is no DynamoDB client.
_REQUESTS = ("get_item", "update_item", "batch_get_item", "transact_write_items", "query")


def _service(client: Any) -> str | None:
    model = getattr(getattr(client, "meta", None), "service_model", None)
    name = getattr(model, "service_name", None)
    return name if isinstance(name, str) else None


def _aiobotocore(client: Any) -> bool:
    """An aiobotocore client?  (Its methods are not coroutine functions to ``inspect``.)
    Without ``aiobotocore.client`` imported, no client can be one: nothing imported here."""
    module = sys.modules.get("aiobotocore.client")
    base = getattr(module, "AioBaseClient", None)
    return isinstance(base, type) and isinstance(client, base)


def check_client(client: Any, *, asynchronous: bool) -> None:
    """``InvalidArgument`` unless ``client`` can be this tracker's DynamoDB client."""
    tracker = "XorAckDynamoDB" if asynchronous else "SyncXorAckDynamoDB"
    wanted = (
        'an aiobotocore DynamoDB client (aioboto3.Session().client("dynamodb"))'
        if asynchronous
        else 'a boto3 DynamoDB client (boto3.client("dynamodb"))'
    )
    service = _service(client)
    if service is not None and service != "dynamodb":
        raise InvalidArgument(
            f"{tracker}'s client must be {wanted}, not a client of the {service} service"
        )
    if not any(callable(getattr(client, name, None)) for name in _REQUESTS):
        raise InvalidArgument(f"{tracker}'s client must be {wanted}, not {shown(client)}")
    coroutines = _aiobotocore(client) or inspect.iscoroutinefunction(
        getattr(client, "get_item", None)
    )
    if asynchronous and isinstance(client, BaseClient) and not coroutines:
        raise InvalidArgument(
            f"XorAckDynamoDB's client must be {wanted}, not a boto3 one: pass this one to"
            " SyncXorAckDynamoDB, or use XorAckDynamoDB.connect()"
        )
    if not asynchronous and coroutines:
        raise InvalidArgument(
            f"SyncXorAckDynamoDB's client must be {wanted}, not an aiobotocore one: pass this"
            " one to XorAckDynamoDB, or use SyncXorAckDynamoDB.connect()"
        )
