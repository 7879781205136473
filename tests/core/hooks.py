"""Test doubles around a real DynamoDB client: hooks before and after each request.

A hook ``before[op](params)`` runs (and may raise, or change the request) before
the request is sent; ``after[op](params, response)`` sees (and may replace, or
raise instead of) the response of a request that landed.  Plus the check that
concurrent callers' reported states are the XOR of their stamps in one order.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeAlias

import aioboto3
import boto3
from botocore.exceptions import ClientError

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, XorAckDynamoDB, xor
from xor_ack_dynamodb.retry import botocore_config

from .facade import SyncFacade


def assert_applied_once(
    root: bytes, stamps: Mapping[Any, bytes], seen: Mapping[Any, bytes]
) -> None:
    """The callers' reported states are the running XOR of their stamps in one order.

    ``stamps[c]`` is what caller ``c`` stamped on the chain and ``seen[c]`` the state
    it was told; there must be an order of the callers in which each stamp applies
    exactly once to the state its predecessor saw, and only the last one is acked.
    """
    state, left = bytes(root), dict(stamps)
    while left:
        nxt = [c for c, s in left.items() if seen[c] == xor(state, s)]
        assert len(nxt) == 1, f"no caller continues from {state.hex()}: {seen!r}"
        state = bytes(seen[nxt[0]])
        del left[nxt[0]]
        assert Stamp(state).acked == (not left), "acked before the last stamp, or not at it"


Before: TypeAlias = Callable[[dict[str, Any]], None]
After: TypeAlias = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


class _Hooked:
    """Wraps a DynamoDB client: ``before[op](params)`` runs (and may raise) before the
    request is sent, ``after[op](params, response)`` sees (and may replace or raise
    instead of) the response.  Everything else passes through."""

    def __init__(self, inner: Any, before: dict[str, Before], after: dict[str, After]) -> None:
        self._inner = inner
        self._before = before
        self._after = after

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        before, after = self._before.get(name), self._after.get(name)
        if before is None and after is None:
            return method
        return self._wrap(method, before, after)

    def _wrap(self, method: Any, before: Before | None, after: After | None) -> Any:
        def call(**params: Any) -> Any:
            if before is not None:
                before(params)
            response = method(**params)
            return after(params, response) if after is not None else response

        return call


class _AsyncHooked(_Hooked):
    def _wrap(self, method: Any, before: Before | None, after: After | None) -> Any:
        async def call(**params: Any) -> Any:
            if before is not None:
                before(params)
            response = await method(**params)
            return after(params, response) if after is not None else response

        return call


@contextlib.asynccontextmanager
async def hooked_client(
    kind: str,
    endpoint: str,
    table: str,
    before: dict[str, Before] | None = None,
    after: dict[str, After] | None = None,
    **options: Any,
) -> AsyncIterator[Any]:
    """A client of ``kind`` whose DynamoDB requests go through the hooks."""
    hooks = before or {}, after or {}
    if kind == "async":
        async with aioboto3.Session().client(
            "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
        ) as client:
            yield XorAckDynamoDB(_AsyncHooked(client, *hooks), table=table, **options)
    else:
        client = boto3.client(
            "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
        )
        try:
            yield SyncFacade(SyncXorAckDynamoDB(_Hooked(client, *hooks), table=table, **options))
        finally:
            client.close()


def client_error(op: str, code: str, **extra: Any) -> ClientError:
    """A DynamoDB error as botocore raises it, for a request sent once."""
    response: Any = {
        "Error": {"Code": code, "Message": f"injected {code}"},
        "ResponseMetadata": {"HTTPStatusCode": 400, "RetryAttempts": 0},
        **extra,
    }
    return ClientError(response, op)


class Trigger:
    """A hook that runs ``effect(params)`` on its next ``times`` calls (``arm`` sets it again).

    Used as ``before`` (the request is not sent if ``effect`` raises) or as ``after``
    (the request landed; raising loses its response)."""

    def __init__(self, effect: Callable[[dict[str, Any]], None], times: int = 1) -> None:
        self.effect = effect
        self.left = times

    def arm(self, times: int = 1) -> None:
        self.left = times

    def __call__(self, params: dict[str, Any], *response: dict[str, Any]) -> Any:
        if self.left > 0:
            self.left -= 1
            self.effect(params)
        return response[0] if response else None


def raising(exc: Exception) -> Callable[[dict[str, Any]], None]:
    def effect(params: dict[str, Any]) -> None:
        raise exc

    return effect
