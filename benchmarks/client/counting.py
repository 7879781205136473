"""Requests counted the same way for every implementation: hooks on its botocore client."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RequestCounter:
    """API calls and HTTP sends of one botocore client, counted by its event hooks."""

    calls: Counter[str] = field(default_factory=Counter)
    sends: int = 0

    def install(self, client: Any) -> None:
        client.meta.events.register("before-call.dynamodb", self._on_call)
        client.meta.events.register("before-send.dynamodb", self._on_send)

    def _on_call(self, event_name: str, **_: Any) -> None:
        self.calls[event_name.rsplit(".", 1)[-1]] += 1

    def _on_send(self, **_: Any) -> None:
        self.sends += 1  # returning None lets botocore send the request

    def snapshot(self) -> tuple[Counter[str], int]:
        return Counter(self.calls), self.sends
