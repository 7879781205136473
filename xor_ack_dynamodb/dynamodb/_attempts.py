"""What botocore's attempts of one request tell: may an earlier send of a write have landed?

botocore sends a request up to ``max_attempts`` times.  ``RetryAttempts`` in a
response only counts the re-sends, not why they happened, and the why decides:

- an attempt answered with a 4xx (throttling, validation, a failed condition)
  was refused by DynamoDB before anything was written: it did not land;
- an attempt whose connection could not even be opened (connection refused,
  connect timeout, a host that does not resolve, a certificate refused in the TLS
  handshake) sent nothing: it did not land;
- any other attempt -- a lost or reset connection, a read timeout, a 5xx, a 2xx
  that botocore retried anyway (a bad CRC32) -- has an unknown outcome: it may
  have landed.

:func:`watch` registers two handlers on a client's own event emitter
(``client.meta.events``): ``needs-retry.dynamodb`` sees every attempt's response
or exception (botocore emits it after each attempt, the last one included) and
counts, in the request's context, the attempts whose outcome is unknown;
``after-call.dynamodb`` writes that count into the parsed response, which is
the response of the ``ClientError`` botocore raises for an error, and
``after-call-error.dynamodb`` marks a transport error none of whose attempts
was sent.  botocore's own retry handler is wrapped (:func:`_retry_handler`): the wait
before the re-send of a write whose connection was lost is shortened, and nothing is
sent again past the deadline of a call with a time limit (``_retry_deadline``).
:func:`may_have_landed` reads it back.  A response without the count (a client
that could not be watched, an error built by hand) falls back to
``RetryAttempts``: any re-send may have landed.
"""

from __future__ import annotations

import inspect
import socket
import ssl
from collections.abc import Callable
from typing import Any

from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
    SSLError,
    TokenRetrievalError,
    UnauthorizedSSOTokenError,
)

from ._retry_deadline import capped
from ._retry_deadline import passed as deadline_passed
from .aws import http_status

#: Key of ``ResponseMetadata``: attempts before the last one whose outcome is unknown.
UNKNOWN_ATTEMPTS = "XorAckUnknownAttempts"
_CONTEXT_KEY = "xor_ack_attempts"  # per request: one bool per attempt, True when unknown
_HANDLER_ID = "xor-ack-attempt-outcomes"
_NEVER_SENT = "xor_ack_never_sent"  # set on a transport error none of whose attempts was sent


#: The HTTP libraries' errors (and their subclasses: urllib3's ``NameResolutionError``,
#: aiohttp's ``ClientConnectorDNSError`` and its TLS ones) of a connection never opened.
_CONNECT_FAILED = frozenset({"NewConnectionError", "ClientConnectorError"})


def connect_failed(error: BaseException | None) -> bool:
    """Is this HTTP library's error (urllib3's, aiohttp's) a connection that never opened?"""
    if isinstance(error, socket.gaierror):
        return True
    return any(kind.__name__ in _CONNECT_FAILED for kind in type(error).__mro__)


def _certificate_refused(error: BaseException | None) -> bool:
    """Is this TLS error a certificate the client would not trust?  Only a handshake checks
    one, and a handshake ends before the request's first byte: urllib3 wraps the ``ssl``
    module's error in its own (first argument), aiohttp raises it as the cause."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, ssl.SSLCertVerificationError):
            return True
        seen.add(id(error))
        first = error.args[0] if error.args else None
        error = first if isinstance(first, BaseException) else error.__cause__
    return False


def never_sent(exc: BaseException) -> bool:
    """Did this transport error happen before a byte of the request could be sent?"""
    if isinstance(exc, ConnectTimeoutError):
        return True
    if isinstance(exc, SSLError):
        # A certificate refused in the handshake (a wrong CA bundle, a proxy's own
        # certificate): aiohttp's is a connect error; urllib3 wraps the ``ssl`` module's.
        error = exc.kwargs.get("error")
        return connect_failed(error) or _certificate_refused(error)
    if isinstance(exc, EndpointConnectionError):
        # botocore (urllib3) and aiobotocore (aiohttp) both raise it for a refused
        # connection, but aiobotocore also for a reset one: only a failed connect counts.
        return connect_failed(exc.kwargs.get("error"))
    return False


def attempt_unknown(response: Any, caught_exception: BaseException | None) -> bool:
    """May this one attempt (``(http_response, parsed)`` or an exception) have landed?"""
    if caught_exception is not None:
        return not never_sent(caught_exception)
    if response is None:
        return True
    status = getattr(response[0], "status_code", None)
    return not (isinstance(status, int) and 400 <= status < 500)


def _on_attempt(
    request_dict: Any = None,
    response: Any = None,
    caught_exception: BaseException | None = None,
    **_: Any,
) -> None:
    """``needs-retry``: note the outcome of the attempt just made (never asks for a retry)."""
    context = request_dict.get("context") if isinstance(request_dict, dict) else None
    if isinstance(context, dict):
        context.setdefault(_CONTEXT_KEY, []).append(attempt_unknown(response, caught_exception))


def _on_call(parsed: Any = None, context: Any = None, **_: Any) -> None:
    """``after-call``: write the count of earlier unknown attempts into the response."""
    if not isinstance(parsed, dict) or not isinstance(context, dict):
        return
    attempts = context.get(_CONTEXT_KEY)
    if attempts is None:
        return
    # The last attempt is the response itself: its status tells its own outcome.
    parsed.setdefault("ResponseMetadata", {})[UNKNOWN_ATTEMPTS] = sum(attempts[:-1])


#: botocore's errors raised before a send: no credentials (none found, a refresh or an
#: SSO token that failed: signing needs them), a request refused by its own model.  With
#: no attempt recorded before it, nothing was sent; after one (botocore signs each re-send
#: again), an earlier send may have landed.  Any other error after which no attempt was
#: recorded (a response botocore could not parse) followed a send.
_BEFORE_ANY_SEND = (
    NoCredentialsError,
    PartialCredentialsError,
    CredentialRetrievalError,
    TokenRetrievalError,
    UnauthorizedSSOTokenError,
    ParamValidationError,
)


def _on_call_error(exception: Any = None, context: Any = None, **_: Any) -> None:
    """``after-call-error``: mark a transport error after which nothing was ever sent."""
    if not isinstance(context, dict) or not isinstance(exception, BaseException):
        return
    attempts = context.get(_CONTEXT_KEY)
    # Every attempt's connection failed; or none was made, refused before a send.
    sent = any(attempts) if attempts else not isinstance(exception, _BEFORE_ANY_SEND)
    if not sent:
        mark_never_sent(exception)


def mark_never_sent(exc: BaseException) -> None:
    """``exc`` proven to follow no send at all: its request never reached DynamoDB."""
    setattr(exc, _NEVER_SENT, True)


#: Writes whose lost response is re-sent at once (see :func:`_retry_handler`).
_WRITES = frozenset({"UpdateItem", "TransactWriteItems", "BatchExecuteStatement"})
#: Seconds before the n-th re-send of a write whose connection was lost: n times this.
RESEND_DELAY = 0.01


def _retry_handler(total_attempts: int, decides: Any) -> Any:
    """botocore's retry handler ``decides``, asked once, with the wait before the re-send of
    a write whose connection was lost cut to ``n * 10 ms``, and no re-send past the
    deadline of the call that sent the request (``_retry_deadline``).

    A write whose response was lost is proven landed or not by its token in the
    item, which keeps the last ``token_window`` tokens; the longer the re-send
    waits (botocore's standard mode: up to 1 s, then 2 s, ...), the more writes of
    other clients can push the token out and leave the write ambiguous.  Only the
    delay changes: whether to re-send at all stays botocore's (its retry quota, spent in
    an outage, stops re-sends, and is charged once), the attempts stay bounded by the
    client's own ``total_max_attempts``, and a 5xx or a throttle keeps botocore's backoff.
    """

    def then(decided: Any, change: Callable[[float | None], float | None]) -> Any:
        if inspect.isawaitable(decided):  # aiobotocore's handler: awaited by its emitter

            async def later() -> float | None:
                return change(await decided)

            return later()
        return change(decided)

    def handler(**kwargs: Any) -> Any:
        stopped = getattr(handler, "stopped", False)  # stop_retries
        if stopped or deadline_passed():  # before botocore decides: its quota is charged for none
            return None
        decided = decides(**kwargs)
        attempts, caught = kwargs.get("attempts", 0), kwargs.get("caught_exception")
        name = getattr(kwargs.get("operation"), "name", None)
        lost = caught is not None and not never_sent(caught)
        if lost and name in _WRITES and attempts < total_attempts:
            return then(decided, lambda delay: None if delay is None else RESEND_DELAY * attempts)
        return then(decided, capped)

    handler.decides = decides  # type: ignore[attr-defined]  # botocore's, wrapped
    handler.stopped = False  # type: ignore[attr-defined]  # see stop_retries
    return handler


def stop_retries(client: Any) -> None:
    """No re-send on ``client`` from now on: its connection pool is closing (the
    ``connect()`` block that opened it ended), and a request it cut off would be sent again
    on a closed pool until botocore's attempts or the call's deadline ran out."""
    events = getattr(getattr(client, "meta", None), "events", None)
    handler = _botocore_retry(events) if events is not None else None
    if handler is not None and hasattr(handler, "decides"):
        handler.stopped = True


#: The unique id botocore registers its DynamoDB retry handler under.
_BOTOCORE_RETRY = "retry-config-dynamodb"


def _botocore_retry(events: Any) -> Any:
    """The retry handler botocore registered on ``events`` for DynamoDB, if it is found."""
    emitter = getattr(events, "_emitter", events)
    entry = getattr(emitter, "_unique_id_handlers", {}).get(_BOTOCORE_RETRY)
    return entry.get("handler") if isinstance(entry, dict) else None


def watch(client: Any) -> bool:
    """Record attempt outcomes on ``client``'s responses; False if it has no event emitter."""
    events = getattr(getattr(client, "meta", None), "events", None)
    if events is None or not hasattr(events, "register"):
        return False
    retries = getattr(getattr(client.meta, "config", None), "retries", None) or {}
    total = retries.get("total_max_attempts")
    decides = _botocore_retry(events)
    if isinstance(total, int) and decides is not None and not hasattr(decides, "decides"):
        # In its place: every handler of needs-retry runs, so asking it from another
        # handler would charge its retry quota twice.
        events.unregister("needs-retry.dynamodb", unique_id=_BOTOCORE_RETRY)
        events.register(
            "needs-retry.dynamodb", _retry_handler(total, decides), unique_id=_BOTOCORE_RETRY
        )
    # First: botocore's legacy retry handler raises the caught error once the attempts are
    # spent, and the handlers after it never see the last attempt.
    register = events.register_first if hasattr(events, "register_first") else events.register
    register("needs-retry.dynamodb", _on_attempt, unique_id=_HANDLER_ID)
    events.register("after-call.dynamodb", _on_call, unique_id=_HANDLER_ID + "-call")
    events.register("after-call-error.dynamodb", _on_call_error, unique_id=_HANDLER_ID + "-error")
    return True


def earlier_send_may_have_landed(response: dict[str, Any]) -> bool:
    """Before the attempt that gave ``response``, did one end with an unknown outcome?"""
    meta = response.get("ResponseMetadata", {})
    if UNKNOWN_ATTEMPTS in meta:
        return int(meta[UNKNOWN_ATTEMPTS] or 0) > 0
    return int(meta.get("RetryAttempts", 0) or 0) > 0


def may_have_landed(exc: BaseException) -> bool:
    """Could any send of the request that failed with ``exc`` have been applied?

    A ``ClientError`` with a 4xx status whose earlier attempts were all refused or
    never sent is proven not landed, and so is a transport error none of whose
    attempts could connect; anything else (a 5xx, a lost connection or a timeout
    on any attempt) may have landed.
    """
    if isinstance(exc, ParamValidationError):  # raised before the call's events: no send
        return False
    if not isinstance(exc, ClientError):
        return not getattr(exc, _NEVER_SENT, False)
    status = http_status(exc)
    if status is not None and status >= 500:
        return True
    return earlier_send_may_have_landed(exc.response)


def unmark_never_sent(exc: BaseException) -> None:
    """``exc`` no longer proven unsent: an earlier send of its request may have landed."""
    if getattr(exc, _NEVER_SENT, False):
        setattr(exc, _NEVER_SENT, False)


def mark_answer_sent_before(response: dict[str, Any]) -> None:
    """``response`` (an answer, or an error's) marked as following a send that may have landed."""
    meta = response.setdefault("ResponseMetadata", {})
    meta["RetryAttempts"] = max(1, int(meta.get("RetryAttempts", 0) or 0))
    meta[UNKNOWN_ATTEMPTS] = max(1, int(meta.get(UNKNOWN_ATTEMPTS, 0) or 0))


def mark_sent_before(exc: ClientError) -> ClientError:
    """``exc`` marked as the answer to a write an earlier send of which may have landed."""
    mark_answer_sent_before(exc.response)
    return exc
