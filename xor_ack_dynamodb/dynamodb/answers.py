"""An answer no DynamoDB gives: a success whose body is not a JSON object (a web page at the
endpoint's URL), which botocore would read as an empty answer, or a refusal (4xx) that is
a web server's page, which botocore would pass on as the page's markup.  The clients this
package makes refuse both (``NotDynamoDB``) before botocore parses them."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from ..errors import NotDynamoDB

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient as AsyncDynamoDBClient


#: Refusals a proxy in front of DynamoDB may answer, which botocore's retry modes retry
#: (a rate limit, a request timeout): botocore's to read, whatever their body.
_RETRIED = frozenset({408, 429})
#: Headers every DynamoDB answer carries (AWS, DynamoDB Local), and no web page.
_DYNAMODB_HEADERS = ("x-amzn-requestid", "x-amz-crc32")


def refuse_no_dynamodb(
    endpoint: str, operation_model: Any, response_dict: dict[str, Any], **_: Any
) -> None:
    """botocore's ``before-parse``: ``NotDynamoDB`` for a success or a refusal (4xx)
    whose body is not a JSON object, without DynamoDB's headers.  botocore reads such a
    success (a web server's page) as an empty answer: a write counted as landed, a
    ``DescribeTable`` without its ``Table``; and such a refusal (a 404 page) as an error
    whose message is the page's markup.  A 5xx, a 408 and a 429 stay botocore's (retried:
    a proxy's 503 or rate limit passes)."""
    status = int(response_dict.get("status_code") or 0)
    body = response_dict.get("body")
    if 400 <= status < 500 and status not in _RETRIED:
        pass  # a refusal: DynamoDB's are JSON with its headers
    elif not 200 <= status < 300 or (not body and operation_model.output_shape is None):
        return  # a server error (botocore's to read), or an operation that answers nothing
    headers = response_dict.get("headers") or {}
    if any(name in headers for name in _DYNAMODB_HEADERS):
        return  # DynamoDB's, damaged maybe (a CRC32 that fails): botocore re-sends it
    try:
        parsed = json.loads(body) if isinstance(body, (bytes, str)) else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return
    raise NotDynamoDB(endpoint, operation_model.name, status, str(headers.get("content-type", "")))


def checked(client: Any) -> Any:
    """``client`` refusing answers that are not DynamoDB's (``refuse_no_dynamodb``)."""
    handler = functools.partial(refuse_no_dynamodb, str(client.meta.endpoint_url))
    client.meta.events.register("before-parse.dynamodb", handler)
    return client


@asynccontextmanager
async def checked_async(
    opened: AbstractAsyncContextManager[AsyncDynamoDBClient],
) -> AsyncIterator[AsyncDynamoDBClient]:
    async with opened as client:
        yield checked(client)
