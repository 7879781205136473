"""The handlers ``infra/fleet.yaml`` names: ``xor_ack_dynamodb.fleet.lambda_entry.<name>``.

Each is made on its first invocation from the function's environment
(``from_environment``): ``XOR_ACK_TABLE``, ``XOR_ACK_QUEUE_URL``, ``XOR_ACK_HANDLER``
(``module:function``, the work function's handler), ``XOR_ACK_CONTINUATION_QUEUE_URL``.

- ``work``: the work queue's function (partial batch responses);
- ``dead_letters``: the dead-letter queue's function (fails each message's chain);
- ``completions``: the table stream's function (continues chains that just acked);
- ``sweep``: the scheduled function (fails chains past their deadline).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from ..errors import XorAckError
from .lambda_sqs import (
    SqsBatchHandler,
    StreamCompletionHandler,
    SweepHandler,
    from_environment,
    partition_key_setting,
)


class HandlerNotFound(XorAckError):
    """``XOR_ACK_HANDLER`` does not name an importable ``module:function``."""


def load_handler(spec: str | None = None) -> Callable[..., Any]:
    """The function ``module:function`` (default: the environment's ``XOR_ACK_HANDLER``)."""
    spec = spec if spec is not None else os.environ.get("XOR_ACK_HANDLER", "")
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise HandlerNotFound(f"XOR_ACK_HANDLER must be module:function, not {spec!r}")
    try:
        found = getattr(importlib.import_module(module_name), attribute, None)
    except ImportError as exc:
        raise HandlerNotFound(f"cannot import {module_name!r} (XOR_ACK_HANDLER): {exc}") from exc
    if not callable(found):
        raise HandlerNotFound(f"{module_name} has no function {attribute!r} (XOR_ACK_HANDLER)")
    return found  # type: ignore[no-any-return]


@cache
def _work() -> SqsBatchHandler:
    return SqsBatchHandler(from_environment(load_handler()))


@cache
def _dead_letters() -> SqsBatchHandler:
    return SqsBatchHandler(from_environment(), dead_letter=True)


@cache
def _completions() -> StreamCompletionHandler:
    return StreamCompletionHandler(from_environment(), partition_key=partition_key_setting())


@cache
def _sweep() -> SweepHandler:
    return SweepHandler(from_environment())


def work(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    return _work()(event, context)


def dead_letters(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    return _dead_letters()(event, context)


def completions(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    return _completions()(event, context)


def sweep(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    return _sweep()(event, context)
