"""Every error a request can meet, as a page with a 4xx (or 5xx) status: never a traceback.

- what the dashboard refuses itself (:class:`~.security.Refused`: no token, a form
  without its CSRF token, a bad parameter) keeps its status;
- the library's errors say what was wrong with the chain or the input: a missing chain
  is 404, a chain in the wrong state for the action 409, bad input 400, a request met by
  the server's closing 503;
- DynamoDB refusing or unreachable is 502, with its message; anything else is 500 with
  a generic message (the traceback goes to the server's log only).
"""

from __future__ import annotations

import logging

from botocore.exceptions import BotoCoreError, ClientError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from xor_ack_dynamodb import errors
from xor_ack_dynamodb.fleet.errors import ReplayRefused

from .inventory import BadCursor
from .render import Renderer
from .security import HEADERS, Refused

log = logging.getLogger("xor_ack_dynamodb.dashboard")

#: The library's errors, by the status a request that meets them gets (first match wins).
STATUS_OF: tuple[tuple[type[Exception], int, str], ...] = (
    (errors.TagNotFound, 404, "No such chain"),
    (errors.ChainTimedOut, 409, "Past its deadline"),
    (errors.WaitTimeout, 409, "Still open"),
    (errors.ChainFailed, 409, "Chain failed"),
    (ReplayRefused, 409, "Nothing to replay"),
    (errors.TagExists, 409, "Chain exists"),
    (errors.StaleLocalData, 409, "Chain busy"),
    (errors.AmbiguousWrite, 409, "Outcome unknown"),
    (errors.CorruptItem, 422, "Not a chain"),
    (errors.InventoryMissing, 502, "Table not upgraded"),  # the table's, not the request's
    (errors.ClientClosed, 503, "Shutting down"),  # the server is closing: not the request's
    (errors.XorAckError, 400, "Bad input"),
)
#: The exceptions a request may meet and that are no bug: handled without a traceback.
HANDLED: tuple[type[Exception], ...] = (
    Refused,
    HTTPException,
    BadCursor,
    errors.XorAckError,
    ClientError,
    BotoCoreError,
)
HTTP_TITLES = {
    400: "Bad request",
    401: "Token needed",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    413: "Too large",
    415: "Unsupported form",
}


def refusal_of(exc: Exception) -> Refused:
    """The page a request that raised ``exc`` gets."""
    if isinstance(exc, Refused):
        return exc
    if isinstance(exc, HTTPException):
        title = HTTP_TITLES.get(exc.status_code, "Request refused")
        detail = exc.detail if exc.status_code not in (404, 405) else _routing(exc.status_code)
        return Refused(exc.status_code, title, str(detail))
    if isinstance(exc, BadCursor):
        return Refused(400, "Bad cursor", f"{exc}: start again from the first page")
    for kind, status, title in STATUS_OF:
        if isinstance(exc, kind):
            return Refused(status, title, str(exc))
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return Refused(
            502,
            "DynamoDB refused",
            f"{error.get('Code', 'error')}: {error.get('Message', exc)}",
        )
    if isinstance(exc, BotoCoreError):
        return Refused(
            502,
            "DynamoDB unreachable",
            f"{exc}: check that DynamoDB answers at the endpoint the dashboard was started "
            "with (DynamoDB Local: xor-ack local status), then load the page again",
        )
    return Refused(500, "Internal error", "the dashboard met an error: see its log")


def _routing(status: int) -> str:
    if status == 404:
        return "no page here: the overview is at the dashboard's root"
    return "this page does not take that method (actions are POSTs from their forms)"


async def handle(request: Request, exc: Exception) -> Response:
    """Starlette's exception handler: the error page."""
    refused = refusal_of(exc)
    if refused.status == 500:  # the dashboard's own error: its traceback, for a report
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    elif refused.status > 500:  # DynamoDB's: one line, as the page says it
        log.warning("%s %s: %s", request.method, request.url.path, refused)
    renderer: Renderer = request.app.state.dashboard.renderer
    response = renderer.render(
        request,
        "error.html",
        {"error": refused, "page": "error"},
        status=refused.status,
    )
    if not isinstance(exc, HANDLED):  # answered by Starlette outside the Guarded middleware
        response.raw_headers.extend(HEADERS)
    return response
