"""Counters, histograms and log lines of a fleet.

Metrics go through the OpenTelemetry API when it is installed (the ``otel``
extra): a no-op until the application installs an SDK and a meter provider.
Without the package every call here is a no-op too.  Log lines are one JSON
object each, on the logger ``xor_ack_dynamodb.fleet``, with the event, the tag
and the message id.
"""

from __future__ import annotations

import json
import logging
from typing import Any

logger = logging.getLogger("xor_ack_dynamodb.fleet")

try:  # an optional dependency: the library works without it
    from opentelemetry import metrics as _otel
except ImportError:  # pragma: no cover - exercised where the package is absent
    _otel = None  # type: ignore[assignment]

#: Counter names (all prefixed ``xor_ack.``) and what they count.
COUNTERS = {
    "messages": "messages handled, by outcome (applied, duplicate, closed, failed)",
    "stamps": "stamp writes that landed",
    "writes": "DynamoDB write requests: stamp attempts and marker items",
    "retries": "writes checked and sent again after another write landed first",
    "conditional_failures": "writes refused by their condition (a lost race)",
    "ambiguous_writes": "writes whose outcome could not be proven (AmbiguousWrite)",
    "chains": "chains that ended, by outcome (acked, failed, timed_out)",
    "continuations": "continuations run",
}


class _NoOp:
    def add(self, amount: float, attributes: dict[str, Any] | None = None) -> None:
        pass

    def record(self, amount: float, attributes: dict[str, Any] | None = None) -> None:
        pass


class Telemetry:
    """The fleet's instruments, made once per meter name."""

    def __init__(self, meter_name: str = "xor_ack_dynamodb.fleet") -> None:
        self.counters: dict[str, Any] = {}
        if _otel is None:
            self.counters = {name: _NoOp() for name in COUNTERS}
            self.complete_latency: Any = _NoOp()
            return
        meter = _otel.get_meter(meter_name)
        for name, description in COUNTERS.items():
            self.counters[name] = meter.create_counter(f"xor_ack.{name}", description=description)
        self.complete_latency = meter.create_histogram(
            "xor_ack.complete_latency",
            unit="s",
            description="seconds from a chain's creation to its ack",
        )

    def count(self, name: str, amount: int = 1, **attributes: str) -> None:
        if amount:
            self.counters[name].add(amount, attributes or None)


def log(event: str, tag: str, message_id: str | None = None, **fields: Any) -> None:
    """One structured line: ``{"event": ..., "tag": ..., "message_id": ..., ...}``."""
    if logger.isEnabledFor(logging.INFO):
        record = {"event": event, "tag": tag, "message_id": message_id, **fields}
        logger.info(json.dumps(record, default=str, separators=(",", ":")))
