"""An item a long-running loop could not handle: reported once, counted, and the loop goes on.

Every loop that runs for a process's life -- the fleet worker's receive loop and its
dead-letter drain, the Lambda handlers' records, the stream handler and follower, the
sweeper's ``--watch`` -- handles each item (a message, a record, a chain, a round) on
its own: what one item raises is reported here and the loop takes the next.  A report
is one JSON log line (``{"event": "item-failed", "loop": ..., "error": ..., ...}``) on
the loop's logger, and one count of the counter ``xor_ack.item_failures`` (attributes
``loop`` and ``error``, the error's class name) through the OpenTelemetry API: a no-op
until the application installs an SDK, and without the package at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from .aws import error_code

try:  # an optional dependency: the library works without it
    from opentelemetry import metrics as _otel
except ImportError:  # pragma: no cover - exercised where the package is absent
    _otel = None  # type: ignore[assignment]

COUNTER = "xor_ack.item_failures"
DESCRIPTION = "items a long-running loop could not handle and went on from, by loop and error"


class _NoOp:
    def add(self, amount: float, attributes: dict[str, Any] | None = None) -> None:
        pass


def _counter() -> Any:
    if _otel is None:
        return _NoOp()
    return _otel.get_meter("xor_ack_dynamodb").create_counter(COUNTER, description=DESCRIPTION)


#: The instrument (tests may replace it with a recorder).
counter: Any = _counter()


def code_of(error: BaseException) -> str:
    """The error's ``.code`` (this package's errors), AWS's code (a ``ClientError``), else
    its class name."""
    code = getattr(error, "code", None) or error_code(error)
    return code if isinstance(code, str) and code else type(error).__name__


def item_failed(
    loop: str,
    error: BaseException,
    *,
    logger: str = "xor_ack_dynamodb",
    event: str = "item-failed",
    quiet: bool = False,
    **fields: Any,
) -> None:
    """Report one item ``loop`` could not handle: a log line and a count; never raises.

    ``quiet``: the count only (a command that says it on stderr in its own words).
    """
    code = code_of(error)
    with contextlib.suppress(Exception):  # a broken metrics pipeline must not stop the loop
        counter.add(1, {"loop": loop, "error": code})
    log = logging.getLogger(logger)
    if not quiet and log.isEnabledFor(logging.WARNING):
        line = {"event": event, "loop": loop, "error": code, "detail": str(error), **fields}
        log.warning(json.dumps(line, default=str, separators=(",", ":")))
